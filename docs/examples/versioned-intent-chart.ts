// The versioned memory-intent chart on its own: an acknowledgment lost to a run store that was down,
// then settled from the stored entry by reading the receipt back, with no second commit.
import { createActor, fromPromise } from 'xstate';
import {
  versionedIntentMachine,
  type ClaimInput, type ClaimOutput, type CommitInput, type CommitOutput, type ReadReceiptInput, type ReadReceiptOutput, type SaveIntentInput,
  type VersionedIntentCommitReceipt, type VersionedIntentEntry, type VersionedIntentInput,
} from 'cairn/machines';

const record = new Map<string, VersionedIntentEntry>(); // the run record's memoryIntents, by operation id
const receipts = new Map<string, VersionedIntentCommitReceipt>();
let storeDown = false;
let commits = 0;

const chart = versionedIntentMachine.provide({
  actors: {
    claim: fromPromise<ClaimOutput, ClaimInput>(async () => ({ messageIds: ['tea-1:0'], requestDigest: 'sha256:5e1f' })),
    saveIntent: fromPromise<unknown, SaveIntentInput>(async ({ input }) => {
      if (storeDown) throw Object.assign(new Error('The run store is down.'), { code: 'store_unavailable' });
      record.set(input.entry.operationId, input.entry);
    }),
    // Stands in for session.extract: one commit per operation id, replayed after that.
    commit: fromPromise<CommitOutput, CommitInput>(async ({ input }) => {
      const stored = receipts.get(input.operationId);
      if (stored) return { receipt: stored, replayed: true };
      commits += 1;
      const receipt = { requestDigest: input.requestDigest, planned: 1, scopeRevision: 1, committedAt: 1_700_000_000_000 };
      receipts.set(input.operationId, receipt);
      storeDown = true; // the run store goes down right after the memory commit
      return { receipt, replayed: false };
    }),
    readReceipt: fromPromise<ReadReceiptOutput, ReadReceiptInput>(async ({ input }) => receipts.get(input.operationId) ?? null),
  },
});

async function run(input: VersionedIntentInput) {
  const actor = createActor(chart, { input });
  const done = new Promise<void>((resolve) => actor.subscribe({ complete: () => resolve() }));
  actor.start();
  await done;
  return { state: actor.getSnapshot().value, output: actor.getSnapshot().output! };
}

const first = await run({ operationId: 'extract:tea-1', kind: 'extract' });
console.log(first.state, first.output.status, first.output.error?.code);
console.log('the record holds', record.get('extract:tea-1')?.status);

storeDown = false;
const settled = await run({ operationId: 'extract:tea-1', kind: 'extract', stored: record.get('extract:tea-1') });
console.log(settled.state, settled.output.receipt, `commits: ${commits}`);

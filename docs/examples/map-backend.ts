// A complete backend: rows in Maps, written through Cairn's planner, checked by the conformance suites.
import {
  RevisionConflictError, RunIdentityError, runAgent, type AgentRunEnvelope, type AgentRunStore,
} from 'cairn/agent';
import { createMockModel, defineStoreConformance, type ConformanceTestApi } from 'cairn/testing';
import { loadRecord, planSave, readIndex, type StoredState } from 'cairn/stores';

/** The "database": a head row per run, transcript rows and receipt rows. */
interface Tables {
  runs: Map<string, { scope: string; revision: number; head: Uint8Array; transcriptDigest: Uint8Array; receiptsDigest: Uint8Array }>;
  messages: Map<string, Map<number, Uint8Array>>;
  receipts: Map<string, Map<string, { modelStep: number; bytes: Uint8Array }>>;
}

const newTables = (): Tables => ({ runs: new Map(), messages: new Map(), receipts: new Map() });
const { createHash } = process.getBuiltinModule('node:crypto');
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest();

function createMapStore(db: Tables, stats = { bytes: 0 }): AgentRunStore {
  return {
    async load(runId, { scope } = {}) {
      const row = db.runs.get(runId);
      if (!row) return undefined;
      if (scope !== undefined && row.scope !== scope) throw new RunIdentityError('scope_mismatch', runId);
      return loadRecord(runId, {
        head: row.head,
        messages: [...(db.messages.get(runId) ?? [])].sort(([a], [b]) => a - b).map(([index, bytes]) => ({ index, bytes })),
        receipts: [...(db.receipts.get(runId) ?? [])].map(([key, r]) => ({ key, bytes: r.bytes })),
        transcriptDigest: row.transcriptDigest,
        receiptsDigest: row.receiptsDigest,
      });
    },
    async save(envelope: AgentRunEnvelope) {
      const { runId } = envelope;
      const row = db.runs.get(runId);
      if (row && row.scope !== envelope.scope) throw new RunIdentityError('scope_mismatch', runId);
      if (envelope.revision !== (row?.revision ?? 0) + 1) {
        throw new RevisionConflictError(runId, envelope.revision - 1, row?.revision ?? null);
      }
      // What the store holds, from its head and its open receipt rows.
      const index = row ? readIndex(runId, row.head) : null;
      const stored: StoredState | undefined = row && {
        revision: row.revision, index, transcriptDigest: row.transcriptDigest, receiptsDigest: row.receiptsDigest,
        unsettled: new Map([...(db.receipts.get(runId) ?? [])]
          .filter(([, r]) => index && r.modelStep >= index.settledStep).map(([key, r]) => [key, sha256(r.bytes)])),
      };
      const plan = planSave(envelope, stored);
      // Nothing awaits from here on: the whole plan is written in one step, as a transaction would.
      const messages = db.messages.get(runId) ?? new Map<number, Uint8Array>();
      const receipts = db.receipts.get(runId) ?? new Map<string, { modelStep: number; bytes: Uint8Array }>();
      if (plan.trimMessagesFrom !== null) for (const i of messages.keys()) if (i >= plan.trimMessagesFrom) messages.delete(i);
      for (const m of plan.messages) messages.set(m.index, m.bytes);
      if (plan.replaceReceipts) receipts.clear();
      for (const key of plan.deleteReceipts) receipts.delete(key);
      for (const r of plan.receipts) receipts.set(r.key, { modelStep: r.modelStep, bytes: r.bytes });
      db.messages.set(runId, messages);
      db.receipts.set(runId, receipts);
      db.runs.set(runId, {
        scope: envelope.scope, revision: envelope.revision, head: plan.head,
        transcriptDigest: Buffer.from(plan.next.transcriptDigest), receiptsDigest: Buffer.from(plan.next.receiptsDigest),
      });
      stats.bytes = plan.bytes;
    },
  };
}

// A tool loop on the store: what each save wrote stays flat while the transcript grows.
const db = newTables();
const stats = { bytes: 0 };
const written: number[] = [];
const inner = createMapStore(db, stats);
const store: AgentRunStore = { load: inner.load, save: async (e, o) => { await inner.save(e, o); written.push(stats.bytes); } };
let turn = 0;
const result = await runAgent({
  model: createMockModel({ strict: false, responses: [() => (++turn <= 40 ? { toolCalls: [{ toolName: 'count', args: { turn } }] } : { text: 'Done.' })] }),
  prompt: 'Count to forty.',
  maxSteps: 50,
  tools: { count: { parameters: { type: 'object', properties: {} }, execute: () => ({ ok: true }) } },
  session: { store, runId: 'loop', scope: 'tenant-a' },
});
const loaded = await store.load('loop', { scope: 'tenant-a' });
console.log(`${result.status}; ${(loaded?.snapshot as { context: { messages: unknown[] } }).context.messages.length} messages stored`);
console.log(`bytes of save 10 vs save ${written.length - 1}: ${written[10]! < 2 * written[written.length - 2]! && written[written.length - 2]! < 2 * written[10]! ? 'within 2x' : 'grew'}`);

// The conformance suites, under a ten-line runner (pass vitest's describe and it instead).
const cases: { name: string; run: () => Promise<void> }[] = [];
const path: string[] = [];
const api: ConformanceTestApi = {
  describe(name, body) {
    path.push(name);
    body();
    path.pop();
  },
  it(name, run) {
    cases.push({ name: [...path, name].join(' > '), run });
  },
};
defineStoreConformance({
  name: 'maps',
  // No list or prune in this backend: those cases are left out.
  features: { list: false, prune: false },
  async create() {
    const tables = newTables();
    return { open: () => ({ agentRuns: createMapStore(tables) }) };
  },
}, api);
let passed = 0;
for (const { name, run } of cases) {
  try {
    await run();
    passed += 1;
  } catch (error) {
    console.log(`failed: ${name}: ${(error as Error).message}`);
  }
}
console.log(`${passed} of ${cases.length} cases passed`);

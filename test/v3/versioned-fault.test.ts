/**
 * Versioned memory in a V3 run under chosen faults (the world of
 * test/v3/versioned-fault-drive.ts): a lost acknowledgment of a tool write
 * and of the extraction, in a live process and in one that died, each ending
 * with the change applied once and its intent acknowledged, in memory and on
 * PostgreSQL (where the crash property's check also runs at every fault of
 * one run); and that check failing on a memory store that applies a
 * replayed operation again (so the property can fail).
 */
import { describe, expect, it } from 'vitest';
import { createPostgresAgentRunStoreV3 } from 'cairn/ops/postgres';
import type { VersionedMemoryCommitInput, VersionedMemoryStore } from 'cairn/memory/versioned';
import { createPostgresVersionedMemoryStore } from 'cairn/memory/versioned/postgres';
import { describePostgres, type PostgresTestEnv } from '../stores/pg-env.js';
import { checkDrive } from './versioned-fault-check.js';
import { drive, everyFault, inMemoryBackend, RUN_ID, type Fault, type OpenBackend, type Report, type Scenario } from './versioned-fault-drive.js';

const remember: Scenario = { seeded: 0, turns: [[{ kind: 'remember' }]], extract: false };
const extractOnly: Scenario = { seeded: 0, turns: [[{ kind: 'lookup' }]], extract: true };
const TOOL_OP = `${RUN_ID}:memory:0:t0c0`;
const EXTRACT_OP = `${RUN_ID}:memory:extract`;

const intent = (r: Report, op: string) => r.record?.memoryIntents?.find((i) => i.operationId === op);
const revisionsOf = (r: Report, op: string) => r.revisions.filter((v) => v.operationId === op).map((v) => `@${v.revision} ${v.text}`);

/** A schema of its own for each drive; a fresh process opens new pools on it. */
function postgresSchemas(env: PostgresTestEnv): OpenBackend {
  return async () => {
    const schema = env.newSchema();
    const pools: { close(): Promise<void> }[] = [];
    const open = () => {
      const runs = createPostgresAgentRunStoreV3({ connectionString: env.url }, { schema });
      const memory = createPostgresVersionedMemoryStore({ connectionString: env.url }, { schema });
      pools.push(runs, memory);
      return { runs, memory, setup: async () => { await runs.setup(); await memory.setup(); } };
    };
    const first = open();
    await first.setup();
    let handed = false;
    return {
      name: 'postgres',
      open: () => {
        if (!handed) {
          handed = true;
          return first;
        }
        return open();
      },
      // A dead process's pools are closed here too: its calls never settled, none is in flight.
      close: async () => {
        for (const p of pools) await p.close().catch(() => undefined);
      },
    };
  };
}

function lostAcknowledgments(open: OpenBackend): void {
  async function faulted(scenario: Scenario, fault: Fault): Promise<Report> {
    const ref = await drive(scenario, { kind: 'none' }, open);
    const run = await drive(scenario, fault, open);
    checkDrive(scenario, fault, ref, run);
    return run;
  }

  it('a tool write whose commit landed as the process died: the resume reads its receipt back and applies nothing again', async () => {
    const run = await faulted(remember, { kind: 'kill', on: 'commit', at: 1, landed: true });
    expect(run.restarts).toBe(1);
    expect(run.afterFirstLeg?.memoryIntents?.map((i) => i.status)).toEqual(['intended']);
    expect(revisionsOf(run, TOOL_OP)).toEqual(['@1 fact 0.0']);
    expect(intent(run, TOOL_OP)).toMatchObject({ status: 'acknowledged', planned: 1, receipt: { scopeRevision: 1 } });
    expect(run.record?.status).toBe('completed');
  });

  it('a tool write whose commit landed and then threw in a live process is not left failed: its receipt is read back', async () => {
    const run = await faulted(remember, { kind: 'commit', at: 1, landed: true });
    expect(revisionsOf(run, TOOL_OP)).toEqual(['@1 fact 0.0']);
    expect(intent(run, TOOL_OP)).toMatchObject({ status: 'acknowledged', receipt: { scopeRevision: 1 } });
  });

  it('a tool write whose commit threw before it applied fails with the reason, and nothing is in the memory', async () => {
    const run = await faulted(remember, { kind: 'commit', at: 1, landed: false });
    expect(run.revisions).toEqual([]);
    expect(intent(run, TOOL_OP)).toMatchObject({ status: 'failed', error: { message: expect.stringContaining('injected: memory commit 1 failed') } });
    expect(run.record?.status).toBe('completed');
  });

  it("the extraction's commit landed as the process died: reconcileAgentRun settles it from the receipt, the run stays completed", async () => {
    const run = await faulted(extractOnly, { kind: 'kill', on: 'commit', at: 1, landed: true });
    expect(run.afterFirstLeg?.status).toBe('completed');
    expect(intent({ ...run, record: run.afterFirstLeg }, EXTRACT_OP)?.status).toBe('planned');
    expect(run.reconciliations).toContainEqual(expect.objectContaining({ runId: RUN_ID, memoryIntents: [EXTRACT_OP] }));
    expect(revisionsOf(run, EXTRACT_OP)).toEqual(['@1 Ada likes tea.']);
    expect(intent(run, EXTRACT_OP)).toMatchObject({ status: 'acknowledged', planned: 1, receipt: { scopeRevision: 1 } });
  });

  it("the extraction's commit threw after it landed (a live process): the intent keeps why, the run its status, and the reconciliation acknowledges it once", async () => {
    const run = await faulted(extractOnly, { kind: 'commit', at: 1, landed: true });
    expect(run.afterFirstLeg?.status).toBe('completed');
    expect(intent({ ...run, record: run.afterFirstLeg }, EXTRACT_OP)?.error).toMatchObject({ message: expect.stringContaining('injected: memory commit 1 failed') });
    expect(revisionsOf(run, EXTRACT_OP)).toEqual(['@1 Ada likes tea.']);
    expect(intent(run, EXTRACT_OP)).toMatchObject({ status: 'acknowledged', receipt: { scopeRevision: 1 } });
    expect(intent(run, EXTRACT_OP)?.error ?? null).toBeNull();
  });

  it("the extraction's commit threw before it applied: the reconciliation commits it, once", async () => {
    const run = await faulted(extractOnly, { kind: 'commit', at: 1, landed: false });
    expect(run.afterFirstLeg?.status).toBe('completed');
    expect(revisionsOf(run, EXTRACT_OP)).toEqual(['@1 Ada likes tea.']);
    expect(intent(run, EXTRACT_OP)?.status).toBe('acknowledged');
  });
}

describe('versioned memory in a V3 run: lost acknowledgments (in memory)', () => lostAcknowledgments(inMemoryBackend));

describePostgres('versioned memory in a V3 run: lost acknowledgments (PostgreSQL)', (env) => {
  lostAcknowledgments(postgresSchemas(env));

  // The crash property's check at every fault of one small run (a tool write, then the extraction), on PostgreSQL.
  it('every fault of a run with a tool write and the extraction: each change once, every intent settled', async () => {
    const open = postgresSchemas(env);
    const scenario: Scenario = { seeded: 1, turns: [[{ kind: 'remember' }, { kind: 'retract', target: 0 }]], extract: true };
    const ref = await drive(scenario, { kind: 'none' }, open);
    const faults = everyFault(ref.saves, ref.commits);
    for (const fault of faults) checkDrive(scenario, fault, ref, await drive(scenario, fault, open));
    console.log(`PostgreSQL: ${faults.length} faulted drives of ${ref.saves} saves and ${ref.commits} commits checked`);
    expect(faults.length).toBeGreaterThan(20);
  }, 180_000);
});

/** A memory store that forgets its receipts when asked to commit: an operation committed again is applied again, under a new id. */
function applyingReplaysAgain(store: VersionedMemoryStore): VersionedMemoryStore {
  let again = 0;
  return new Proxy(store, {
    get(target, key, receiver) {
      if (key === 'commit') {
        return async (input: VersionedMemoryCommitInput) => {
          if ((await target.receipt({ scope: input.scope, operationId: input.operationId })) === undefined) return target.commit(input);
          const applied = await target.commit({ ...input, operationId: `${input.operationId}~${again++}` });
          return { receipt: { ...applied.receipt, operationId: input.operationId }, replayed: false };
        };
      }
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** A memory store whose receipts cannot be read back (a lost acknowledgment is never recovered); commits still find their own. */
function receiptsUnreadable(store: VersionedMemoryStore): VersionedMemoryStore {
  return new Proxy(store, {
    get(target, key, receiver) {
      if (key === 'receipt') return async () => undefined;
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Every faulted drive of the scenario with the planted store; answers the first line of each check that failed. */
async function plantedFailures(wrapMemory: (store: VersionedMemoryStore) => VersionedMemoryStore): Promise<string[]> {
  const scenario: Scenario = { seeded: 1, turns: [[{ kind: 'remember' }], [{ kind: 'revise', target: 0 }]], extract: true };
  const ref = await drive(scenario, { kind: 'none' });
  const caught: string[] = [];
  const faults = everyFault(ref.saves, ref.commits);
  for (const fault of faults) {
    const run = await drive(scenario, fault, undefined, { wrapMemory });
    try {
      checkDrive(scenario, fault, ref, run);
    } catch (error) {
      caught.push(String(error).split(';')[0]!);
    }
  }
  console.log(`planted bug: ${caught.length} of ${faults.length} faulted drives caught, e.g. ${caught[0]}`);
  return caught;
}

describe('the crash property can fail', () => {
  it('its check finds a memory change applied twice when the store applies a replayed operation again', async () => {
    const caught = await plantedFailures(applyingReplaysAgain);
    expect(caught.some((c) => c.includes('(1)'))).toBe(true);
  }, 60_000);

  it('its check finds an intent left unsettled or failed while its commit landed when receipts cannot be read back', async () => {
    const caught = await plantedFailures(receiptsUnreadable);
    expect(caught.some((c) => c.includes('(2)'))).toBe(true);
  }, 60_000);
});

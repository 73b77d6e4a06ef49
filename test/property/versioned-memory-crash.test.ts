/**
 * The crash property of versioned memory in V3 runs (issue 36): random runs
 * whose model writes memory with the session's tools (memory_remember,
 * memory_revise, memory_retract, beside an ordinary idempotent tool), some
 * extracting their turns (`extract: true`), each driven once without a fault
 * and then once for EVERY fault of test/v3/versioned-fault-drive.ts the
 * fault-free drive could meet: each save of the run store throwing before or
 * after it landed, each commit of the memory store throwing before it
 * applied or after (a lost acknowledgment), and the process killed at each
 * save (before or after it landed) and right after each memory commit
 * landed. A careful operator then resumes, starts a fresh process, and calls
 * reconcileAgentRun({ checkpointVersion: 3, versionedMemory: { session } })
 * until the run has settled.
 *
 * Invariants, after every drive:
 *  1. Every memory change applied exactly once: each operation with a
 *     receipt wrote exactly the revisions its receipt names, each revision
 *     the store holds belongs to a receipt, the scope's revision counts the
 *     receipts, and no two revisions hold one operation's text twice.
 *  2. Every intent settled: acknowledged (with a receipt of its operation)
 *     or failed with a reason; a failed intent has no receipt (nothing it
 *     claims undone was applied). Every memory write the model made has an
 *     intent, and so has the extraction of a completed run with `extract`.
 *     In every save that landed, a tool write's intent is where its receipt
 *     is (intended with executing, committed with executed, acknowledged with
 *     completed, failed with failed unless its commit had landed).
 *  3. The run's own outcome is the fault-free one (status and answer), and
 *     every call of the ordinary (idempotent) tool ran. When every intent is acknowledged,
 *     the memory holds the same texts as without the fault.
 *
 * In memory (the first scenario always holds every kind of write and the
 * extraction, so every kind of fault is met), then on SQLite files (run store
 * and memory store in one file; a fresh process opens the file again).
 * Re-run a failure with FC_SEED=<seed> (and FC_PATH=<path>); more scenarios
 * with CAIRN_PROPERTY_RUNS (a sixth of them on SQLite).
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createSqliteVersionedMemoryStore } from 'cairn/memory/versioned/sqlite';
import { printedSeed, replayParams } from '../support/fc-seed.js';
import { describeScenario, drive, everyFault, inMemoryBackend, scenarioArb, type OpenBackend, type Scenario } from '../v3/versioned-fault-drive.js';
import { checkDrive, writesOf } from '../v3/versioned-fault-check.js';

const NUM_RUNS = Math.max(12, Number(process.env.CAIRN_PROPERTY_RUNS ?? 0) || 0);
const TIMEOUT = Math.max(180_000, NUM_RUNS * 20_000);

interface Tally {
  scenarios: number;
  drives: number;
  byKind: Record<string, number>;
  restarts: number;
  reconciled: number;
  failedIntents: number;
  ackedIntents: number;
}

function property(tally: Tally, open: OpenBackend) {
  return fc.asyncProperty(scenarioArb, async (scenario) => {
    const ref = await drive(scenario, { kind: 'none' }, open);
    const where = `fault-free drive of ${describeScenario(scenario)}: ${ref.trace.join(' | ')}`;
    expect(ref.result?.status, where).toBe('completed');
    const intents = ref.record?.memoryIntents ?? [];
    expect(intents.map((i) => i.status), where).toEqual(intents.map(() => 'acknowledged'));
    expect(intents.length, where).toBe(writesOf(scenario) + (scenario.extract ? 1 : 0));
    expect([...ref.pairs].sort(), where).toEqual(writesOf(scenario) > 0 ? ['completed>acknowledged', 'executing>intended'] : []);
    tally.scenarios++;
    for (const fault of everyFault(ref.saves, ref.commits)) {
      const run = await drive(scenario, fault, open);
      tally.drives++;
      const kind = fault.kind === 'kill' ? `kill-${fault.on}` : fault.kind;
      tally.byKind[kind] = (tally.byKind[kind] ?? 0) + 1;
      tally.restarts += run.restarts;
      tally.reconciled += run.reconciliations.filter((r) => ((r as { memoryIntents?: unknown[] }).memoryIntents ?? []).length > 0).length;
      for (const i of run.record?.memoryIntents ?? []) {
        if (i.status === 'failed') tally.failedIntents++;
        else tally.ackedIntents++;
      }
      checkDrive(scenario, fault, ref, run);
    }
  });
}

const EVERY_KIND: Scenario = {
  seeded: 2, turns: [[{ kind: 'remember' }, { kind: 'lookup' }], [{ kind: 'revise', target: 0 }, { kind: 'retract', target: 1 }]], extract: true,
};

const newTally = (): Tally => ({ scenarios: 0, drives: 0, byKind: {}, restarts: 0, reconciled: 0, failedIntents: 0, ackedIntents: 0 });

async function runProperty(name: string, numRuns: number, open: OpenBackend, withExample: boolean): Promise<Tally> {
  const tally = newTally();
  const started = performance.now();
  // One scenario with every kind of write and the extraction goes first (not when FC_PATH replays a path).
  const examples: [Scenario][] = withExample && process.env.FC_PATH === undefined ? [[EVERY_KIND]] : [];
  // Printed before it runs, so a run that times out can be replayed too.
  const seed = printedSeed(`versioned memory crash property (${name})`);
  const outcome = await fc.check(property(tally, open), { ...replayParams<[Scenario]>(numRuns), seed, examples });
  console.log(`versioned memory crash property (${name}): seed ${outcome.seed}; ${tally.scenarios} scenarios, ${tally.drives} faulted drives in ` +
    `${Math.round(performance.now() - started)} ms; faults ${JSON.stringify(tally.byKind)}; fresh processes ${tally.restarts}, ` +
    `reconciliations that settled something ${tally.reconciled}; intents acknowledged ${tally.ackedIntents}, failed ${tally.failedIntents}`);
  if (outcome.failed) throw new Error(`${fc.defaultReportMessage(outcome) ?? 'the property failed'}\n${String(outcome.errorInstance)}`);
  return tally;
}

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/** A fresh SQLite file for every drive; a fresh process opens the file again. */
function sqliteFiles(): OpenBackend {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-vm-crash-'));
  scratch.push(dir);
  let n = 0;
  return () => {
    const path = join(dir, `vm-${n++}.sqlite`);
    const opened: { close(): void }[] = [];
    return {
      name: 'sqlite',
      open: () => {
        const ops = createSqliteOpsStore({ path });
        opened.push(ops);
        return { runs: createSqliteAgentRunStoreV3(ops), memory: createSqliteVersionedMemoryStore(ops) };
      },
      close: () => {
        for (const o of opened.reverse()) o.close();
      },
    };
  };
}

describe('the crash property of versioned memory in V3 runs', () => {
  it(`every memory change applied once, every intent acknowledged or failed with a reason, the run's outcome unchanged (${NUM_RUNS} scenarios, in memory)`, async () => {
    const tally = await runProperty('in memory', NUM_RUNS, inMemoryBackend, true);
    if (process.env.FC_PATH === undefined) {
      // Non-vacuity: every kind of fault was met, fresh processes took over, and a reconciliation had work to do.
      for (const kind of ['save', 'commit', 'kill-save', 'kill-commit']) expect(tally.byKind[kind] ?? 0, kind).toBeGreaterThan(0);
      expect(tally.restarts).toBeGreaterThan(0);
      expect(tally.reconciled).toBeGreaterThan(0);
    }
  }, TIMEOUT);

  // A SQLite drive opens its file once a process (about 0.3 s a drive on a loaded machine): fewer scenarios by default.
  it('the same on SQLite files (run store and memory store in one file)', async () => {
    await runProperty('SQLite', Math.max(1, Math.floor(NUM_RUNS / 6)), sqliteFiles(), false);
  }, TIMEOUT);
});

/**
 * One USD ceiling shared by 16 runs on 4 worker processes, against one SQLite
 * file and one PostgreSQL database: random model usage and prices, random
 * crashes (a worker SIGKILLed in the middle of a model call or before a save,
 * its runs resumed by other workers). Checked: what the ledger holds never
 * passes the ceiling (sampled while the runs go, and at the end), spent +
 * reserved + unknown of every run's accounting add up to the ledger's, none is
 * left reserved, and every answered call is committed once (no call counted
 * twice), every call a crash cut off held as unknown.
 *
 * Usage never exceeds the estimate here, so the ledger's total is the
 * admitted estimates' bound at every moment (a larger actual usage is
 * admitted against its estimate and may pass the ceiling, as docs/policy.md
 * says). The seed is printed; CAIRN_BUDGET_SEED replays one.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { totalsOf, type BudgetLedger, type LedgerEntry } from 'cairn/policy';
import { describePostgres } from '../stores/pg-env.js';
import type { BudgetRun, BudgetRunLine, BudgetWorkerArgs } from './budget-worker.js';

const WORKERS = 4;
const RUNS = 16;
const TTL_MS = 1_000;
const ESTIMATE = { inputTokens: 600, outputTokens: 400 };

/** mulberry32: small, seeded, good enough to draw a scenario. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)) };
}

function spawnWorker(args: BudgetWorkerArgs): Promise<{ signal: NodeJS.Signals | null; lines: BudgetRunLine[]; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', 'test/processes/budget-worker.ts', JSON.stringify(args)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (_code, signal) => {
      const lines = out.trim().split('\n').filter(Boolean).flatMap((l) => {
        try {
          return [JSON.parse(l) as BudgetRunLine];
        } catch {
          return [];
        }
      });
      resolve({ signal, lines, stderr: err });
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round6 = (n: number) => Math.round(n * 1e6) / 1e6;

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface World {
  worker: Pick<BudgetWorkerArgs, 'backend' | 'path' | 'url' | 'schema'>;
  /** The ledger, read by the test from a store of its own. */
  ledger(): Promise<{ ledger: BudgetLedger; close(): Promise<void> | void }>;
}

async function scenario(world: World, seed: number) {
  const r = rng(seed);
  const dir = mkdtempSync(join(tmpdir(), 'cairn-budget-'));
  dirs.push(dir);
  const calls = join(dir, 'calls');
  const prices = Object.fromEntries(Array.from({ length: 3 }, (_, i) => [
    `mock:m${i}`, { input: r.int(50, 500) / 100, output: r.int(200, 2000) / 100 },
  ]));
  const runs: BudgetRun[] = Array.from({ length: RUNS }, (_, i) => ({
    runId: `run-${i}`,
    model: `mock:m${r.int(0, 2)}`,
    turns: Array.from({ length: r.int(1, 4) }, () => ({ inputTokens: r.int(100, ESTIMATE.inputTokens), outputTokens: r.int(20, ESTIMATE.outputTokens) })),
  }));
  const usd = (model: string, t: { inputTokens: number; outputTokens: number }) =>
    (t.inputTokens * prices[model]!.input + t.outputTokens * prices[model]!.output) / 1e6;
  // What the runs' turns really cost (each at most its admission estimate): all of it cannot fit under the ceiling.
  const demand = runs.reduce((n, run) => n + run.turns.reduce((m, t) => m + usd(run.model, t), 0), 0);
  // Room for a little over half of what the runs spend: some must be refused. (Half of what they would reserve was
  // not enough: turns that cost less than their estimate settle lower, and for some seeds every run then fitted.)
  const ceilingUsd = round6(demand * 0.55);

  const { ledger, close } = await world.ledger();
  let highest = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const t = totalsOf(await ledger.entries());
      highest = Math.max(highest, t.committed.usd + t.reserved.usd + t.unknown.usd);
      await sleep(15);
    }
  })();

  const resting = new Map<string, BudgetRunLine>();
  const killedRuns = new Map<string, number>();
  let pending = [...runs].sort(() => r.next() - 0.5);
  for (let round = 0; pending.length > 0 && round < 6; round++) {
    const groups = Array.from({ length: WORKERS }, (_, w) => pending.filter((_, i) => i % WORKERS === w)).filter((g) => g.length > 0);
    // Two crashes in the first round, one in the second, none later (so the runs come to rest).
    const crashes = round === 0 ? 2 : round === 1 ? 1 : 0;
    const outcomes = await Promise.all(groups.map((group, w) => {
      let kill: BudgetWorkerArgs['kill'];
      if (w < crashes) {
        const victim = group[r.int(0, group.length - 1)]!;
        kill = r.next() < 0.6
          ? { runId: victim.runId, at: 'model-call', step: r.int(0, victim.turns.length - 1) }
          : { runId: victim.runId, at: 'save', nth: r.int(1, 2 * victim.turns.length + 1) };
      }
      return spawnWorker({
        ...world.worker, owner: `w${w}-r${round}`, runs: group, ceilingUsd, prices, estimate: ESTIMATE, ttlMs: TTL_MS, calls, ...(kill ? { kill } : {}),
      }).then((outcome) => ({ ...outcome, group }));
    }));
    let crashed = false;
    for (const { signal, lines, stderr, group } of outcomes) {
      if (signal === 'SIGKILL') {
        crashed = true;
        for (const run of group) if (!lines.some((l) => l.runId === run.runId)) killedRuns.set(run.runId, (killedRuns.get(run.runId) ?? 0) + 1);
      } else if (lines.length < group.length) {
        throw new Error(`worker ended with ${lines.length} of ${group.length} runs (seed ${seed}); stderr:\n${stderr}`);
      }
      for (const line of lines) {
        expect(line.status, `${line.runId}: ${JSON.stringify(line)} (seed ${seed})`).not.toBe('crashed');
        // A lease the crashed worker still held is not a rest: that run goes round again. Nor is a lease this worker
        // lost (a 1 s lease whose renewal came late on a loaded machine): the refused save left the run as it was.
        if (line.status === 'failed' && (line.error?.code === 'lease_held' || line.error?.code === 'lease_lost')) continue;
        resting.set(line.runId, line);
      }
    }
    pending = runs.filter((run) => !resting.has(run.runId));
    if (crashed) await sleep(TTL_MS + 200); // the dead workers' leases lapse
  }
  sampling = false;
  await sampler;

  const entries = await ledger.entries();
  await close();
  const lines = existsSync(calls) ? readFileSync(calls, 'utf8').trim().split('\n').filter(Boolean).map((l) => l.split(' ')) : [];
  const context = `seed ${seed}, ceiling $${ceilingUsd}, killed ${JSON.stringify([...killedRuns])}`;

  // Every run came to rest: done, or refused by the shared ceiling.
  expect(pending.map((run) => run.runId), context).toEqual([]);
  for (const line of resting.values()) {
    expect(line.status === 'completed' || (line.status === 'stopped' && line.reason === 'budget-exceeded'), `${JSON.stringify(line)} (${context})`).toBe(true);
  }
  expect([...resting.values()].some((l) => l.reason === 'budget-exceeded'), context).toBe(true);

  // The ceiling held while the runs went and holds at the end.
  const totals = totalsOf(entries);
  expect(highest, context).toBeLessThanOrEqual(ceilingUsd + 1e-9);
  expect(totals.committed.usd + totals.reserved.usd + totals.unknown.usd, context).toBeLessThanOrEqual(ceilingUsd + 1e-9);
  // Nothing is left in flight, and what each run reports adds up to the ledger.
  expect(entries.filter((e) => e.status === 'reserved'), context).toEqual([]);
  const sum = { committed: 0, reserved: 0, unknown: 0 };
  for (const run of runs) {
    const line = resting.get(run.runId)!;
    const own = totalsOf(entries, `root/${run.runId}`);
    expect(line.accounting, `${run.runId} (${context})`).toMatchObject({
      committed: { tokens: own.committed.tokens }, reserved: { usd: 0, tokens: 0 }, unknown: { tokens: own.unknown.tokens },
    });
    expect(line.accounting!.committed.usd).toBeCloseTo(own.committed.usd, 9);
    expect(line.accounting!.unknown.usd).toBeCloseTo(own.unknown.usd, 9);
    sum.committed += line.accounting!.committed.usd;
    sum.reserved += line.accounting!.reserved.usd;
    sum.unknown += line.accounting!.unknown.usd;
  }
  expect(sum.committed).toBeCloseTo(totals.committed.usd, 9);
  expect(sum.reserved).toBe(0);
  expect(sum.unknown).toBeCloseTo(totals.unknown.usd, 9);

  // No call is counted twice: each committed entry is an answered call, at what it used, and no run holds more
  // entries than the calls its models saw plus one reservation per leg a crash cut off (made ahead, never sent).
  // Every call the provider saw is counted: committed, or held as unknown when its leg died before it settled.
  for (const run of runs) {
    const mine = (e: LedgerEntry) => e.runId === run.runId;
    const answered = lines.filter((l) => l[0] === 'answer' && l[1] === run.runId).map((l) => `${l[2]}:${l[3]}`);
    const started = lines.filter((l) => l[0] === 'start' && l[1] === run.runId).length;
    const committed = entries.filter((e) => mine(e) && e.status === 'committed').map((e) => `${e.id.split(':')[1]}:${e.tokens}`);
    const unknown = entries.filter((e) => mine(e) && e.status === 'unknown').length;
    const what = `${run.runId}: answered ${answered}, committed ${committed}, ${unknown} unknown of ${started} started (${context})`;
    const left = [...answered];
    for (const c of committed) {
      const at = left.indexOf(c);
      expect(at, what).toBeGreaterThanOrEqual(0);
      left.splice(at, 1);
    }
    expect(committed.length + unknown, what).toBeGreaterThanOrEqual(started);
    expect(committed.length + unknown, what).toBeLessThanOrEqual(started + (killedRuns.get(run.runId) ?? 0));
    // Only a crash leaves a hold: a run no worker died under holds nothing as unknown.
    expect(unknown, what).toBeLessThanOrEqual(killedRuns.get(run.runId) ?? 0);
  }
  return { seed, ceilingUsd, highest, totals, resting: [...resting.values()].map((l) => l.reason ?? l.status) };
}

const seedOf = () => Number(process.env.CAIRN_BUDGET_SEED ?? Math.floor(Math.random() * 2 ** 31));

describe('a USD ceiling shared by 16 runs on 4 processes over one SQLite file', () => {
  it('is never passed, adds up, and counts no call twice, through random crashes', async () => {
    const seed = seedOf();
    console.log(`[shared budget, sqlite] seed ${seed} (CAIRN_BUDGET_SEED=${seed} replays it)`);
    const dir = mkdtempSync(join(tmpdir(), 'cairn-budget-sqlite-'));
    dirs.push(dir);
    const path = join(dir, 'ops.sqlite');
    const summary = await scenario({
      worker: { backend: 'sqlite', path },
      async ledger() {
        const ops = createSqliteOpsStore({ path });
        return { ledger: ops.budgets.ledger('shared'), close: () => ops.close() };
      },
    }, seed);
    console.log(`[shared budget, sqlite] ${JSON.stringify(summary)}`);
  }, 90_000);
});

describePostgres('a USD ceiling shared by 16 runs on 4 processes over one PostgreSQL database', (env) => {
  it('is never passed, adds up, and counts no call twice, through random crashes', async () => {
    const seed = seedOf();
    console.log(`[shared budget, postgres] seed ${seed} (CAIRN_BUDGET_SEED=${seed} replays it)`);
    const schema = env.newSchema();
    const summary = await scenario({
      worker: { backend: 'postgres', url: env.url, schema },
      async ledger() {
        const ops = createPostgresOpsStore({ connectionString: env.url }, { schema });
        await ops.setup();
        return { ledger: ops.budgets.ledger('shared'), close: () => ops.close() };
      },
    }, seed);
    console.log(`[shared budget, postgres] ${JSON.stringify(summary)}`);
  }, 90_000);
});

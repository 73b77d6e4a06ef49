/**
 * Real processes against one database: several executors, a SIGKILL at the
 * effect boundary, a paused executor whose lease lapsed. SQLite (one file)
 * here; PostgreSQL through the same worker when it is reachable.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describePostgres } from '../stores/pg-env.js';
import type { WorkerArgs } from './worker.js';

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  result?: { status: string; reason?: string; error?: { name: string; code: string }; pendingApprovals?: { approvalId: string; token: string }[]; unknownEffects?: { toolCallId: string }[] };
}

function spawnWorker(args: WorkerArgs, onSpawn?: (pid: number) => void): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', 'test/processes/worker.ts', JSON.stringify(args)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    onSpawn?.(child.pid!);
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code, signal) => {
      // The result line; the worker's event lines ({"event":...}) may come before or after it.
      const line = out.trim().split('\n').filter((l) => l && !l.startsWith('{"event"')).at(-1);
      let result: Outcome['result'];
      try {
        result = line ? JSON.parse(line) : undefined;
      } catch {
        result = undefined;
      }
      if (!result && !signal) console.error(`worker ${args.owner} printed nothing; stderr:\n${err}`);
      resolve({ code, signal, result });
    });
  });
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function sqliteWorld(name: string) {
  const dir = mkdtempSync(join(tmpdir(), `cairn-proc-${name}-`));
  dirs.push(dir);
  const base = { backend: 'sqlite' as const, path: join(dir, 'runs.sqlite'), runId: `run-${name}`, ttlMs: 10_000, ledger: join(dir, 'ledger'), revisions: join(dir, 'revisions') };
  return { dir, base };
}

/** Starts the run in its own process: it suspends on the approval of `charge`. */
async function suspendedRun(base: Omit<WorkerArgs, 'mode' | 'owner'>) {
  const first = await spawnWorker({ ...base, mode: 'run', owner: 'starter' });
  expect(first.result?.status).toBe('suspended');
  return first.result!.pendingApprovals!.map(({ approvalId, token }) => ({ approvalId, token }));
}

function expectRevisionChain(file: string) {
  const revisions = lines(file).map((l) => Number(l.split(' ')[0]));
  const sorted = [...revisions].sort((a, b) => a - b);
  // No fork (a revision written twice) and no gap.
  expect(new Set(revisions).size).toBe(revisions.length);
  expect(sorted).toEqual(sorted.map((_, i) => i + 1));
}

function scenarios(world: (name: string) => { base: Omit<WorkerArgs, 'mode' | 'owner'> }) {
  for (const n of [2, 4, 8]) {
    it(`${n} executors resume the same suspended run at once: one proceeds, the others are refused, the tool runs once`, async () => {
      const { base } = world(`n${n}`);
      const approve = await suspendedRun(base);
      const outcomes = await Promise.all(Array.from({ length: n }, (_, i) =>
        spawnWorker({ ...base, mode: 'resume', owner: `worker-${i}`, approve, toolDelayMs: 3_000 + n * 700 })));
      const completed = outcomes.filter((o) => o.result?.status === 'completed');
      const refused = outcomes.filter((o) => o.result?.status === 'failed');
      expect(completed).toHaveLength(1);
      expect(refused).toHaveLength(n - 1);
      for (const o of refused) expect(o.result?.error).toMatchObject({ name: 'AgentRunLeaseError', code: 'lease_held' });
      expect(lines(base.ledger)).toHaveLength(1);
      expectRevisionChain(base.revisions);
    });
  }

  it('SIGKILL right after the executing receipt is durable: the next process stops for reconciliation, the tool never ran', async () => {
    const { base } = world('kill-after');
    const approve = await suspendedRun({ ...base, ttlMs: 1_000 });
    const killed = await spawnWorker({ ...base, ttlMs: 1_000, mode: 'resume', owner: 'victim', approve, kill: 'after-executing-receipt' });
    expect(killed.signal).toBe('SIGKILL');
    await sleep(1_200); // the victim's lease lapses
    const next = await spawnWorker({ ...base, mode: 'resume', owner: 'next', approve });
    expect(next.result?.status).toBe('stopped');
    expect(next.result?.reason).toBe('tool-reconciliation-required');
    expect(next.result?.unknownEffects?.map((r) => r.toolCallId)).toEqual(['c1']);
    expect(lines(base.ledger)).toHaveLength(0);
    expectRevisionChain(base.revisions);
  });

  it('SIGKILL right before the executing receipt is written: the next process runs the call once', async () => {
    const { base } = world('kill-before');
    const approve = await suspendedRun({ ...base, ttlMs: 1_000 });
    const killed = await spawnWorker({ ...base, ttlMs: 1_000, mode: 'resume', owner: 'victim', approve, kill: 'before-executing-receipt' });
    expect(killed.signal).toBe('SIGKILL');
    await sleep(1_200);
    const next = await spawnWorker({ ...base, mode: 'resume', owner: 'next', approve });
    expect(next.result?.status).toBe('completed');
    expect(lines(base.ledger)).toEqual(['charge next']);
    expectRevisionChain(base.revisions);
  });

  it('a paused executor whose lease expired cannot write after another took the run', async () => {
    const { base } = world('paused');
    const approve = await suspendedRun({ ...base, ttlMs: 800 });
    let pausedPid = 0;
    const paused = spawnWorker({ ...base, ttlMs: 800, mode: 'resume', owner: 'paused', approve, toolDelayMs: 1_500 }, (pid) => (pausedPid = pid));
    // Wait until the paused executor has made its executing receipt durable, then stop it.
    for (let i = 0; i < 200 && !lines(base.revisions).some((l) => l.endsWith('paused')); i++) await sleep(50);
    await sleep(100);
    process.kill(pausedPid, 'SIGSTOP');
    await sleep(1_500); // its lease lapses
    const taker = await spawnWorker({ ...base, mode: 'resume', owner: 'taker', reconcile: [{ toolCallId: 'c1', output: 'charged' }] });
    expect(taker.result?.status).toBe('completed');
    const afterTaker = lines(base.revisions).length;
    process.kill(pausedPid, 'SIGCONT');
    const late = await paused;
    expect(late.result?.status).toBe('failed');
    expect(['lease_lost', 'persistence_failed']).toContain(late.result?.error?.code);
    // Nothing the paused executor tried after the takeover landed.
    expect(lines(base.revisions).slice(afterTaker)).toEqual([]);
    expectRevisionChain(base.revisions);
  });
}

describe('many processes on one SQLite file', () => scenarios(sqliteWorld));

describePostgres('many processes on one PostgreSQL database', (env) => {
  scenarios((name) => {
    const dir = mkdtempSync(join(tmpdir(), `cairn-proc-pg-${name}-`));
    dirs.push(dir);
    return {
      base: {
        backend: 'postgres' as const, url: env.url, schema: env.newSchema(), runId: `run-${name}`, ttlMs: 10_000,
        ledger: join(dir, 'ledger'), revisions: join(dir, 'revisions'),
      },
    };
  });
});

/**
 * A PostgreSQL backend terminated in the middle of a save, with real
 * processes: a worker process resumes a run on the Postgres store; this
 * process kills that worker's database backend (pg_terminate_backend) while
 * one of its saves is half done; the worker's run must end with a typed
 * error and a normal exit, nothing of the killed save may be stored, and a
 * second process must take the run to completion with the tool's effect
 * applied exactly once and an unbroken revision chain.
 *
 * "Half done" without timing luck: the worker stops before the chosen save
 * and tells us (a `saving` line on stdout); we take a row lock that this
 * save, and only this one, needs after its compare-and-swap on the run's row
 * (the receipt row it upserts, or the transcript index it appends); then we
 * let the worker go and wait until PostgreSQL reports its backend blocked on
 * our lock, with the save's second statement in flight and its transaction
 * holding the updated run row. That is when we terminate it.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { describePostgres, type PostgresTestEnv } from '../stores/pg-env.js';
import type { PauseAt, SaveFailedEvent, SavingEvent, WorkerArgs } from './worker.js';

interface WorkerResult {
  status: string;
  reason?: string;
  error?: { name: string; code: string; message?: string };
  pendingApprovals?: { approvalId: string; token: string }[];
  unknownEffects?: { toolCallId: string }[];
}

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  result?: WorkerResult;
  /** The `save-failed` lines the worker printed. */
  saveFailures: SaveFailedEvent[];
  stderr: string;
}

/**
 * Spawns the worker. When it pauses before a save, `onSaving` runs with the
 * event; once its promise resolves the worker is told to go on and the
 * continuation it resolved to runs. `trapped` settles when that is done (or
 * rejects if the worker exits without pausing).
 */
function spawnWorker(args: WorkerArgs, onSaving?: (event: SavingEvent) => Promise<() => Promise<void>>): { exited: Promise<Outcome>; trapped: Promise<void> } {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', 'test/processes/worker.ts', JSON.stringify(args)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  // A worker that already exited closed its stdin: writing "go" then is not this test's failure.
  child.stdin.on('error', () => undefined);
  let out = '';
  let err = '';
  let settleTrap!: { resolve: () => void; reject: (e: unknown) => void };
  const trapped = new Promise<void>((resolve, reject) => (settleTrap = { resolve, reject }));
  let sawSaving = false;
  if (!onSaving) settleTrap.resolve();
  child.stdout.on('data', (d: Buffer) => {
    const before = out;
    out += d.toString('utf8');
    // Complete lines that arrived with this chunk.
    const fresh = out.slice(before.lastIndexOf('\n') + 1).split('\n').slice(0, -1);
    for (const line of fresh) {
      if (!line.startsWith('{"event":"saving"')) continue;
      if (!onSaving) throw new Error(`worker ${args.owner} paused, but nobody handles it`);
      sawSaving = true;
      onSaving(JSON.parse(line) as SavingEvent)
        .then(async (then) => {
          child.stdin.end('go\n');
          await then();
          settleTrap.resolve();
        })
        .catch((error: unknown) => {
          child.stdin.end('go\n');
          settleTrap.reject(error);
        });
    }
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
  const exited = new Promise<Outcome>((resolve) => {
    child.on('exit', (code, signal) => {
      const line = out.trim().split('\n').filter((l) => l && !l.startsWith('{"event"')).at(-1);
      let result: WorkerResult | undefined;
      try {
        result = line ? (JSON.parse(line) as WorkerResult) : undefined;
      } catch {
        result = undefined;
      }
      if (!sawSaving) settleTrap.reject(new Error(`worker ${args.owner} exited without pausing: ${line}\n${err}`));
      const saveFailures = out.split('\n').filter((l) => l.startsWith('{"event":"save-failed"')).map((l) => JSON.parse(l) as SaveFailedEvent);
      resolve({ code, signal, result, saveFailures, stderr: err });
    });
  });
  if (!onSaving) child.stdin.end();
  return { exited, trapped };
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
const revisionsOf = (file: string) => lines(file).map((l) => Number(l.split(' ')[0]));

function expectRevisionChain(file: string) {
  const revisions = revisionsOf(file);
  // Each revision written once (no fork), and 1..n with no gap.
  expect(new Set(revisions).size).toBe(revisions.length);
  expect([...revisions].sort((a, b) => a - b)).toEqual(revisions.map((_, i) => i + 1));
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describePostgres('a PostgreSQL backend terminated mid-save, across processes', (env: PostgresTestEnv) => {
  function world(name: string) {
    const dir = mkdtempSync(join(tmpdir(), `cairn-proc-pgkill-${name}-`));
    dirs.push(dir);
    const schema = env.newSchema();
    const base = {
      backend: 'postgres' as const, url: env.url, schema, runId: `run-${name}`, ttlMs: 10_000,
      ledger: join(dir, 'ledger'), revisions: join(dir, 'revisions'),
    };
    return { base, schema };
  }

  /**
   * Opens a transaction that holds the row the paused save needs after its
   * compare-and-swap: the receipt row it upserts (inserted uncommitted if it
   * is new, locked if it exists), or the transcript index it appends first.
   */
  async function lockFor(at: PauseAt, schema: string, runId: string, event: SavingEvent) {
    const locker = new pg.Client({ connectionString: env.url });
    locker.on('error', () => undefined);
    await locker.connect();
    await locker.query('BEGIN');
    if (at === 'tool-message') {
      const [{ length }] = (await locker.query<{ length: number }>(
        `SELECT transcript_length AS length FROM "${schema}".cairn_runs WHERE run_id = $1`, [runId])).rows as [{ length: number }];
      await locker.query(`INSERT INTO "${schema}".cairn_run_messages (run_id, idx, body) VALUES ($1, $2, '\\x00'::bytea)`, [runId, length]);
    } else {
      expect(event.receiptKeys).toHaveLength(1);
      await locker.query(`
        INSERT INTO "${schema}".cairn_run_receipts (run_id, key, model_step, body) VALUES ($1, $2, 0, '\\x00'::bytea)
        ON CONFLICT (run_id, key) DO UPDATE SET body = "${schema}".cairn_run_receipts.body`, [runId, event.receiptKeys[0]]);
    }
    const pid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    return {
      pid,
      async release() {
        await locker.query('ROLLBACK').catch(() => undefined);
        await locker.end().catch(() => undefined);
      },
    };
  }

  /** Waits (polling the server, bounded) until a backend of `appName` is blocked by `lockerPid`, and returns it. */
  async function blockedBackend(appName: string, lockerPid: number) {
    for (let i = 0; i < 1_000; i++) {
      const rows = await env.sql<{ pid: number; query: string }>(
        'SELECT pid, query FROM pg_stat_activity WHERE application_name = $1 AND $2 = ANY(pg_blocking_pids(pid))', [appName, lockerPid]);
      if (rows[0]) return rows[0];
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`no backend of ${appName} ever blocked on the lock`);
  }

  async function storedRun(schema: string, runId: string) {
    const rows = await env.sql<{ revision: number; status: string }>(`SELECT revision, status FROM "${schema}".cairn_runs WHERE run_id = $1`, [runId]);
    return rows[0];
  }

  /**
   * Starts the run (it suspends on the approval of `charge`), resumes it in a
   * victim process paused before the chosen save, and kills that save's
   * backend mid-save. Returns what the victim reported.
   */
  async function killMidSave(at: PauseAt) {
    const { base, schema } = world(at);
    const starter = await spawnWorker({ ...base, mode: 'run', owner: 'starter' }).exited;
    expect(starter.result?.status, starter.stderr).toBe('suspended');
    const approve = starter.result!.pendingApprovals!.map(({ approvalId, token }) => ({ approvalId, token }));

    let killedRevision = 0;
    let terminated = false;
    const victim = spawnWorker({ ...base, mode: 'resume', owner: 'victim', approve, pauseBeforeSave: at }, async (event) => {
      killedRevision = event.revision;
      const lock = await lockFor(at, schema, base.runId, event);
      return async () => {
        try {
          const backend = await blockedBackend('cairn-worker-victim', lock.pid);
          // The save is in flight: the statement that writes the run's rows (its own transaction's second statement, or the
          // one-statement save a store makes after its own previous save) waits on our lock, holding the run's table.
          expect(backend.query).toMatch(/INSERT INTO [^;]*cairn_run_(messages|receipts)/s);
          const runLocks = await env.sql<{ mode: string }>(
            'SELECT mode FROM pg_locks WHERE pid = $1 AND relation = $2::regclass', [backend.pid, `"${schema}".cairn_runs`]);
          expect(runLocks.map((l) => l.mode)).toContain('RowExclusiveLock');
          const [{ ok }] = await env.sql<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [backend.pid]) as [{ ok: boolean }];
          terminated = ok;
        } finally {
          await lock.release();
        }
      };
    });
    await victim.trapped;
    const outcome = await victim.exited;
    expect(terminated).toBe(true);

    // The store threw a typed error for the killed save, and only for it.
    expect(outcome.saveFailures).toEqual([expect.objectContaining({
      revision: killedRevision, typed: true, name: 'PersistenceError', code: 'persistence_failed', fault: 'dependency',
    })]);
    // The run's caller gets a typed error as the run's result, and the process exits normally.
    expect(outcome.signal, outcome.stderr).toBeNull();
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.result?.status, outcome.stderr).toBe('failed');
    expect(outcome.result?.error).toMatchObject({ name: 'PersistenceError', code: 'persistence_failed' });

    // Nothing of the killed save is stored: the run is at the last save that committed.
    const recorded = revisionsOf(base.revisions);
    expect(recorded).not.toContain(killedRevision);
    expect(recorded.at(-1)).toBe(killedRevision - 1);
    expect((await storedRun(schema, base.runId))?.revision).toBe(killedRevision - 1);
    return { base, schema, approve };
  }

  it('killed while saving the executing receipt (before the effect): another process runs the call once and completes', async () => {
    const { base, schema, approve } = await killMidSave('executing');
    expect(lines(base.ledger)).toEqual([]);
    const next = await spawnWorker({ ...base, mode: 'resume', owner: 'next', approve }).exited;
    expect(next.result?.status, next.stderr).toBe('completed');
    expect(lines(base.ledger)).toEqual(['charge next']);
    expect(await storedRun(schema, base.runId)).toEqual({ revision: revisionsOf(base.revisions).length, status: 'completed' });
    expectRevisionChain(base.revisions);
  });

  it('killed while recording that the effect ran: the next process stops for reconciliation instead of running it again, and a reconciled resume completes', async () => {
    const { base, schema } = await killMidSave('executed');
    expect(lines(base.ledger)).toEqual(['charge victim']);
    const next = await spawnWorker({ ...base, mode: 'resume', owner: 'next' }).exited;
    expect(next.result?.status, next.stderr).toBe('stopped');
    expect(next.result?.reason).toBe('tool-reconciliation-required');
    expect(next.result?.unknownEffects?.map((r) => r.toolCallId)).toEqual(['c1']);
    const last = await spawnWorker({ ...base, mode: 'resume', owner: 'last', reconcile: [{ toolCallId: 'c1', output: 'charged' }] }).exited;
    expect(last.result?.status, last.stderr).toBe('completed');
    expect(lines(base.ledger)).toEqual(['charge victim']);
    expect(await storedRun(schema, base.runId)).toEqual({ revision: revisionsOf(base.revisions).length, status: 'completed' });
    expectRevisionChain(base.revisions);
  });

  it('killed while appending the tool result to the transcript (the receipt is complete): another process completes without running the call again', async () => {
    const { base, schema } = await killMidSave('tool-message');
    expect(lines(base.ledger)).toEqual(['charge victim']);
    const next = await spawnWorker({ ...base, mode: 'resume', owner: 'next' }).exited;
    expect(next.result?.status, next.stderr).toBe('completed');
    expect(lines(base.ledger)).toEqual(['charge victim']);
    expect(await storedRun(schema, base.runId)).toEqual({ revision: revisionsOf(base.revisions).length, status: 'completed' });
    expectRevisionChain(base.revisions);
  });
});

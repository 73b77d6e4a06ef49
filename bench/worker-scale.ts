/**
 * The worker pool's section of `npm run bench` (issue 39), against one
 * PostgreSQL (CAIRN_TEST_POSTGRES_URL):
 *
 * 1. graphile-worker alone, the measurement of docs/decisions/008 again:
 *    500 no-op jobs, enqueued one by one, then drained by one runner at
 *    concurrency 4 (ms per job for each).
 * 2. Runs finished per second with 1, 2 and 4 worker processes (forked,
 *    bench/worker-child.ts, 4 jobs at once each), RUNS runs of a 3-step tool
 *    loop, timed from the first enqueue to the last run completed; beside
 *    each, the raw commit rate of as many connections as the workers' job
 *    slots (~2 KB upserts in autocommit, 2 s, measured right after), and the
 *    commits the runs made per second (saves counted by the workers), and
 *    the CPU per run of the worker processes and of the PostgreSQL backends
 *    serving their connections (from /proc, found by application_name).
 * 3. The queue's own overhead per run: the same runs driven 4 at a time by
 *    runAgent with a lease in one process (no queue), against one worker
 *    process at concurrency 4: the difference in wall time per run.
 *
 *   npm run bench -- --workers     this section alone (or CAIRN_BENCH=workers)
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { runAgent } from 'cairn/agent';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { createWorkQueue } from 'cairn/worker';
import { drive, postgresTargets, postgresTask, tasks, type PostgresTargets } from './concurrent.js';
import { POSTGRES_URL } from './resume.js';
import { benchOptions, counting, STEPS } from './worker-agent.js';

const RUNS = 200;
const SLOTS = 4;
const NOOP_JOBS = 500;
const CHILD = fileURLToPath(new URL('./worker-child.ts', import.meta.url));

export interface WorkerScaleRow {
  processes: number;
  runsPerSec: number;
  savesPerRun: number;
  cairnCommitsPerSec: number;
  rawCommitsPerSec: number;
  /** CPU the worker processes spent per run (user + system), drain included. */
  workerCpuMsPerRun: number;
  /** CPU the PostgreSQL backends of the workers' connections spent per run (from /proc); null when unreadable. */
  serverCpuMsPerRun: number | null;
}

export interface WorkerFigures {
  noop: { enqueueMs: number; drainMs: number };
  rows: WorkerScaleRow[];
  direct: { msPerRun: number };
  viaQueue: { msPerRun: number };
  cores: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const schemaName = (what: string) => `cairn_bench_${what}_${randomBytes(4).toString('hex')}`;

async function withPool<T>(body: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 20 });
  pool.on('error', () => undefined);
  try {
    return await body(pool);
  } finally {
    await pool.end();
  }
}

/** graphile-worker with a no-op task: ms per enqueue, and ms per job of the drain. */
async function noopQueue(pool: pg.Pool): Promise<WorkerFigures['noop']> {
  const schema = schemaName('noop');
  const { run, runMigrations, Logger } = (await import('graphile-worker')) as unknown as {
    run(o: unknown): Promise<{ stop(): Promise<void> }>;
    runMigrations(o: unknown): Promise<void>;
    Logger: new (f: () => () => void) => unknown;
  };
  const logger = new Logger(() => () => undefined);
  try {
    await runMigrations({ pgPool: pool, schema, logger });
    let started = performance.now();
    for (let i = 0; i < NOOP_JOBS; i++) await pool.query(`SELECT "${schema}".add_job('noop', $1::json)`, [JSON.stringify({ i })]);
    const enqueueMs = (performance.now() - started) / NOOP_JOBS;
    let left = NOOP_JOBS;
    let finished!: () => void;
    const all = new Promise<void>((resolve) => { finished = resolve; });
    started = performance.now();
    const runner = await run({
      pgPool: pool, schema, concurrency: SLOTS, noHandleSignals: true, logger,
      taskList: { noop: async () => { if (--left === 0) finished(); } },
    });
    await all;
    const drainMs = (performance.now() - started) / NOOP_JOBS;
    await runner.stop();
    return { enqueueMs, drainMs };
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  }
}

/**
 * The raw commit rate beside `processes` worker processes: bench/concurrent.ts's
 * raw drive (~2 KB upserts in autocommit), from as many processes with SLOTS
 * connections each, so the same connections as the workers' job slots.
 */
async function rawCommits(targets: PostgresTargets, processes: number): Promise<number> {
  const raw = await drive(tasks(processes, { ...postgresTask(targets, 'raw'), connections: SLOTS }));
  return (raw.commits * 1000) / raw.wallMs;
}

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** CPU time (user + system, ms) of each backend connected with `app` as its application_name. */
async function backendCpu(pool: pg.Pool, app: string): Promise<Map<number, number>> {
  const { rows } = await pool.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [app]);
  const out = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(pid, (Number(fields[11]) + Number(fields[12])) * TICK_MS);
    } catch {
      // gone in between, or a server on another machine
    }
  }
  return out;
}

interface Env {
  opsSchema: string;
  queueSchema: string;
  drop(): Promise<void>;
}

async function freshEnv(pool: pg.Pool): Promise<Env> {
  const opsSchema = schemaName('ops');
  const queueSchema = schemaName('queue');
  const ops = createPostgresOpsStore({ connectionString: POSTGRES_URL }, { schema: opsSchema });
  await ops.setup();
  await ops.close();
  const queue = createWorkQueue({ connectionString: POSTGRES_URL, schema: queueSchema, log: () => undefined });
  await queue.setup();
  await queue.close();
  return {
    opsSchema, queueSchema,
    drop: async () => {
      for (const s of [opsSchema, queueSchema]) await pool.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    },
  };
}

const completedIn = async (pool: pg.Pool, schema: string) =>
  (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".cairn_runs WHERE status = 'completed'`)).rows[0].n as number;

/** RUNS runs through `processes` worker processes: seconds from the first enqueue to the last completion, and saves. */
async function throughWorkers(pool: pg.Pool, processes: number, prefix: string): Promise<{ seconds: number; saves: number; cpuMs: number; serverCpuMs: number | null }> {
  const env = await freshEnv(pool);
  const children: ChildProcess[] = [];
  const app = `cairn_bench_${prefix}`;
  const appUrl = (() => {
    const u = new URL(POSTGRES_URL);
    u.searchParams.set('application_name', app);
    return u.toString();
  })();
  try {
    for (let i = 0; i < processes; i++) {
      const child = fork(CHILD, [JSON.stringify({ url: appUrl, opsSchema: env.opsSchema, queueSchema: env.queueSchema, concurrency: SLOTS })], {
        execArgv: ['--conditions=source', '--import', 'tsx'],
      });
      children.push(child);
      await new Promise<void>((resolve, reject) => {
        child.once('message', () => resolve());
        child.once('exit', (code) => reject(new Error(`bench worker exited early (${code})`)));
      });
    }
    const queue = createWorkQueue({ connectionString: POSTGRES_URL, schema: env.queueSchema, log: () => undefined });
    const before = await backendCpu(pool, app);
    const started = performance.now();
    for (let i = 0; i < RUNS; i++) await queue.enqueueRun({ agent: 'loop', runId: `${prefix}-${i}`, scope: 'bench', prompt: 'Loop.' });
    while ((await completedIn(pool, env.opsSchema)) < RUNS) await sleep(10);
    const seconds = (performance.now() - started) / 1000;
    const after = await backendCpu(pool, app);
    const serverCpuMs = after.size === 0 ? null : [...after].reduce((sum, [pid, ms]) => sum + ms - (before.get(pid) ?? 0), 0);
    await queue.close();
    let saves = 0;
    let cpuMs = 0;
    await Promise.all(children.map((child) => new Promise<void>((resolve) => {
      child.on('message', (m: { type: string; saves?: number; cpuMs?: number }) => {
        if (m.type !== 'stopped') return;
        saves += m.saves ?? 0;
        cpuMs += m.cpuMs ?? 0;
      });
      child.once('exit', () => resolve());
      child.send({ type: 'stop' });
    })));
    return { seconds, saves, cpuMs, serverCpuMs };
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await env.drop();
  }
}

/** The same runs driven by runAgent with a lease, SLOTS at a time, in this process: ms per run. */
async function direct(pool: pg.Pool): Promise<number> {
  const env = await freshEnv(pool);
  const ops = createPostgresOpsStore({ connectionString: POSTGRES_URL, poolOptions: { max: SLOTS + 1 } }, { schema: env.opsSchema });
  try {
    const counted = counting(ops.agentRuns);
    let next = 0;
    const started = performance.now();
    await Promise.all(Array.from({ length: SLOTS }, async () => {
      while (next < RUNS) {
        const runId = `direct-${next++}`;
        const result = await runAgent({
          ...benchOptions(), prompt: 'Loop.', session: { store: counted.store, runId, scope: 'bench' },
          lease: { provider: ops.leases, owner: 'bench', ttlMs: 30_000 },
        });
        if (result.status !== 'completed') throw new Error(`bench: a direct run ended ${result.status}`);
      }
    }));
    return (performance.now() - started) / RUNS;
  } finally {
    await ops.close();
    await env.drop();
  }
}

export async function measureWorkers(): Promise<WorkerFigures> {
  return withPool(async (pool) => {
    const noop = await noopQueue(pool);
    const directMs = await direct(pool);
    const rows: WorkerScaleRow[] = [];
    let viaQueueMs = 0;
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    const targets = await postgresTargets(POSTGRES_URL, admin);
    try {
      for (const processes of [1, 2, 4]) {
        const { seconds, saves, cpuMs, serverCpuMs } = await throughWorkers(pool, processes, `w${processes}`);
        if (processes === 1) viaQueueMs = (seconds * 1000) / RUNS;
        const rawCommitsPerSec = await rawCommits(targets, processes);
        rows.push({ processes, runsPerSec: RUNS / seconds, savesPerRun: saves / RUNS, cairnCommitsPerSec: saves / seconds, rawCommitsPerSec, workerCpuMsPerRun: cpuMs / RUNS,
          serverCpuMsPerRun: serverCpuMs === null ? null : serverCpuMs / RUNS });
      }
    } finally {
      await targets.drop();
      await admin.end();
    }
    return { noop, rows, direct: { msPerRun: directMs }, viaQueue: { msPerRun: viaQueueMs }, cores: availableParallelism() };
  });
}

export function printWorkers(f: WorkerFigures): void {
  const n = (x: number, d = 1) => x.toFixed(d);
  console.log(`\nWorker pool (issue 39): ${RUNS} runs of a ${STEPS}-step tool loop, ${SLOTS} job slots a worker process, one PostgreSQL, ${f.cores} cores`);
  console.log(`graphile-worker alone, ${NOOP_JOBS} no-op jobs: enqueue ${n(f.noop.enqueueMs, 2)} ms/job, drain at concurrency ${SLOTS} ${n(f.noop.drainMs, 2)} ms/job`);
  console.log('processes  runs/s  saves/run  Cairn commits/s  raw commits/s (same connections)  Cairn / raw  worker CPU ms/run  server CPU ms/run');
  for (const r of f.rows) {
    console.log(`${String(r.processes).padEnd(9)}  ${n(r.runsPerSec).padStart(6)}  ${n(r.savesPerRun).padStart(9)}  ${n(r.cairnCommitsPerSec, 0).padStart(15)}  ${n(r.rawCommitsPerSec, 0).padStart(32)}  ${n(r.cairnCommitsPerSec / r.rawCommitsPerSec, 2).padStart(11)}  ${n(r.workerCpuMsPerRun).padStart(17)}  ${(r.serverCpuMsPerRun === null ? '-' : n(r.serverCpuMsPerRun)).padStart(17)}`);
  }
  const overhead = f.viaQueue.msPerRun - f.direct.msPerRun;
  console.log(`the queue's overhead per run: ${n(f.viaQueue.msPerRun, 2)} ms/run through 1 worker process vs ${n(f.direct.msPerRun, 2)} ms/run by runAgent directly (${SLOTS} at a time): ${n(overhead, 2)} ms/run (${n(f.viaQueue.msPerRun / f.direct.msPerRun, 2)}x)`);
}

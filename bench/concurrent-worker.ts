/**
 * A worker process of the concurrency section (bench/concurrent.ts), forked
 * with an IPC channel. It is told what to drive (`start`), gets ready (opens
 * its store, warms up), says `ready`, waits for `go` so that every worker
 * starts at once, then drives its share and reports `done` with its own
 * start and end times (epoch ms, comparable across processes), and closes
 * its connections when told `close`.
 *
 *   cairn:  `runs` tool loops of `steps` steps at once, on one store object
 *   xstate: `runs` bare XState loops of `steps` steps at once, each
 *           checkpoint a commit (bench/concurrent-baseline.ts, `mode`): on
 *           PostgreSQL one pg Pool of `runs` connections, on SQLite the
 *           process's one connection
 *   raw:    `connections` connections each upserting one ~2 KB row per
 *           commit (autocommit) for `durationMs`
 *
 * With CAIRN_BENCH_CONCURRENT_PROFILE=<dir>, a cairn or xstate worker samples
 * its CPU (every 100 µs) over the timed part and writes
 * `<dir>/<prefix>-<kind>-<store>-w<worker>.cpuprofile`.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createInMemoryAgentRunStore, type AgentRunStore } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { toolLoop } from './tool-loop.js';
import { committedLoop, postgresCommit, sqliteCommit, type BaselineMode, type Commit } from './concurrent-baseline.js';

export interface WorkerTask {
  kind: 'cairn' | 'xstate' | 'raw';
  /** xstate: what a checkpoint commits (see bench/concurrent-baseline.ts). */
  mode?: BaselineMode;
  store: 'sqlite' | 'postgres';
  /** The SQLite file, or the PostgreSQL URL. */
  target: string;
  /** PostgreSQL: the schema (cairn, xstate) or the table (raw), created by the parent. */
  schema?: string;
  table?: string;
  worker: number;
  /** Run ids are `<prefix>-<warmup|timed>-w<worker>-r<i>`: unique per drive, as the runs of one database share it. */
  prefix: string;
  runs: number;
  steps: number;
  connections: number;
  durationMs: number;
  busyTimeoutMs: number;
}

export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'done'; started: number; ended: number; steps: number; commits: number; cpuMs: number }
  | { type: 'failed'; error: string };

/**
 * Warm-up: loops on an in-memory store first (the engine's code optimized by
 * V8 without waiting on a disk), then rounds on the real store (its driver,
 * its planner and encoder, its statements), the same for Cairn and the bare
 * loops. One round of 30 steps there left the timed runs paying for V8's
 * optimizing of the store's code: on PostgreSQL, Cairn's workers spent 1.79
 * ms of CPU a commit and reached 27-32% of the raw rate; after 6 rounds of
 * 100 steps, 1.04 ms and 47%; after 20, 0.89 ms and 51%. A worker that has
 * been up a while runs the warm code.
 */
const WARMUP_IN_MEMORY = { loops: 4, steps: 100 };
const WARMUP_ON_STORE = { rounds: 8, steps: 100 };
const now = () => performance.timeOrigin + performance.now();
/** This process's CPU time (user + system, every thread) since `from`, in ms. */
const cpuMs = (from: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(from);
  return (used.user + used.system) / 1000;
};

function send(message: WorkerMessage): Promise<void> {
  return new Promise((resolve) => process.send!(message, () => resolve()));
}

function nextMessage(): Promise<{ type: string; task?: WorkerTask }> {
  return new Promise((resolve) => process.once('message', resolve));
}

/** With CAIRN_BENCH_CONCURRENT_PROFILE: samples the CPU over `body` and writes the profile under `name`. */
async function profiled<T>(name: string, body: () => Promise<T>): Promise<T> {
  const dir = process.env.CAIRN_BENCH_CONCURRENT_PROFILE;
  if (!dir) return body();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  try {
    return await body();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
}

/**
 * Reports `done`, then waits for the parent's `close` before the caller closes
 * its connections: the parent reads the CPU time of their server backends
 * while they are still there.
 */
async function finish(message: Extract<WorkerMessage, { type: 'done' }>): Promise<void> {
  await send(message);
  await nextMessage();
}

/** Counts the saves: each is one commit. */
function counting(inner: AgentRunStore) {
  let saves = 0;
  const store: AgentRunStore = {
    load: (runId, options) => inner.load(runId, options),
    save(envelope, options) {
      saves++;
      return inner.save(envelope, options);
    },
  };
  return { store, saves: () => saves };
}

async function driveCairn(task: WorkerTask): Promise<void> {
  const ops = task.store === 'sqlite'
    ? createSqliteOpsStore({ path: task.target, synchronous: 'full', busyTimeoutMs: task.busyTimeoutMs })
    : createPostgresOpsStore({ connectionString: task.target }, { schema: task.schema! });
  const loops = async (store: AgentRunStore, prefix: string, steps: number) => {
    const results = await Promise.all(Array.from({ length: task.runs }, (_, i) => toolLoop(store, `${task.prefix}-${prefix}-w${task.worker}-r${i}`, steps, 'bare')));
    for (const r of results) if (r.status !== 'completed') throw new Error(`a run ended ${r.status}: ${JSON.stringify(r.status === 'failed' ? r.error : '')}`);
  };
  try {
    const memory = createInMemoryAgentRunStore();
    for (let i = 0; i < WARMUP_IN_MEMORY.loops; i++) await loops(memory, `memory-${i}`, WARMUP_IN_MEMORY.steps);
    for (let i = 0; i < WARMUP_ON_STORE.rounds; i++) await loops(ops.agentRuns, `warmup-${i}`, WARMUP_ON_STORE.steps);
    await send({ type: 'ready' });
    await nextMessage();
    const counted = counting(ops.agentRuns);
    const cpu = process.cpuUsage();
    const started = now();
    await profiled(`${task.prefix}-cairn-${task.store}-w${task.worker}`, () => loops(counted.store, 'timed', task.steps));
    const ended = now();
    await finish({ type: 'done', started, ended, steps: task.runs * task.steps, commits: counted.saves(), cpuMs: cpuMs(cpu) });
  } finally {
    await ops.close();
  }
}

async function driveXstate(task: WorkerTask): Promise<void> {
  const mode = task.mode ?? 'snapshot';
  let commit: Commit;
  let close: () => Promise<void>;
  if (task.store === 'sqlite') {
    const db = new Database(task.target);
    db.pragma(`busy_timeout = ${task.busyTimeoutMs}`);
    db.pragma('synchronous = FULL');
    commit = sqliteCommit(db, mode);
    close = async () => {
      db.close();
    };
  } else {
    const pool = new pg.Pool({ connectionString: task.target, max: task.runs });
    pool.on('error', () => undefined);
    commit = postgresCommit(pool, task.schema!, mode);
    close = () => pool.end();
  }
  const loops = async (through: Commit, prefix: string, steps: number) => {
    const counts = await Promise.all(Array.from({ length: task.runs }, (_, i) => committedLoop(`${task.prefix}-${prefix}-w${task.worker}-r${i}`, steps, through)));
    return counts.reduce((a, b) => a + b, 0);
  };
  try {
    const nothing: Commit = async () => undefined;
    for (let i = 0; i < WARMUP_IN_MEMORY.loops; i++) await loops(nothing, `memory-${i}`, WARMUP_IN_MEMORY.steps);
    for (let i = 0; i < WARMUP_ON_STORE.rounds; i++) await loops(commit, `warmup-${i}`, WARMUP_ON_STORE.steps);
    await send({ type: 'ready' });
    await nextMessage();
    const cpu = process.cpuUsage();
    const started = now();
    const commits = await profiled(`${task.prefix}-xstate-${mode}-${task.store}-w${task.worker}`, () => loops(commit, 'timed', task.steps));
    const ended = now();
    await finish({ type: 'done', started, ended, steps: task.runs * task.steps, commits, cpuMs: cpuMs(cpu) });
  } finally {
    await close();
  }
}

async function driveRaw(task: WorkerTask): Promise<void> {
  const body = randomBytes(2048);
  if (task.store === 'sqlite') {
    const db = new Database(task.target);
    db.pragma(`busy_timeout = ${task.busyTimeoutMs}`);
    db.pragma('synchronous = FULL');
    const upsert = db.prepare('INSERT INTO raw (id, body) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET body = excluded.body');
    // One transaction a commit, as the store's saves (BEGIN IMMEDIATE); rows of its own, so only the file's lock is shared.
    const commit = db.transaction((i: number) => {
      body.writeUInt32LE(i, 0);
      upsert.run(task.worker * 50 + (i % 50), body);
    });
    for (let i = 0; i < 100; i++) commit.immediate(i);
    await send({ type: 'ready' });
    await nextMessage();
    const cpu = process.cpuUsage();
    const started = now();
    let commits = 0;
    while (now() - started < task.durationMs) commit.immediate(commits++);
    const ended = now();
    const used = cpuMs(cpu);
    db.close();
    await finish({ type: 'done', started, ended, steps: 0, commits, cpuMs: used });
    return;
  }
  const clients = await Promise.all(Array.from({ length: task.connections }, async () => {
    const client = new pg.Client({ connectionString: task.target });
    await client.connect();
    return client;
  }));
  const text = `INSERT INTO ${task.table} (id, body) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET body = excluded.body`;
  const one = (client: pg.Client, c: number, i: number) => {
    const mine = Buffer.from(body);
    mine.writeUInt32LE(i, 0);
    return client.query({ name: 'raw-upsert', text, values: [(task.worker * task.connections + c) * 50 + (i % 50), mine] });
  };
  try {
    await Promise.all(clients.map(async (client, c) => {
      for (let i = 0; i < 50; i++) await one(client, c, i);
    }));
    await send({ type: 'ready' });
    await nextMessage();
    const cpu = process.cpuUsage();
    const started = now();
    const counts = await Promise.all(clients.map(async (client, c) => {
      let n = 0;
      while (now() - started < task.durationMs) await one(client, c, n++);
      return n;
    }));
    const ended = now();
    await finish({ type: 'done', started, ended, steps: 0, commits: counts.reduce((a, b) => a + b, 0), cpuMs: cpuMs(cpu) });
  } finally {
    await Promise.all(clients.map((client) => client.end()));
  }
}

const first = await nextMessage();
try {
  const task = first.task!;
  await (task.kind === 'cairn' ? driveCairn(task) : task.kind === 'xstate' ? driveXstate(task) : driveRaw(task));
} catch (error) {
  await send({ type: 'failed', error: (error as Error).stack ?? String(error) });
}
process.disconnect();

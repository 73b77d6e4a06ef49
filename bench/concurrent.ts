/**
 * The concurrency section of `npm run bench` (issue 16): 16 runs driven at
 * once from 4 processes (bench/concurrent-worker.ts, forked; 4 runs at once
 * in each, on one store object per process), on one PostgreSQL database and
 * on one SQLite file, against the raw commit rate the same processes reach
 * with ~2 KB upserts in autocommit, measured in the same run: 16 PostgreSQL
 * connections (4 a process), and one SQLite connection a process (a
 * better-sqlite3 connection blocks its process while it waits for the lock,
 * so more in one process would add nothing).
 *
 * Each worker warms up (4 runs of 30 steps) before it says it is ready; all
 * start on one signal. Steps/s is the 16 runs' steps over the time from the
 * first worker's start to the last one's end; Cairn's commits/s is that times
 * the commits (saves) a step made. The runs are the tool loop of the other
 * sections answered by the bare scripted model (no request recording). A
 * single run alone (one process) is measured beside them, and the CPU time
 * the worker processes spent per commit (on a 2-core machine the workers and
 * the database share the cores, so CPU per commit bounds the rate).
 *
 *   npm run bench -- --concurrent      this section alone (or CAIRN_BENCH=concurrent)
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import type { WorkerMessage, WorkerTask } from './concurrent-worker.js';
import { POSTGRES_URL } from './resume.js';

const PROCESSES = 4;
const RUNS_PER_PROCESS = 4;
const STEPS = 100;
const RAW_CONNECTIONS_PER_PROCESS = 4;
const RAW_DURATION_MS = 2_000;
const BUSY_TIMEOUT_MS = 30_000;
const TARGET_SHARE = 0.7;
const WORKER = fileURLToPath(new URL('./concurrent-worker.ts', import.meta.url));

interface Outcome {
  /** ms from the first worker's start to the last one's end. */
  wallMs: number;
  steps: number;
  commits: number;
  /** CPU time the worker processes spent (user + system), ms. */
  cpuMs: number;
}

/** Forks one worker per task, starts them together once all are ready, and sums what they did. */
async function drive(tasks: WorkerTask[]): Promise<Outcome> {
  const children = tasks.map(() => fork(WORKER, [], { execArgv: ['--conditions=source', '--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  const failures: string[] = [];
  const messages = children.map((child, i) => {
    const queue: WorkerMessage[] = [];
    const waiting: ((m: WorkerMessage) => void)[] = [];
    child.on('message', (m: WorkerMessage) => {
      if (m.type === 'failed') failures.push(m.error);
      const next = waiting.shift();
      if (next) next(m);
      else queue.push(m);
    });
    child.on('exit', (code) => {
      const failed: WorkerMessage = { type: 'failed', error: `worker ${i} exited (${code})` };
      for (const w of waiting.splice(0)) w(failed);
      queue.push(failed);
    });
    return () => new Promise<WorkerMessage>((resolve) => (queue.length > 0 ? resolve(queue.shift()!) : waiting.push(resolve)));
  });
  const expect = async (type: WorkerMessage['type']) => {
    const got = await Promise.all(messages.map((next) => next()));
    if (got.some((m) => m.type !== type)) {
      for (const child of children) child.kill();
      throw new Error(`concurrent: a worker failed: ${failures.join('\n') || JSON.stringify(got)}`);
    }
    return got;
  };
  children.forEach((child, i) => child.send({ type: 'start', task: tasks[i] }));
  await expect('ready');
  for (const child of children) child.send({ type: 'go' });
  const done = (await expect('done')) as Extract<WorkerMessage, { type: 'done' }>[];
  await Promise.all(children.map((child) => (child.exitCode !== null ? undefined : new Promise((resolve) => child.once('exit', resolve)))));
  const started = Math.min(...done.map((d) => d.started));
  const ended = Math.max(...done.map((d) => d.ended));
  const sum = (key: 'steps' | 'commits' | 'cpuMs') => done.reduce((n, d) => n + d[key], 0);
  return { wallMs: ended - started, steps: sum('steps'), commits: sum('commits'), cpuMs: sum('cpuMs') };
}

let drives = 0;
const tasks = (count: number, base: Omit<WorkerTask, 'worker' | 'prefix'>): WorkerTask[] => {
  const prefix = `d${drives++}`;
  return Array.from({ length: count }, (_, worker) => ({ ...base, worker, prefix }));
};

export interface ConcurrentRow {
  store: 'sqlite' | 'postgres';
  many: Outcome;
  single: Outcome;
  raw: Outcome;
  /** SQLite: the raw rate of one process alone, for how much the processes take from each other. */
  rawSingle?: Outcome;
}

const base = { runs: 1, steps: STEPS, connections: 1, durationMs: RAW_DURATION_MS, busyTimeoutMs: BUSY_TIMEOUT_MS };

async function measureSqlite(dir: string): Promise<ConcurrentRow> {
  const path = join(dir, 'many.sqlite');
  createSqliteOpsStore({ path, synchronous: 'full', busyTimeoutMs: BUSY_TIMEOUT_MS }).close();
  const single = await drive(tasks(1, { ...base, kind: 'cairn', store: 'sqlite', target: join(dir, 'single.sqlite') }));
  const many = await drive(tasks(PROCESSES, { ...base, kind: 'cairn', store: 'sqlite', target: path, runs: RUNS_PER_PROCESS }));
  const rawPath = join(dir, 'raw.sqlite');
  const db = new Database(rawPath);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE raw (id INTEGER PRIMARY KEY, body BLOB)');
  db.close();
  const rawSingle = await drive(tasks(1, { ...base, kind: 'raw', store: 'sqlite', target: rawPath }));
  const raw = await drive(tasks(PROCESSES, { ...base, kind: 'raw', store: 'sqlite', target: rawPath }));
  return { store: 'sqlite', many, single, raw, rawSingle };
}

async function measurePostgres(url: string): Promise<ConcurrentRow> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const stamp = Date.now();
  const schema = `cairn_bench_many_${stamp}`;
  const table = `cairn_bench_raw_many_${stamp}`;
  try {
    const ops = createPostgresOpsStore({ connectionString: url }, { schema });
    await ops.setup();
    await ops.close();
    await admin.query(`CREATE TABLE ${table} (id int PRIMARY KEY, body bytea)`);
    const single = await drive(tasks(1, { ...base, kind: 'cairn', store: 'postgres', target: url, schema }));
    const many = await drive(tasks(PROCESSES, { ...base, kind: 'cairn', store: 'postgres', target: url, schema, runs: RUNS_PER_PROCESS }));
    const raw = await drive(tasks(PROCESSES, { ...base, kind: 'raw', store: 'postgres', target: url, table, connections: RAW_CONNECTIONS_PER_PROCESS }));
    return { store: 'postgres', many, single, raw };
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.query(`DROP TABLE IF EXISTS ${table}`);
    await admin.end();
  }
}

export async function measureConcurrent(): Promise<{ rows: ConcurrentRow[]; skipped: string | null }> {
  const rows: ConcurrentRow[] = [];
  let skipped: string | null = null;
  // PostgreSQL first: the target is about it.
  try {
    const probe = new pg.Client({ connectionString: POSTGRES_URL });
    await probe.connect();
    await probe.end();
  } catch (error) {
    skipped = (error as Error).message;
  }
  if (!skipped) rows.push(await measurePostgres(POSTGRES_URL));
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-many-'));
  try {
    rows.push(await measureSqlite(dir));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { rows, skipped };
}

export function printConcurrent({ rows, skipped }: { rows: ConcurrentRow[]; skipped: string | null }): void {
  const f = (n: number, d = 0) => n.toLocaleString('en', { minimumFractionDigits: d, maximumFractionDigits: d });
  const rate = (o: Outcome, what: 'steps' | 'commits') => (o[what] * 1000) / o.wallMs;
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  const runs = PROCESSES * RUNS_PER_PROCESS;
  console.log(
    `\nMany runs at once: ${runs} runs of ${STEPS} steps from ${PROCESSES} processes (${RUNS_PER_PROCESS} at once in each), against the raw commit rate ` +
    `of the same processes (~2 KB upserts in autocommit for ${RAW_DURATION_MS / 1000} s; PostgreSQL ${PROCESSES * RAW_CONNECTIONS_PER_PROCESS} connections, SQLite one a process)\n`,
  );
  console.log(`| store | ${runs} runs: steps/s | commits/step | Cairn commits/s | raw commits/s | Cairn / raw | one run alone: steps/s | workers' CPU ms per Cairn commit / per raw commit | target | |`);
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |');
  for (const r of rows) {
    const share = rate(r.many, 'commits') / rate(r.raw, 'commits');
    const label = r.store === 'sqlite' ? 'sqlite (one file, WAL, synchronous=FULL)' : 'postgres (one database)';
    console.log(
      `| ${label} | ${f(rate(r.many, 'steps'), 1)} | ${f(r.many.commits / r.many.steps, 2)} | ${f(rate(r.many, 'commits'))} | ${f(rate(r.raw, 'commits'))} | ` +
      `${f(100 * share)}% | ${f(rate(r.single, 'steps'), 1)} | ${f(r.many.cpuMs / r.many.commits, 2)} / ${f(r.raw.cpuMs / r.raw.commits, 3)} | ` +
      `≥ ${f(100 * TARGET_SHARE)}% of raw | ${verdict(share >= TARGET_SHARE)} |`,
    );
  }
  if (skipped) console.log(`\npostgres: skipped (${skipped})`);
  const sqlite = rows.find((r) => r.store === 'sqlite');
  if (sqlite?.rawSingle) {
    console.log(
      `\nSQLite takes one writer at a time: raw commits/s of one process alone ${f(rate(sqlite.rawSingle, 'commits'))}, of ${PROCESSES} processes ` +
      `together ${f(rate(sqlite.raw, 'commits'))}; Cairn's ${runs} runs reach ${f(rate(sqlite.many, 'steps'), 1)} steps/s together, ` +
      `${f(rate(sqlite.many, 'steps') / rate(sqlite.single, 'steps'), 2)}x one run alone (busy timeout ${BUSY_TIMEOUT_MS / 1000} s).`,
    );
  }
}

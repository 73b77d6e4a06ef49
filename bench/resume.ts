/**
 * The resume section of `npm run bench` (issue 16): how long a suspended run
 * takes to go on, on SQLite and PostgreSQL, for a run of 100 and of 1,000
 * tool steps, next to the floor: the same record's rows read with a
 * hand-written query.
 *
 * The run: N steps of a `step` tool, then a `deploy` call that needs
 * approval, so the run suspends with N + 1 turns, N + 1 receipts and 2N + 3
 * messages stored. Its rows are copied aside once; before every repetition
 * they are put back byte for byte, so each repetition resumes the very same
 * record.
 *
 * What is timed: one `resumeAgent` call, from its start to its result, on a
 * store object opened before the timer (SQLite: a new connection to the file;
 * PostgreSQL: a new store object over a warm pool, so it remembers nothing of
 * the run and saves the way a restarted process does). That call loads the
 * record, checks it, restores the run actor, applies the approval, runs
 * `deploy` (its `executing` and `completed` receipts saved), makes one model
 * turn (a scripted model answering at once: "done"), and saves the completed
 * run. The floor is a read of the same rows (the head, every message, every
 * receipt) in one read transaction (SQLite) or one prepared statement
 * (PostgreSQL) on a connection opened before its timer.
 *
 * Beside the wall time, the CPU time the process spent during the same
 * resume (process.cpuUsage: user and system, every thread, so the GC's
 * helper threads too; not the PostgreSQL server's, another process). On a
 * shared 2-core machine a busy neighbour moves the wall clock (an fsync
 * waiting behind another's writes, a preempted process) far more than it
 * moves CPU time, so a change of the code shows in that column first.
 *
 * The statements a resume sends are counted on one more, untimed resume: the
 * SQLite ones by wrapping better-sqlite3's Statement methods (every statement
 * the store runs, BEGIN and COMMIT included), the PostgreSQL ones by wrapping
 * pg's Client#query (each is one round trip). No src/ change is needed.
 *
 *   npm run bench -- --resume      this section alone (or CAIRN_BENCH=resume)
 *
 * With CAIRN_BENCH_RESUME_PROFILE=1 the timed resumes (not the others) are
 * also sampled by the CPU profiler, and the functions with the most self time
 * per resume are printed for each store and size; with
 * CAIRN_BENCH_RESUME_PROFILE_DIR=<dir> as well, each profiled resume's CPU
 * profile is also written there (resume-<store>-<steps>-steps-<n>.cpuprofile,
 * for a profile viewer or for inclusive times). The profiler slows what it
 * samples: read those figures for where the time goes, not for the targets.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import {
  resumeAgent, runAgent, type AgentRunStore, type ApprovalResponse, type LeaseProvider, type ResumeOptions,
} from 'cairn/agent';
import type { LanguageModel, ModelRequest, ModelResponse, ModelToolCall } from 'cairn/models';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { selfTimes, type CpuProfile } from './engine.js';

export const POSTGRES_URL = process.env.CAIRN_TEST_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/test';

const SIZES = [100, 1_000] as const;
/** The targets: ms at N = 100 per store, and how far N = 1,000 may be from it. */
const TARGET_MS: Record<StoreKind, number> = { sqlite: 3, postgres: 8 };
const TARGET_GROWTH = 1.5;
const WARMUP = 3;
const TIMED = 11;
const SCOPE = 'bench';
const PAD = 'x'.repeat(200);

type StoreKind = 'sqlite' | 'postgres';
type Phase = 'load' | 'save' | 'model' | 'tool';

/** The step's turn, read from the last message: c0 .. c<N-1>, then deploy, then the answer. */
function scriptedModel(steps: number): LanguageModel {
  return {
    specificationVersion: 'cairn-model-1',
    provider: 'bench',
    modelId: 'resume',
    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      const last = request.messages[request.messages.length - 1];
      const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };
      const id = last?.role === 'tool' ? last.toolCallId : undefined;
      if (id === 'deploy') return { text: 'done', toolCalls: [], finishReason: 'stop', usage };
      const next = id === undefined ? 0 : Number(id.slice(1)) + 1;
      const call: ModelToolCall = next < steps
        ? { toolCallId: `c${next}`, toolName: 'step', args: { n: next } }
        : { toolCallId: 'deploy', toolName: 'deploy', args: {} };
      return { text: '', toolCalls: [call], finishReason: 'tool-calls', usage };
    },
  };
}

/** Wall-clock marks of what a resume waits on: the store's calls, the model, the tool. */
class Marks {
  readonly spans: { phase: Phase; start: number; end: number }[] = [];
  current: Phase | null = null;
  async around<T>(phase: Phase, body: () => Promise<T> | T): Promise<T> {
    const start = performance.now();
    this.current = phase;
    try {
      return await body();
    } finally {
      this.current = null;
      this.spans.push({ phase, start, end: performance.now() });
    }
  }
}

function markedStore(inner: AgentRunStore, marks: Marks): AgentRunStore {
  return {
    load: (runId, options) => marks.around('load', () => inner.load(runId, options)),
    save: (envelope, options) => marks.around('save', () => inner.save(envelope, options)),
  };
}

function markedModel(inner: LanguageModel, marks: Marks): LanguageModel {
  return { ...inner, doGenerate: (request) => marks.around('model', () => inner.doGenerate(request)) };
}

export function agentOptions(steps: number, runId: string, store: AgentRunStore, marks: Marks | null): ResumeOptions {
  const model = scriptedModel(steps);
  const tool = <A>(execute: (args: A) => unknown) => (args: A) => (marks ? marks.around('tool', () => execute(args)) : execute(args));
  return {
    model: marks ? markedModel(model, marks) : model,
    prompt: 'Loop, then deploy.',
    bindingId: 'bench-resume',
    maxSteps: steps + 3,
    session: { store: marks ? markedStore(store, marks) : store, runId, scope: SCOPE },
    tools: {
      step: { parameters: { type: 'object' }, execute: tool((args: { n: number }) => ({ ok: true, n: args.n, pad: PAD })) },
      deploy: { parameters: { type: 'object' }, needsApproval: true, execute: tool(() => 'deployed') },
    },
  };
}

/** Statements (SQLite) or round trips (PostgreSQL) a resume sent, by the phase they were sent in and by kind. */
interface QueryCount {
  total: number;
  byPhase: Record<string, number>;
  byKind: Record<string, number>;
}

function newCount(): QueryCount {
  return { total: 0, byPhase: {}, byKind: {} };
}

function tally(count: QueryCount, phase: string, sql: string) {
  const kind = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? '?';
  count.total++;
  count.byPhase[phase] = (count.byPhase[phase] ?? 0) + 1;
  count.byKind[kind] = (count.byKind[kind] ?? 0) + 1;
}

/**
 * Counts every statement better-sqlite3 runs (prepared ones and the BEGIN,
 * COMMIT its transactions run) until the returned function is called.
 */
function countSqlite(marks: Marks): () => QueryCount {
  const probe = new Database(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, (...args: unknown[]) => unknown>;
  probe.close();
  const count = newCount();
  const originals = new Map<string, (...args: unknown[]) => unknown>();
  for (const method of ['run', 'get', 'all', 'iterate']) {
    const original = proto[method]!;
    originals.set(method, original);
    proto[method] = function (this: { source: string }, ...args: unknown[]) {
      tally(count, marks.current ?? 'lease', this.source);
      return original.apply(this, args);
    };
  }
  return () => {
    for (const [method, original] of originals) proto[method] = original;
    return count;
  };
}

/** Counts every query pg's clients send (one round trip each) until the returned function is called. */
function countPostgres(marks: Marks): () => QueryCount {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  const count = newCount();
  proto.query = function (this: unknown, ...args: unknown[]) {
    const first = args[0] as string | { text?: string };
    tally(count, marks.current ?? 'lease', typeof first === 'string' ? first : first?.text ?? '?');
    return original.apply(this, args);
  };
  return () => {
    proto.query = original;
    return count;
  };
}

/** One store's way of opening a fresh handle, putting the seeded rows back, and reading them by hand. */
interface Backend {
  kind: StoreKind;
  /** A store handle that has never seen the run, with its lease provider. */
  open(): Promise<{ store: AgentRunStore; leases: LeaseProvider; close(): Promise<void> }>;
  /** Copies the run's rows aside (once, after seeding). */
  keep(runId: string): Promise<void>;
  /** Puts the kept rows back, so the run is suspended again, byte for byte. */
  restore(runId: string): Promise<void>;
  /** The floor: ms to read the run's head, messages and receipts, and how many bytes they are. */
  readRows(runId: string): Promise<{ ms: number; bytes: number; rows: number }>;
  close(): Promise<void>;
  count(marks: Marks): () => QueryCount;
}

function sqliteBackend(dir: string): Backend {
  const path = join(dir, 'resume.sqlite');
  // The store creates the file and its schema; this connection only copies rows aside and back.
  createSqliteOpsStore({ path }).close();
  const admin = new Database(path);
  admin.pragma('busy_timeout = 5000');
  admin.exec(`CREATE TABLE IF NOT EXISTS seed_runs AS SELECT * FROM cairn_runs WHERE 0;
    CREATE TABLE IF NOT EXISTS seed_messages AS SELECT * FROM cairn_run_messages WHERE 0;
    CREATE TABLE IF NOT EXISTS seed_receipts AS SELECT * FROM cairn_run_receipts WHERE 0;
    CREATE TABLE IF NOT EXISTS wal_start (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);`);
  const walStart = admin.prepare('INSERT OR REPLACE INTO wal_start (id, n) VALUES (1, ?)');
  let walStarts = 0;
  const tables = [['cairn_run_messages', 'seed_messages'], ['cairn_run_receipts', 'seed_receipts'], ['cairn_runs', 'seed_runs']] as const;
  const keep = admin.transaction((runId: string) => {
    for (const [live, seed] of tables) admin.prepare(`INSERT INTO ${seed} SELECT * FROM ${live} WHERE run_id = ?`).run(runId);
  });
  const restore = admin.transaction((runId: string) => {
    for (const [live] of tables) admin.prepare(`DELETE FROM ${live} WHERE run_id = ?`).run(runId);
    for (const [live, seed] of [...tables].reverse()) admin.prepare(`INSERT INTO ${live} SELECT * FROM ${seed} WHERE run_id = ?`).run(runId);
  });
  return {
    kind: 'sqlite',
    async open() {
      const ops = createSqliteOpsStore({ path, synchronous: 'full' });
      return { store: ops.agentRuns, leases: ops.leases, close: async () => ops.close() };
    },
    async keep(runId) {
      keep(runId);
    },
    async restore(runId) {
      restore(runId);
      // Every repetition starts from the same WAL, so none pays for a checkpoint the others did not: checkpointed,
      // then begun again from its start by one small write of this connection's own. The write that begins a WAL
      // writes its header and, under synchronous=FULL, syncs it: one fsync more, once a checkpoint cycle (hundreds of
      // commits), paid in a database in use by whichever write comes first after a checkpoint. This one pays it here,
      // not the resume. RESTART, not TRUNCATE: the log file keeps its size, as SQLite's own checkpoints leave it in a
      // database in use, so the resume's commits write over old frames. After a TRUNCATE each of them grew the file,
      // and its fsync carried the file's new size too: 2.0 ms for a 100-step resume's three saves against 1.6-1.7.
      admin.pragma('wal_checkpoint(RESTART)');
      walStart.run(++walStarts);
    },
    async readRows(runId) {
      const db = new Database(path);
      // Schema 8: the run's rows are one range of integer keys in each table (run_no * 2^32 on).
      const head = db.prepare<[string], { run_no: number; head: Buffer }>('SELECT run_no, head FROM cairn_runs WHERE run_id = ?');
      const messages = db.prepare<[bigint, bigint], Buffer>('SELECT body FROM cairn_run_messages WHERE row_key >= ? AND row_key < ?').pluck();
      const receipts = db.prepare<[bigint, bigint], Buffer>('SELECT body FROM cairn_run_receipts WHERE row_key >= ? AND row_key < ?').pluck();
      const read = db.transaction((id: string) => {
        const row = head.get(id)!;
        const from = BigInt(row.run_no) << 32n;
        const to = BigInt(row.run_no + 1) << 32n;
        return [row.head, ...messages.all(from, to), ...receipts.all(from, to)];
      });
      const started = performance.now();
      const rows = read.deferred(runId);
      const ms = performance.now() - started;
      db.close();
      return { ms, rows: rows.length, bytes: rows.reduce((n, b) => n + b.length, 0) };
    },
    async close() {
      admin.close();
    },
    count: countSqlite,
  };
}

async function postgresBackend(url: string): Promise<Backend> {
  const schema = `cairn_bench_resume_${Date.now()}`;
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on('error', () => undefined);
  const first = createPostgresOpsStore({ pool }, { schema });
  await first.setup();
  const q = `"${schema}"`;
  await pool.query(`CREATE TABLE ${q}.seed_runs AS SELECT * FROM ${q}.cairn_runs WITH NO DATA;
    CREATE TABLE ${q}.seed_messages AS SELECT * FROM ${q}.cairn_run_messages WITH NO DATA;
    CREATE TABLE ${q}.seed_receipts AS SELECT * FROM ${q}.cairn_run_receipts WITH NO DATA;`);
  // The rows as rows, in one statement (one snapshot): the head, then the messages in order, then the receipts.
  const floor = {
    name: `bench_resume_floor_${schema}`,
    text: `SELECT 0 AS part, 0 AS idx, head AS body FROM ${q}.cairn_runs WHERE run_id = $1
      UNION ALL SELECT 1, idx, body FROM ${q}.cairn_run_messages WHERE run_id = $1
      UNION ALL SELECT 2, 0, body FROM ${q}.cairn_run_receipts WHERE run_id = $1
      ORDER BY part, idx`,
  };
  return {
    kind: 'postgres',
    async open() {
      // A new store object on the warm pool: it has never saved the run, as after a restart.
      const ops = createPostgresOpsStore({ pool }, { schema });
      return { store: ops.agentRuns, leases: ops.leases, close: () => ops.close() };
    },
    async keep(runId) {
      await pool.query(`INSERT INTO ${q}.seed_runs SELECT * FROM ${q}.cairn_runs WHERE run_id = $1`, [runId]);
      await pool.query(`INSERT INTO ${q}.seed_messages SELECT * FROM ${q}.cairn_run_messages WHERE run_id = $1`, [runId]);
      await pool.query(`INSERT INTO ${q}.seed_receipts SELECT * FROM ${q}.cairn_run_receipts WHERE run_id = $1`, [runId]);
    },
    async restore(runId) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        // Each table by itself: since ops migration 9 the rows have no foreign key that would cascade.
        await client.query(`DELETE FROM ${q}.cairn_runs WHERE run_id = $1`, [runId]);
        await client.query(`DELETE FROM ${q}.cairn_run_messages WHERE run_id = $1`, [runId]);
        await client.query(`DELETE FROM ${q}.cairn_run_receipts WHERE run_id = $1`, [runId]);
        await client.query(`INSERT INTO ${q}.cairn_runs SELECT * FROM ${q}.seed_runs WHERE run_id = $1`, [runId]);
        await client.query(`INSERT INTO ${q}.cairn_run_messages SELECT * FROM ${q}.seed_messages WHERE run_id = $1`, [runId]);
        await client.query(`INSERT INTO ${q}.cairn_run_receipts SELECT * FROM ${q}.seed_receipts WHERE run_id = $1`, [runId]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    async readRows(runId) {
      const client = await pool.connect();
      try {
        const started = performance.now();
        const { rows } = await client.query<{ body: Buffer }>({ ...floor, values: [runId] });
        const ms = performance.now() - started;
        return { ms, rows: rows.length, bytes: rows.reduce((n, r) => n + r.body.length, 0) };
      } finally {
        client.release();
      }
    },
    async close() {
      await pool.query(`DROP SCHEMA IF EXISTS ${q} CASCADE`);
      await pool.end();
    },
    count: countPostgres,
  };
}

interface Sample {
  total: number;
  /** CPU time the process spent meanwhile (user + system, every thread: the GC's helpers and the database client's too), which a busy machine moves far less than the wall clock. */
  cpu: number;
  load: number;
  restore: number;
  saves: number;
  saveCount: number;
  /** The first save alone: on SQLite it is the first commit to the WAL the bench restarted, which also syncs the WAL header and the directory. */
  firstSave: number;
  model: number;
  tool: number;
}

export interface ResumeRow {
  store: StoreKind;
  steps: number;
  resume: Sample;
  withLease: number;
  floor: number;
  floorRows: number;
  floorBytes: number;
  queries: QueryCount;
  queriesWithLease: QueryCount;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Seeds the N-step run on `backend` and returns how to answer its approval. */
async function seed(backend: Backend, steps: number): Promise<{ runId: string; approvals: ApprovalResponse[] }> {
  const runId = `resume-${steps}`;
  const handle = await backend.open();
  try {
    const first = await runAgent(agentOptions(steps, runId, handle.store, null));
    if (first.status !== 'suspended') throw new Error(`resume seed: the ${steps}-step run ended ${first.status}`);
    await backend.keep(runId);
    return { runId, approvals: first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true })) };
  } finally {
    await handle.close();
  }
}

/** Self time per function over the profiled resumes, by store and size (CAIRN_BENCH_RESUME_PROFILE=1). */
const PROFILE = process.env.CAIRN_BENCH_RESUME_PROFILE === '1';
/** With CAIRN_BENCH_RESUME_PROFILE_DIR set too, each profiled resume's profile is written there (for a profile viewer). */
const PROFILE_DIR = process.env.CAIRN_BENCH_RESUME_PROFILE_DIR;
const profiles = new Map<string, { resumes: number; self: Map<string, number> }>();
let profiler: Session | null = null;

async function profiled<T>(key: string, body: () => Promise<T>): Promise<T> {
  if (!PROFILE) return body();
  if (!profiler) {
    profiler = new Session();
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.setSamplingInterval', { interval: 50 });
  }
  await profiler.post('Profiler.start');
  try {
    return await body();
  } finally {
    const { profile } = (await profiler.post('Profiler.stop')) as unknown as { profile: CpuProfile };
    const into = profiles.get(key) ?? { resumes: 0, self: new Map<string, number>() };
    into.resumes++;
    if (PROFILE_DIR) writeFileSync(join(PROFILE_DIR, `resume-${key.replace(/[^a-z0-9]+/gi, '-')}-${into.resumes}.cpuprofile`), JSON.stringify(profile));
    for (const [fn, us] of selfTimes(profile)) into.self.set(fn, (into.self.get(fn) ?? 0) + us);
    profiles.set(key, into);
  }
}

function printProfiles(): void {
  for (const [key, { resumes, self }] of profiles) {
    console.log(`\nProfile of ${key} (${resumes} resumes), self time µs per resume\n`);
    console.log('| function | µs/resume |');
    console.log('| --- | ---: |');
    for (const [fn, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`| ${fn} | ${(us / resumes).toFixed(0)} |`);
  }
}

/** One resume of the restored run on a fresh handle: its phases, and (when asked) the statements it sent. */
async function resumeOnce(backend: Backend, steps: number, run: { runId: string; approvals: ApprovalResponse[] }, lease: boolean, counted = false, profile = false) {
  await backend.restore(run.runId);
  const handle = await backend.open();
  const marks = new Marks();
  const options = agentOptions(steps, run.runId, handle.store, marks);
  const stop = counted ? backend.count(marks) : null;
  let count: QueryCount | undefined;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  let result;
  try {
    const resume = () => resumeAgent({
      ...options,
      approvalResponses: run.approvals,
      ...(lease ? { lease: { provider: handle.leases, owner: 'bench-resumer' } } : {}),
    });
    result = profile ? await profiled(`${backend.kind}, ${steps} steps`, resume) : await resume();
  } finally {
    count = stop?.();
  }
  const total = performance.now() - started;
  const cpuSpent = process.cpuUsage(cpuBefore);
  await handle.close();
  if (result.status !== 'completed') throw new Error(`resume: the ${steps}-step run ended ${result.status} on ${backend.kind}`);
  const sum = (phase: Phase) => marks.spans.filter((s) => s.phase === phase).reduce((n, s) => n + (s.end - s.start), 0);
  const load = marks.spans.find((s) => s.phase === 'load')!;
  const next = marks.spans.find((s) => s.phase !== 'load' && s.start >= load.end);
  const first = marks.spans.find((s) => s.phase === 'save');
  const sample: Sample = {
    total, cpu: (cpuSpent.user + cpuSpent.system) / 1000, load: load.end - load.start, restore: next ? next.start - load.end : 0, saves: sum('save'),
    saveCount: marks.spans.filter((s) => s.phase === 'save').length, model: sum('model'), tool: sum('tool'),
    firstSave: first ? first.end - first.start : 0,
  };
  return { sample, count };
}

async function measureBackend(backend: Backend): Promise<ResumeRow[]> {
  const runs = new Map<number, { runId: string; approvals: ApprovalResponse[] }>();
  for (const steps of SIZES) runs.set(steps, await seed(backend, steps));
  const samples = new Map<number, { plain: Sample[]; lease: number[]; floor: number[]; rows: number; bytes: number }>();
  for (const steps of SIZES) samples.set(steps, { plain: [], lease: [], floor: [], rows: 0, bytes: 0 });
  // Repetitions alternate sizes and variants, so a slower moment of the machine weighs on all alike.
  for (let i = 0; i < WARMUP + TIMED; i++) {
    for (const steps of SIZES) {
      const run = runs.get(steps)!;
      const s = samples.get(steps)!;
      const floor = await backend.readRows(run.runId);
      const plain = await resumeOnce(backend, steps, run, false, false, i >= WARMUP);
      const leased = await resumeOnce(backend, steps, run, true);
      if (i < WARMUP) continue;
      s.floor.push(floor.ms);
      s.rows = floor.rows;
      s.bytes = floor.bytes;
      s.plain.push(plain.sample);
      s.lease.push(leased.sample.total);
    }
  }
  const rows: ResumeRow[] = [];
  for (const steps of SIZES) {
    const run = runs.get(steps)!;
    const s = samples.get(steps)!;
    const queries = (await resumeOnce(backend, steps, run, false, true)).count!;
    const queriesWithLease = (await resumeOnce(backend, steps, run, true, true)).count!;
    const pick = (key: keyof Sample) => median(s.plain.map((p) => p[key]));
    rows.push({
      store: backend.kind,
      steps,
      resume: {
        total: pick('total'), cpu: pick('cpu'), load: pick('load'), restore: pick('restore'), saves: pick('saves'),
        saveCount: pick('saveCount'), firstSave: pick('firstSave'), model: pick('model'), tool: pick('tool'),
      },
      withLease: median(s.lease),
      floor: median(s.floor),
      floorRows: s.rows,
      floorBytes: s.bytes,
      queries,
      queriesWithLease,
    });
  }
  return rows;
}

export async function measureResume(): Promise<{ rows: ResumeRow[]; skipped: string | null }> {
  const rows: ResumeRow[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-resume-'));
  try {
    const sqlite = sqliteBackend(dir);
    try {
      rows.push(...(await measureBackend(sqlite)));
    } finally {
      await sqlite.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  let skipped: string | null = null;
  let postgres: Backend | null = null;
  try {
    postgres = await postgresBackend(POSTGRES_URL);
  } catch (error) {
    skipped = (error as Error).message;
  }
  if (postgres) {
    try {
      rows.push(...(await measureBackend(postgres)));
    } finally {
      await postgres.close();
    }
  }
  return { rows, skipped };
}

const describe = (c: QueryCount) => Object.entries(c.byKind).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${n} ${k}`).join(', ');
const phases = (c: QueryCount) => Object.entries(c.byPhase).map(([k, n]) => `${k} ${n}`).join(', ');

export function printResume({ rows, skipped }: { rows: ResumeRow[]; skipped: string | null }): void {
  const f = (n: number, d = 2) => n.toFixed(d);
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  console.log(
    `\nResume of a suspended run (median of ${TIMED} resumes after ${WARMUP} untimed, each of the same record put back byte for byte), ` +
    'against the floor: the same rows read with a hand-written query on a connection of its own\n',
  );
  console.log('| store | steps before the suspension | resume ms | floor ms (rows, bytes) | resume / floor | statements a resume sends | resume ms with a lease | statements with a lease | target | |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |');
  for (const r of rows) {
    const small = rows.find((o) => o.store === r.store && o.steps === SIZES[0])!;
    const target = r.steps === SIZES[0]
      ? { text: `≤ ${TARGET_MS[r.store]} ms`, ok: r.resume.total <= TARGET_MS[r.store] }
      : { text: `≤ ${TARGET_GROWTH}x N = ${SIZES[0]}: ${f(r.resume.total / small.resume.total)}x`, ok: r.resume.total <= TARGET_GROWTH * small.resume.total };
    console.log(
      `| ${r.store} | ${r.steps.toLocaleString('en')} | ${f(r.resume.total)} | ${f(r.floor, 3)} (${r.floorRows}, ${r.floorBytes.toLocaleString('en')} B) | ` +
      `${f(r.resume.total / r.floor, 1)}x | ${r.queries.total} | ${f(r.withLease)} | ${r.queriesWithLease.total} | ${target.text} | ${verdict(target.ok)} |`,
    );
  }
  if (skipped) console.log(`\npostgres: skipped (${skipped})`);
  console.log(`\nWhere a resume's time goes (ms, medians of the same resumes; restore: from the end of the load to the first save, the record checked, the actors restored, the approval applied)\n`);
  console.log('| store | steps | resume | CPU meanwhile | load | restore | saves (count; the first alone) | tool | model turn | rest of the engine |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    const p = r.resume;
    const rest = p.total - p.load - p.restore - p.saves - p.tool - p.model;
    console.log(`| ${r.store} | ${r.steps.toLocaleString('en')} | ${f(p.total)} | ${f(p.cpu)} | ${f(p.load)} | ${f(p.restore)} | ${f(p.saves)} (${p.saveCount}; ${f(p.firstSave)}) | ${f(p.tool, 3)} | ${f(p.model, 3)} | ${f(rest)} |`);
  }
  console.log('\nStatements a resume sends (SQLite: statements run, BEGIN and COMMIT included; PostgreSQL: queries, one round trip each), by phase and by kind\n');
  console.log('| store | steps | lease | total | by phase | by kind |');
  console.log('| --- | ---: | --- | ---: | --- | --- |');
  for (const r of rows) {
    console.log(`| ${r.store} | ${r.steps.toLocaleString('en')} | no | ${r.queries.total} | ${phases(r.queries)} | ${describe(r.queries)} |`);
    console.log(`| ${r.store} | ${r.steps.toLocaleString('en')} | yes | ${r.queriesWithLease.total} | ${phases(r.queriesWithLease)} | ${describe(r.queriesWithLease)} |`);
  }
  const fixed = (kind: StoreKind) => {
    const of = rows.filter((r) => r.store === kind);
    return of.length === SIZES.length ? verdict(of.every((r) => r.queries.total === of[0]!.queries.total)) : 'not measured';
  };
  printProfiles();
  console.log(`\nA fixed number of statements whatever the run's length: sqlite ${fixed('sqlite')}, postgres ${fixed('postgres')}.`);
  console.log(
    'Timed: one resumeAgent call to its result (load, checks, actor restore, the approval, the deploy tool and its two receipts, ' +
    'one scripted model turn, the completed run saved), on a store handle opened before the timer that never saw the run.',
  );
}

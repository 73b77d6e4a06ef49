/**
 * `npm run bench`: the engine's CPU time per step with no store, for 100- and
 * 1,000-step loops, against a bare XState loop of the same shape (see
 * bench/engine.ts); then durable steps per second of a 100-step tool loop on
 * each store, next to the raw commit rate of that store measured in the same
 * run (one ~2 KB row upserted per transaction), and the bytes a save writes
 * at step 10 and at step 200 of one run. Numbers, not assertions: read the
 * ratios in the tables.
 *
 * Then issue 16's sections: resuming a suspended run (bench/resume.ts), the
 * log bytes a step writes (bench/wal.ts), many runs from several processes
 * (bench/concurrent.ts) and the memory of 100 runs at once (bench/memory.ts);
 * then the cost of tracing a run (bench/tracing.ts).
 *
 *   npm run bench                        every section
 *   npm run bench -- --engine            the engine section alone (or CAIRN_BENCH=engine)
 *   npm run bench -- --durable           the durable tool loop on each store alone (or CAIRN_BENCH=durable)
 *   npm run bench -- --engine --profile  CPU profiles of the engine loop instead (or CAIRN_BENCH=profile)
 *   npm run bench -- --resume --wal --concurrent --memory --tracing --memory-store --workers --redis
 *                                        those sections alone, any of them (or CAIRN_BENCH=resume,wal,...)
 *   npm run bench -- --agent             agent.run against runAgent, same run (bench/agent.ts)
 *   npm run bench -- --mcp               an MCP tool call over stdio through a run against a direct callTool (bench/mcp.ts)
 *   npm run bench -- --handoff           a step driven by a handoff target against a root step (bench/handoff.ts)
 *   npm run bench -- --subagent          a sub-agent's tool step against a root's, commits and time (bench/subagent.ts)
 *   npm run bench -- --memory-run        a tool loop on SQLite with and without memory and chat (bench/memory-run.ts)
 *   npm run bench -- --v3                a V3 step with a two-source context against today's step, and package bytes (bench/v3-run.ts)
 *   npm run bench -- --v3-store          V3 store saves and loads against the run store's, and package bytes (bench/v3-store.ts)
 *   npm run bench -- --versioned         a V3 step with a memory tool write against an ordinary tool's, commits and time; extraction's cost (bench/versioned.ts)
 *   npm run bench -- --swarm             a 10-task DAG by runAgentGroup against the same 10 runs by runAgent (bench/swarm.ts)
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { type AgentRunEnvelope, type AgentRunStore } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { toolLoop, type LoopModel } from './tool-loop.js';
import { measureTracing, printTracing } from './tracing.js';
import { measureAgent, printAgent } from './agent.js';
import { discard, measureEngine, printEngine, profileEngine } from './engine.js';
import { measureResume, printResume } from './resume.js';
import { measureWal, printWal } from './wal.js';
import { measureConcurrent, printConcurrent } from './concurrent.js';
import { measureMemory, printMemory } from './memory.js';
import { measureMemoryStore, printMemoryStore } from './memory-store.js';
import { measureMemoryRun, printMemoryRun } from './memory-run.js';
import { measureWorkers, printWorkers } from './worker-scale.js';
import { measureRedis, printRedis } from './redis.js';
import { measureMcp, printMcp } from './mcp.js';
import { measureHandoff, printHandoff } from './handoff.js';
import { measureSubAgent, printSubAgent } from './subagent.js';
import { measureV3Store, printV3Store } from './v3-store.js';
import { measureV3Run, printV3Run } from './v3-run.js';
import { measureVersioned, printVersioned } from './versioned.js';
import { measureSwarm, printSwarm } from './swarm.js';
import { splitEnvelope } from '../src/stores/write-plan.js';

const STEPS = 100;
/**
 * Loops run before the timed ones, and loops timed. The raw loops warm up too
 * (200 and 100 commits). V8 takes several 100-step loops to optimize the
 * engine's code: consecutive loops on SQLite measured 3.9, 2.2, 1.9, 1.8, 1.6,
 * 1.6, 1.6, 1.6, then 1.1-1.3 ms a step from the ninth on, so fewer warm-ups
 * time the JIT more than a step (three made the figures about 1.4x the steady ones).
 */
const WARMUP_LOOPS = 10;
const TIMED_LOOPS = 5;
/**
 * The scripted model of the durable loops: by default the bare one (bench/tool-loop.ts), which answers and does
 * nothing else, as in the engine, concurrency and memory sections. createMockModel keeps a JSON copy of every request
 * (the whole transcript each step) for tests to assert on: test tooling whose cost grows with the run and is no part
 * of a durable step. CAIRN_BENCH_MODEL=mock times the loops with it instead.
 */
const LOOP_MODEL: LoopModel = process.env.CAIRN_BENCH_MODEL === 'mock' ? 'mock' : 'bare';
/** Commits a step may make and still meet the target (the issue allows two saves per step). */
const ALLOWED_COMMITS_PER_STEP = 2;
/** Issue 16: a durable step costs at most this many times the raw time of those commits. */
const PER_STEP_TARGET = 2.5;

interface Row {
  store: string;
  /** Seconds per step of the LONG_STEPS-step loop. */
  longStepSeconds: number;
  stepsPerSec: number;
  commitsPerStep: number;
  cairnCommitsPerSec: number;
  rawCommitsPerSec: number;
  perCommitRatio: number;
  perStepRatio: number;
  /** Each timed loop's per-step ratio against the raw commits timed right after it, and their median (the target's figure). */
  paired: { ratios: number[]; median: number };
  /** ms per step of the store's saves alone: one loop's envelopes saved again into a fresh run, no engine. */
  savesAloneMs: number;
}

/** Where a step's time goes, measured in the same run: the engine alone, and the engine building every envelope. */
interface Split {
  engineMs: number;
  envelopesMs: number;
}

/** Counts the saves, and nothing else: the timed loops pay for no measuring of their own. */
function countingSaves(inner: AgentRunStore) {
  let saves = 0;
  const store: AgentRunStore = {
    load: (id, o) => inner.load(id, o),
    save(envelope: AgentRunEnvelope, options) {
      saves++;
      return inner.save(envelope, options);
    },
  };
  return { store, saves: () => saves };
}

/**
 * The bytes each save would write (head + appended messages + current receipts), summed by the
 * model step they belong to: the saves of step k (its call's `executing` receipt, then its checkpoint) are the ones
 * whose snapshot's `step` reads k + 1. Untimed.
 */
function countingBytes(inner: AgentRunStore) {
  let storedLength = 0;
  const bytesByStep = new Map<number, number>();
  const store: AgentRunStore = {
    load: (id, o) => inner.load(id, o),
    async save(envelope: AgentRunEnvelope, options) {
      const split = splitEnvelope(envelope, storedLength, envelope.revision === 1);
      storedLength = split.transcriptLength;
      const bytes = split.head.length + split.messages.reduce((n, m) => n + m.bytes.length, 0) + split.receipts.reduce((n, r) => n + r.bytes.length, 0);
      const step = (envelope.snapshot as { context?: { step?: number } }).context?.step ?? 0;
      bytesByStep.set(step - 1, (bytesByStep.get(step - 1) ?? 0) + bytes);
      await inner.save(envelope, options);
    },
  };
  return { store, bytesByStep };
}


/**
 * TIMED_LOOPS loops of STEPS steps, each a new run, after WARMUP_LOOPS untimed
 * ones, on `store` (null: no session, the engine alone): their time and saves
 * per loop.
 */
async function measureLoop(
  store: AgentRunStore | null, label: string, steps = STEPS, warmups = WARMUP_LOOPS, timed = TIMED_LOOPS,
  between?: () => Promise<void>,
) {
  const run = async (on: AgentRunStore | null, name: string) => {
    const result = await toolLoop(on, `bench-${label}-${name}-${Date.now()}`, steps, LOOP_MODEL);
    if (result.status !== 'completed') throw new Error(`${label}: the loop ended ${result.status}`);
  };
  for (let i = 0; i < warmups; i++) await run(store, `warmup-${i}`);
  const counted = store ? countingSaves(store) : null;
  const loops: number[] = [];
  for (let i = 0; i < timed; i++) {
    const started = performance.now();
    await run(counted?.store ?? null, String(i));
    loops.push((performance.now() - started) / 1000);
    // Untimed here: the baseline's own commits, made between this store's loops.
    await between?.();
  }
  return { seconds: loops.reduce((a, b) => a + b, 0) / timed, saves: (counted?.saves() ?? 0) / timed, loops };
}

/** Loops of LONG_STEPS steps on a store, to compare their cost per step with the 100-step loop's (one warm-up, two timed). */
const LONG_STEPS = 1_000;
/** The bound on a step's cost at 1,000 steps against 100. */
const LONG_TARGET = 1.1;
const longLoop = async (store: AgentRunStore, label: string) => (await measureLoop(store, `${label}-long`, LONG_STEPS, 1, 2)).seconds / LONG_STEPS;

/** The engine alone (no session), and the engine with an in-memory store that keeps nothing (every envelope built, none stored). */
async function splitStep(): Promise<Split> {
  const ms = (loop: { seconds: number }) => (loop.seconds * 1000) / STEPS;
  return { engineMs: ms(await measureLoop(null, 'engine')), envelopesMs: ms(await measureLoop(discard, 'envelopes')) };
}

/** The envelopes one loop saves, in order (an untimed loop on a store that keeps nothing). */
async function recordEnvelopes(): Promise<AgentRunEnvelope[]> {
  // Kept as the engine handed them: a store that copied them would read (and so build) their receipts records,
  // which a row store's save never does.
  const envelopes: AgentRunEnvelope[] = [];
  const store: AgentRunStore = {
    load: async () => undefined,
    async save(envelope) {
      envelopes.push(envelope);
    },
  };
  const result = await toolLoop(store, 'recorded', STEPS, LOOP_MODEL);
  if (result.status !== 'completed') throw new Error(`recording: the loop ended ${result.status}`);
  return envelopes;
}

/** `envelope` under another run id, copied by property descriptor: a spread would read (build) its receipts record. */
function withRunId(envelope: AgentRunEnvelope, runId: string): AgentRunEnvelope {
  const descriptors = Object.getOwnPropertyDescriptors(envelope);
  descriptors.runId = { value: runId, writable: true, enumerable: true, configurable: true };
  return Object.defineProperties({}, descriptors) as AgentRunEnvelope;
}

/**
 * The store's saves with no engine: the recorded envelopes saved again, under
 * a new run id per pass, into `store`. What a step would cost if the engine
 * and the envelopes were free: the store's own encoding, planning and commits.
 */
async function savesAlone(store: AgentRunStore, envelopes: AgentRunEnvelope[], label: string): Promise<number> {
  const pass = async (runId: string) => {
    // Copied by property descriptor, not spread: a spread would build each envelope's receipts record.
    for (const envelope of envelopes) await store.save(withRunId(envelope, runId));
  };
  for (let i = 0; i < WARMUP_LOOPS; i++) await pass(`alone-${label}-warmup-${i}-${Date.now()}`);
  const started = performance.now();
  for (let i = 0; i < TIMED_LOOPS; i++) await pass(`alone-${label}-${i}-${Date.now()}`);
  return (performance.now() - started) / TIMED_LOOPS / STEPS;
}

/**
 * A raw committer: one ~2 KB row upserted in a transaction of its own, as
 * fast as the store commits. `commits(n)` makes n of them and returns the
 * seconds they took, so the durable loops can time it between their own
 * loops: the ratio then divides by commits made under the same conditions
 * (these machines' disks and CPUs are shared, and a commit's cost drifts by
 * tens of percent within a minute).
 */
interface RawCommitter {
  commits(n: number): Promise<number>;
  close(): Promise<void>;
}

/** SQLite, WAL, synchronous=FULL: the durable store's own settings. */
function rawSqlite(path: string): RawCommitter {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE IF NOT EXISTS raw (id INTEGER PRIMARY KEY, body BLOB)');
  const upsert = db.prepare('INSERT INTO raw (id, body) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET body = excluded.body');
  const body = randomBytes(2048);
  let i = 0;
  // A different body each time: an upsert of identical bytes dirties no page, so SQLite would commit without a write or an fsync.
  const commit = db.transaction(() => {
    body.writeUInt32LE(i, 0);
    upsert.run(i++ % 50, body);
  });
  // Warmed up until its log has wrapped: a WAL file still growing makes each fsync also write the file's new size
  // (measured here: 0.29-0.44 ms a commit while it grows, 0.165 ms once SQLite writes over the frames a checkpoint
  // freed), and the store's own file, warmed by its loops, is long past that. So both sides commit into a log that
  // is reused. (Until it stops growing, or at most 20,000 commits.)
  const wal = `${path}-wal`;
  for (let k = 0, size = -1; k < 20_000; k += 100) {
    for (let j = 0; j < 100; j++) commit();
    const now = statSync(wal).size;
    if (now === size) break;
    size = now;
  }
  return {
    async commits(n) {
      const started = performance.now();
      for (let k = 0; k < n; k++) commit();
      return (performance.now() - started) / 1000;
    },
    async close() {
      db.close();
    },
  };
}

/** Raw commits on a real (logged) table: a TEMP table writes no WAL, so its commits would not wait for the disk. */
async function rawPostgres(url: string): Promise<RawCommitter> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const table = `cairn_bench_raw_${process.pid}`;
  await client.query(`CREATE TABLE ${table} (id int PRIMARY KEY, body bytea)`);
  const body = randomBytes(2048);
  const upsert = `INSERT INTO ${table} (id, body) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET body = excluded.body`;
  let i = 0;
  // One prepared statement in autocommit: its own transaction, one round trip. (BEGIN and COMMIT sent
  // apart would add two round trips that are no part of a commit's cost, and flatter every ratio.)
  const commit = async () => {
    body.writeUInt32LE(i, 0);
    await client.query({ name: 'raw-upsert', text: upsert, values: [i++ % 50, body] });
  };
  for (let k = 0; k < 100; k++) await commit();
  return {
    async commits(n) {
      const started = performance.now();
      for (let k = 0; k < n; k++) await commit();
      return (performance.now() - started) / 1000;
    },
    async close() {
      await client.query(`DROP TABLE ${table}`);
      await client.end();
    },
  };
}

/** Raw commits timed after each timed loop: about a loop's worth of commits. */
const RAW_COMMITS_PER_LOOP = 2 * STEPS;
/**
 * Raw commits made untimed first: right after a loop the disk is still settling its writes, and the first 200
 * raw commits on SQLite measured 5-30% slower than the next 200 (which flattered the ratio of that loop).
 */
const RAW_SETTLE_COMMITS = 100;

/** Times raw commits between the timed loops, and gives their rate over all of them. */
function interleaved(raw: RawCommitter) {
  /** Seconds per raw commit of each block, in order: block i was timed right after timed loop i. */
  const blocks: number[] = [];
  return {
    async between() {
      await raw.commits(RAW_SETTLE_COMMITS);
      blocks.push((await raw.commits(RAW_COMMITS_PER_LOOP)) / RAW_COMMITS_PER_LOOP);
    },
    rate: () => blocks.length / blocks.reduce((a, b) => a + b, 0),
    blocks,
  };
}

/**
 * The per-step ratio of each timed loop against the raw commits timed right after it, and their median: a loop
 * the machine slowed (another tenant's disk or CPU) moves one pair, not the figure.
 */
function pairedRatios(loops: readonly number[], blocks: readonly number[]): { ratios: number[]; median: number } {
  const ratios = loops.map((seconds, i) => seconds / STEPS / (ALLOWED_COMMITS_PER_STEP * blocks[i]!));
  const sorted = [...ratios].sort((a, b) => a - b);
  return { ratios, median: sorted[sorted.length >> 1]! };
}

function row(
  store: string, loop: { seconds: number; saves: number; loops: number[] }, raw: { rate(): number; blocks: number[] },
  savesAloneMs: number, longStepSeconds: number,
): Row {
  const paired = pairedRatios(loop.loops, raw.blocks);
  const rawCommitsPerSec = raw.rate();
  const stepsPerSec = STEPS / loop.seconds;
  const commitsPerStep = loop.saves / STEPS;
  const cairnCommitsPerSec = loop.saves / loop.seconds;
  return {
    store,
    longStepSeconds,
    stepsPerSec,
    commitsPerStep,
    cairnCommitsPerSec,
    rawCommitsPerSec,
    // Cairn's cost per commit against the raw cost per commit (1.0 = no overhead).
    perCommitRatio: rawCommitsPerSec / cairnCommitsPerSec,
    // Cairn's cost per step against the raw cost of the two commits a step is allowed.
    perStepRatio: rawCommitsPerSec / (ALLOWED_COMMITS_PER_STEP * stepsPerSec),
    paired,
    savesAloneMs,
  };
}

async function bytesGrowth(): Promise<{ at10: number; at200: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-bytes-'));
  try {
    const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
    const counted = countingBytes(ops.agentRuns);
    await toolLoop(counted.store, 'bytes', 200);
    ops.close();
    // Step 200 is the 200th step, model step 199; each is a step's two saves.
    const at = (step: number) => counted.bytesByStep.get(step) ?? 0;
    return { at10: at(10), at200: at(199) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Issue 16's sections, in the order the full run prints them after the others. */
const SECTIONS = {
  resume: async () => printResume(await measureResume()),
  wal: async () => printWal(await measureWal()),
  concurrent: async () => printConcurrent(await measureConcurrent()),
  memory: async () => printMemory(await measureMemory()),
  tracing: async () => printTracing(await measureTracing()),
  agent: async () => printAgent(await measureAgent()),
  'memory-store': async () => printMemoryStore(await measureMemoryStore()),
  'memory-run': async () => printMemoryRun(await measureMemoryRun()),
  workers: async () => printWorkers(await measureWorkers()),
  redis: async () => printRedis(await measureRedis()),
  mcp: async () => printMcp(await measureMcp()),
  handoff: async () => printHandoff(await measureHandoff()),
  subagent: async () => printSubAgent(await measureSubAgent()),
  'v3-store': async () => printV3Store(await measureV3Store()),
  v3: async () => printV3Run(await measureV3Run()),
  versioned: async () => printVersioned(await measureVersioned()),
  swarm: async () => printSwarm(await measureSwarm()),
} as const;
type SectionName = keyof typeof SECTIONS;

/** Runs one of issue 16's sections and says under what load average it ran. */
async function section(name: SectionName): Promise<void> {
  const before = loadavg();
  const started = performance.now();
  await SECTIONS[name]();
  const after = loadavg();
  const f = (l: number[]) => l.map((n) => n.toFixed(2)).join(' / ');
  console.log(`\n(${name}: ${((performance.now() - started) / 1000).toFixed(0)} s; load average 1 / 5 / 15 min before ${f(before)}, after ${f(after)})`);
}

async function main() {
  const args = process.argv.slice(2);
  const only = process.env.CAIRN_BENCH;
  if (args.includes('--profile') || only === 'profile') {
    await profileEngine();
    return;
  }
  const wanted = new Set(only?.split(',').map((s) => s.trim()) ?? []);
  const chosen = (Object.keys(SECTIONS) as SectionName[]).filter((name) => args.includes(`--${name}`) || wanted.has(name));
  if (chosen.length > 0) {
    if (args.includes('--engine') || wanted.has('engine')) printEngine(await measureEngine());
    for (const name of chosen) await section(name);
    return;
  }
  if (args.includes('--durable') || wanted.has('durable')) {
    await durable();
    return;
  }
  printEngine(await measureEngine());
  if (args.includes('--engine') || only === 'engine') return;
  await durable();
  for (const name of Object.keys(SECTIONS) as SectionName[]) await section(name);
}

/**
 * On one store: the timed loops with `raw`'s commits timed between them, the saves alone, and the long loops.
 * `raw` is closed whatever happens (PostgreSQL's raw table lives outside the bench's schema).
 */
async function measureStore(store: AgentRunStore, label: string, envelopes: AgentRunEnvelope[], raw: RawCommitter) {
  const commits = interleaved(raw);
  try {
    const loop = await measureLoop(store, label, STEPS, WARMUP_LOOPS, TIMED_LOOPS, commits.between);
    const alone = await savesAlone(store, envelopes, label);
    const long = await longLoop(store, label);
    return { loop, commits, alone, long };
  } finally {
    await raw.close();
  }
}

/** The durable tool loop on each store against its raw commits, where a step's time goes, and a save's bytes. */
async function durable() {
  const before = loadavg();
  const rows: Row[] = [];
  // Run first, these loops warm the engine's code for the store loops; the figures printed are of a second run after
  // them. Measured first, the engine's figure was of code V8 had not finished optimizing: 0.59 ms a step, against
  // 0.18 ms of CPU in the engine section (60 untimed loops first) and about 0.2 ms once warm here.
  await splitStep();
  const envelopes = await recordEnvelopes();
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-'));
  try {
    const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
    const { loop, commits, alone, long } = await measureStore(ops.agentRuns, 'sqlite', envelopes, rawSqlite(join(dir, 'raw.sqlite')));
    ops.close();
    rows.push(row('sqlite (synchronous=FULL)', loop, commits, alone, long));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const url = process.env.CAIRN_TEST_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/test';
  try {
    const schema = `cairn_bench_${Date.now()}`;
    const ops = createPostgresOpsStore({ connectionString: url }, { schema });
    await ops.setup();
    const { loop, commits, alone, long } = await measureStore(ops.agentRuns, 'pg', envelopes, await rawPostgres(url));
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await ops.close();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
    rows.push(row('postgres', loop, commits, alone, long));
  } catch (error) {
    console.log(`postgres: skipped (${(error as Error).message})`);
  }
  const split = await splitStep();
  const bytes = await bytesGrowth();
  const f = (n: number, d = 1) => n.toFixed(d);
  console.log(`\nDurable tool loop, ${STEPS} steps (one tool call per step; mean of ${TIMED_LOOPS} loops after ${WARMUP_LOOPS} untimed), against the raw commit rate of the same store (${RAW_COMMITS_PER_LOOP} raw commits timed after each timed loop and ${RAW_SETTLE_COMMITS} untimed ones, so both are measured under the same conditions)\n`);
  console.log(`| store | steps/s | commits/step | Cairn commits/s | raw commits/s (2 KB upsert) | per-commit cost ratio | per-step cost ratio (vs ${ALLOWED_COMMITS_PER_STEP} raw commits) |`);
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    console.log(`| ${r.store} | ${f(r.stepsPerSec)} | ${f(r.commitsPerStep, 2)} | ${f(r.cairnCommitsPerSec)} | ${f(r.rawCommitsPerSec)} | ${f(r.perCommitRatio, 2)}x | ${f(r.perStepRatio, 2)}x |`);
  }
  const perStepTarget = (r: Row) => r.paired.median <= PER_STEP_TARGET ? 'met' : 'NOT met';
  console.log(`\nTargets: a step at most ${PER_STEP_TARGET}x the raw time of ${ALLOWED_COMMITS_PER_STEP} commits of its store (checked on the median of the ${TIMED_LOOPS} timed loops, each against the raw commits timed right after it), and a step of a ${LONG_STEPS.toLocaleString('en')}-step loop within ${LONG_TARGET}x of one of the ${STEPS}-step loop\n`);
  console.log(`| store | per-step ratio, median of the pairs | each pair | target ${PER_STEP_TARGET}x | ms per step at N = ${STEPS} | at N = ${LONG_STEPS.toLocaleString('en')} | ratio | target ${LONG_TARGET}x |`);
  console.log('| --- | ---: | --- | --- | ---: | ---: | ---: | --- |');
  for (const r of rows) {
    const longRatio = (r.longStepSeconds * r.stepsPerSec);
    console.log(`| ${r.store} | ${f(r.paired.median, 2)}x | ${r.paired.ratios.map((x) => f(x, 2)).join(', ')} | ${perStepTarget(r)} | ${f(1000 / r.stepsPerSec, 3)} | ${f(r.longStepSeconds * 1000, 3)} | ${f(longRatio, 2)}x | ${longRatio <= LONG_TARGET ? 'met' : 'NOT met'} |`);
  }
  console.log(`\nWhere a step's time goes (ms per step, same run). engine: no session (measured after the store loops, on warm code); + envelopes: every envelope built, none stored; store saves alone: one loop's envelopes saved again with no engine running; floor: the per-step ratio if the engine and the envelopes cost nothing\n`);
  console.log(`| store | step | engine | + envelopes | store saves alone | ${ALLOWED_COMMITS_PER_STEP} raw commits | floor ratio |`);
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    const rawMs = (ALLOWED_COMMITS_PER_STEP * 1000) / r.rawCommitsPerSec;
    console.log(`| ${r.store} | ${f(1000 / r.stepsPerSec, 3)} | ${f(split.engineMs, 3)} | ${f(split.envelopesMs, 3)} | ${f(r.savesAloneMs, 3)} | ${f(rawMs, 3)} | ${f(r.savesAloneMs / rawMs, 2)}x |`);
  }
  console.log(`\nBytes written by one step's saves: step 10 ${bytes.at10} B, step 200 ${bytes.at200} B, ratio ${f(bytes.at200 / bytes.at10, 2)} (target ≤ 1.5)`);
  console.log(`Per-commit ratio: Cairn's time per commit over the raw time per commit. Per-step ratio: Cairn's time per step over the raw time of ${ALLOWED_COMMITS_PER_STEP} commits (target ≤ ${PER_STEP_TARGET}); the first table's ratios are of the means over all timed loops and raw commits.`);
  const g = (l: number[]) => l.map((n) => n.toFixed(2)).join(' / ');
  console.log(`(durable: load average 1 / 5 / 15 min before ${g(before)}, after ${g(loadavg())})`);
}

await main();

/**
 * `npm run bench:peers`: Cairn against LangGraph.js on the same durable tool
 * loop, in one process, the two alternating loop by loop. See README.md here
 * for what is timed on each side and how to read the tables.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { createInMemoryAgentRunStore } from 'cairn/agent';
import { MemorySaver } from '@langchain/langgraph';
import { cairnLoop, cairnPostgres, cairnResume, cairnSuspend, cairnDeployed, openCairnSqlite } from './cairn.mjs';
import {
  buildGraph, deployed as langgraphDeployed, langgraphLoop, langgraphPg, LanggraphDatabase, langgraphResume, langgraphSuspend,
  openPool, openSqliteSaver, postgresSaver,
} from './langgraph.mjs';
import { countDrivers, newTally } from './count.mjs';

const N = 100;
/** Timed loops of each contender per store (alternating), after the untimed ones. */
const ROUNDS = 5;
/**
 * Untimed loops of each contender before timing, per store: as many as fit in
 * this time, at least one, so each side's code is compiled by V8 for about as
 * long (a Cairn loop is much shorter, so it gets more of them). Cairn's step
 * reaches its steady cost after about eight 100-step loops (see
 * WARMUP_LOOPS in bench/index.ts), about 2 s here; 1.5 s timed it still warming.
 */
const WARMUP_MS = 3000;
/** Timed resumes of each contender per store, after one untimed. */
const RESUMES = 3;
const TARGET = { step: 6, resume: 4 };
const MODES = ['sync', 'async'];
/** The repository's test database (trust auth on loopback); a URL without a user connects as the OS user, as psql does. */
const POSTGRES_URL = withUser(process.env.CAIRN_TEST_POSTGRES_URL ?? 'postgres://127.0.0.1:5432/test');

function withUser(url) {
  const parsed = new URL(url);
  if (!parsed.username) parsed.username = process.env.PGUSER ?? userInfo().username;
  return parsed.toString();
}

// No LangSmith tracing (it would send every run over the network): this process only.
for (const name of ['LANGSMITH_TRACING', 'LANGCHAIN_TRACING_V2', 'LANGCHAIN_TRACING']) delete process.env[name];

const rootRequire = createRequire(new URL('../../package.json', import.meta.url));
const peersRequire = createRequire(import.meta.url);
const version = (require, name) => JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')).version;

let counting = null;
countDrivers(() => counting);

let seq = 0;
const id = (label) => `${label}-${process.pid}-${++seq}`;

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/**
 * A store's contenders: Cairn and LangGraph in each durability mode, each with
 * a loop, a way to make a suspended run, and a resume on a handle opened anew.
 */
function contenders(handles) {
  const list = [{
    name: 'Cairn',
    side: 'cairn',
    loop: (runId) => cairnLoop(handles.cairn, runId, N),
    suspend: (runId) => cairnSuspend(handles.cairn, runId, N),
    resume: async (runId, verdict, tally) => {
      const fresh = await handles.freshCairn();
      try {
        counting = tally;
        const started = performance.now();
        await cairnResume(fresh.store, runId, N, verdict);
        return performance.now() - started;
      } finally {
        counting = null;
        await fresh.close();
      }
    },
  }];
  for (const mode of MODES) {
    const graph = buildGraph(handles.langgraph, N, false);
    const suspending = buildGraph(handles.langgraph, N, true);
    list.push({
      name: `LangGraph (durability ${mode}${mode === 'async' ? ', its default' : ''})`,
      side: 'langgraph',
      mode,
      loop: (threadId) => langgraphLoop(graph, threadId, N, mode),
      suspend: (threadId) => langgraphSuspend(suspending, threadId, N, mode),
      resume: async (threadId, _verdict, tally) => {
        const fresh = await handles.freshLanggraph();
        try {
          const resuming = buildGraph(fresh.saver, N, true);
          counting = tally;
          const started = performance.now();
          await langgraphResume(resuming, threadId, N, mode);
          return performance.now() - started;
        } finally {
          counting = null;
          await fresh.close();
        }
      },
    });
  }
  return list;
}

/** Per-step loops: warm-up (the first one counted at the driver), then ROUNDS rounds, the order reversed every other round. */
async function measureSteps(kind, list) {
  for (const c of list) {
    const warmStart = performance.now();
    c.tally = newTally();
    counting = c.tally;
    try {
      await c.loop(id(`${kind}-count`));
    } finally {
      counting = null;
    }
    while (performance.now() - warmStart < WARMUP_MS) await c.loop(id(`${kind}-warm`));
    c.stepMs = [];
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 ? [...list].reverse() : list;
    for (const c of order) {
      const started = performance.now();
      await c.loop(id(`${kind}-loop`));
      c.stepMs.push((performance.now() - started) / N);
    }
  }
}

/** Resumes: every contender's suspended runs made first (untimed), then one untimed resume each and RESUMES rounds, alternating. */
async function measureResumes(kind, list) {
  for (const c of list) {
    c.suspended = [];
    for (let i = 0; i < RESUMES + 1; i++) {
      const runId = id(`${kind}-suspended`);
      c.suspended.push({ runId, verdict: await c.suspend(runId) });
    }
    c.resumeMs = [];
  }
  for (let round = 0; round < RESUMES + 1; round++) {
    const order = round % 2 ? [...list].reverse() : list;
    for (const c of order) {
      const { runId, verdict } = c.suspended[round];
      // The untimed first resume is counted at the driver (the fresh handle's opening is not: it runs before the count starts).
      if (round === 0) c.resumeTally = newTally();
      const ms = await c.resume(runId, verdict, round === 0 ? c.resumeTally : null);
      if (round > 0) c.resumeMs.push(ms);
    }
  }
}

async function benchStore(kind, label, handles) {
  const list = contenders(handles);
  const deployedBefore = { cairn: cairnDeployed.count, langgraph: langgraphDeployed.count };
  await measureSteps(kind, list);
  await measureResumes(kind, list);
  const resumes = RESUMES + 1;
  if (cairnDeployed.count - deployedBefore.cairn !== resumes || langgraphDeployed.count - deployedBefore.langgraph !== resumes * MODES.length) {
    throw new Error(`${label}: deploy ran ${cairnDeployed.count - deployedBefore.cairn} (Cairn) and ${langgraphDeployed.count - deployedBefore.langgraph} (LangGraph) times, expected once a resume`);
  }
  // The figures only: a contender's closures hold its store, and an in-memory store holds every run it saved
  // (LangGraph's MemorySaver every checkpoint), which would stay in the heap the later sections collect.
  return { label, list: list.map(({ name, side, mode, stepMs, resumeMs, tally, resumeTally }) => ({ name, side, mode, stepMs, resumeMs, tally, resumeTally })) };
}

function sqliteHandles(dir) {
  const cairnPath = join(dir, 'cairn.sqlite');
  const langgraphPath = join(dir, 'langgraph.sqlite');
  const cairn = openCairnSqlite(cairnPath);
  const langgraph = openSqliteSaver(langgraphPath);
  return {
    cairn: cairn.store,
    langgraph: langgraph.saver,
    freshCairn: async () => openCairnSqlite(cairnPath),
    freshLanggraph: async () => openSqliteSaver(langgraphPath),
    close: async () => {
      cairn.close();
      langgraph.close();
    },
  };
}

function memoryHandles() {
  const cairn = createInMemoryAgentRunStore();
  const langgraph = new MemorySaver();
  return {
    cairn,
    langgraph,
    freshCairn: async () => ({ store: cairn, close: async () => undefined }),
    freshLanggraph: async () => ({ saver: langgraph, close: async () => undefined }),
    close: async () => undefined,
  };
}

/** Each side on its own pool of its own pg copy, in its own new schema; a resume gets a new pool with two connections open. */
async function postgresHandles(schemas) {
  const rootPg = rootRequire('pg');
  const cairnPool = async () => {
    const pool = new rootPg.Pool({ connectionString: POSTGRES_URL });
    pool.on('error', () => undefined);
    const clients = await Promise.all([pool.connect(), pool.connect()]);
    for (const client of clients) client.release();
    return pool;
  };
  const pools = { cairn: await cairnPool(), langgraph: await openPool(POSTGRES_URL) };
  const cairn = cairnPostgres(pools.cairn, schemas.cairn);
  await cairn.setup();
  const langgraph = postgresSaver(pools.langgraph, schemas.langgraph);
  await langgraph.setup();
  return {
    cairn: cairn.store,
    langgraph,
    freshCairn: async () => {
      const pool = await cairnPool();
      const fresh = cairnPostgres(pool, schemas.cairn);
      return { store: fresh.store, close: async () => { await fresh.close(); await pool.end(); } };
    },
    freshLanggraph: async () => {
      const pool = await openPool(POSTGRES_URL);
      return { saver: postgresSaver(pool, schemas.langgraph), close: () => pool.end() };
    },
    close: async () => {
      await cairn.close();
      await pools.cairn.end();
      await pools.langgraph.end();
    },
  };
}

/** A client of this package's pg, or null (and a notice) when PostgreSQL does not answer. */
async function postgresAdmin() {
  const client = new langgraphPg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return client;
  } catch (error) {
    console.log(`\nPostgreSQL at ${POSTGRES_URL} is unreachable (${error.message}): the PostgreSQL rows are skipped.`);
    await client.end().catch(() => undefined);
    return null;
  }
}

const f = (n, d = 1) => n.toFixed(d);
const int = (n) => Math.round(n).toLocaleString('en-US');
const us = (ms) => int(ms * 1000);
const verdict = (label, ratio, target) => (label === 'in memory' ? 'no target' : ratio >= target ? 'met' : 'not met');
const load = () => loadavg().map((n) => n.toFixed(2)).join(', ');

function printTables(results) {
  console.log(`\n## Per step, N = ${N} (median of ${ROUNDS} loops each, after untimed ones; Cairn and LangGraph alternate loop by loop)\n`);
  console.log(`| store | LangGraph durability | Cairn µs/step | LangGraph µs/step | ratio (LangGraph/Cairn) | ratio range (per round) | target ≥ ${TARGET.step}x |`);
  console.log('| --- | --- | ---: | ---: | ---: | ---: | --- |');
  for (const { label, list } of results) {
    const [cairn, ...peers] = list;
    for (const peer of peers) {
      const ratio = median(peer.stepMs) / median(cairn.stepMs);
      const rounds = peer.stepMs.map((ms, i) => ms / cairn.stepMs[i]);
      console.log(`| ${label} | ${peer.mode} | ${us(median(cairn.stepMs))} | ${us(median(peer.stepMs))} | ${f(ratio, 2)}x | ${f(Math.min(...rounds), 2)}–${f(Math.max(...rounds), 2)}x | ${verdict(label, ratio, TARGET.step)} |`);
    }
  }
  console.log(`\n## Resume of a suspended ${N}-step run (median of ${RESUMES} resumes each, after an untimed one; alternating)\n`);
  console.log(`| store | LangGraph durability | Cairn ms | LangGraph ms | ratio (LangGraph/Cairn) | ratio range (per round) | target ≥ ${TARGET.resume}x |`);
  console.log('| --- | --- | ---: | ---: | ---: | ---: | --- |');
  for (const { label, list } of results) {
    const [cairn, ...peers] = list;
    for (const peer of peers) {
      const ratio = median(peer.resumeMs) / median(cairn.resumeMs);
      const rounds = peer.resumeMs.map((ms, i) => ms / cairn.resumeMs[i]);
      console.log(`| ${label} | ${peer.mode} | ${f(median(cairn.resumeMs), 2)} | ${f(median(peer.resumeMs), 2)} | ${f(ratio, 2)}x | ${f(Math.min(...rounds), 2)}–${f(Math.max(...rounds), 2)}x | ${verdict(label, ratio, TARGET.resume)} |`);
    }
  }
  console.log('\n## Targets, against LangGraph\'s faster durability mode on each store\n');
  for (const { label, list } of results) {
    if (label === 'in memory') continue;
    const [cairn, ...peers] = list;
    const worst = (key) => Math.min(...peers.map((peer) => median(peer[key]) / median(cairn[key])));
    const step = worst('stepMs');
    const resume = worst('resumeMs');
    console.log(`- ${label}: per step ${f(step, 2)}x (target ${TARGET.step}x ${step >= TARGET.step ? 'met' : 'not met'}), resume ${f(resume, 2)}x (target ${TARGET.resume}x ${resume >= TARGET.resume ? 'met' : 'not met'})`);
  }
  console.log(`\n## What a step sends to the store (one untimed ${N}-step loop each, counted at the driver, divided by ${N})\n`);
  console.log('| store | side | commits/step | statements/step (PostgreSQL: round trips) | writes/step | bytes of written parameters/step |');
  console.log('| --- | --- | ---: | ---: | ---: | ---: |');
  for (const { label, list } of results) {
    if (label === 'in memory') continue;
    for (const c of list) {
      const t = c.tally;
      console.log(`| ${label} | ${c.name} | ${f(t.commits / N, 2)} | ${f(t.statements / N, 2)} | ${f(t.writes / N, 2)} | ${int(t.writeBytes / N)} |`);
    }
  }
  console.log('\n## What a resume sends to the store (the untimed first resume of each, counted at the driver)\n');
  console.log('| store | side | commits | statements (PostgreSQL: round trips) | writes | bytes of written parameters |');
  console.log('| --- | --- | ---: | ---: | ---: | ---: |');
  for (const { label, list } of results) {
    if (label === 'in memory') continue;
    for (const c of list) {
      const t = c.resumeTally;
      console.log(`| ${label} | ${c.name} | ${t.commits} | ${t.statements} | ${t.writes} | ${int(t.writeBytes)} |`);
    }
  }
}

async function main() {
  const started = performance.now();
  const startLoad = load();
  const sqliteVersion = (Db) => {
    const db = new Db(':memory:');
    const v = db.prepare('SELECT sqlite_version() AS v').get().v;
    db.close();
    return v;
  };
  console.log(`# Cairn vs LangGraph.js, the same durable tool loop (${N} steps: a scripted model turn calling one tool that returns ~200 bytes at once, then the answer)\n`);
  console.log(`Node ${process.version}, ${cpus().length} CPUs. @langchain/langgraph ${version(peersRequire, '@langchain/langgraph')}, @langchain/core ${version(peersRequire, '@langchain/core')}, ` +
    `checkpoint-sqlite ${version(peersRequire, '@langchain/langgraph-checkpoint-sqlite')}, checkpoint-postgres ${version(peersRequire, '@langchain/langgraph-checkpoint-postgres')}; ` +
    `xstate ${version(rootRequire, 'xstate')}. SQLite ${sqliteVersion(rootRequire('better-sqlite3'))} (Cairn's better-sqlite3 ${version(rootRequire, 'better-sqlite3')}), ` +
    `${sqliteVersion(LanggraphDatabase)} (LangGraph's ${version(peersRequire, 'better-sqlite3')}); both WAL, synchronous=FULL.`);
  console.log(`Load average at start: ${startLoad}`);

  const results = [];
  results.push(await benchStore('memory', 'in memory', memoryHandles()));

  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-peers-'));
  try {
    const handles = sqliteHandles(dir);
    try {
      results.push(await benchStore('sqlite', 'SQLite', handles));
    } finally {
      await handles.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const admin = await postgresAdmin();
  if (admin) {
    const serverVersion = (await admin.query('SHOW server_version')).rows[0].server_version;
    console.log(`PostgreSQL ${serverVersion} at ${POSTGRES_URL}.`);
    const stamp = `${Date.now()}_${process.pid}`;
    const schemas = { cairn: `cairn_peers_${stamp}`, langgraph: `langgraph_peers_${stamp}` };
    let handles;
    try {
      handles = await postgresHandles(schemas);
      results.push(await benchStore('postgres', 'PostgreSQL', handles));
    } finally {
      await handles?.close();
      for (const schema of Object.values(schemas)) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    }
  }

  printTables(results);
  console.log(`\nLoad average (1, 5, 15 min) at start: ${startLoad}; at end: ${load()}. The run took ${f((performance.now() - started) / 1000, 0)} s.`);
  console.log('Targets (issue 16): Cairn ≥ 6x faster per step and ≥ 4x faster to resume than LangGraph.js at N = 100 on both stores. "in memory" (no store: Cairn\'s in-memory store, LangGraph\'s MemorySaver) is each engine alone, for reading where the time goes; it has no target.');
}

await main();

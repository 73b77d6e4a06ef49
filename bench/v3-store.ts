/**
 * `npm run bench -- --v3-store`: what a V3 store costs against today's run
 * store, on SQLite and PostgreSQL (docs/v3.md, decision 011).
 *
 * 1. The saves of one recorded 50-step tool loop (the engine's envelopes, in
 *    order), saved again into a fresh run of each store, then loaded: the
 *    ops run store with the envelopes as they are, the V3 store with each
 *    envelope as a V3 run would store it (version 3, a context step per model
 *    step, the step's package in the save). Rounds alternate between the two,
 *    so the machine's noise falls on both; the table gives the medians.
 * 2. Stored package bytes after runs of 10 and 50 steps whose steps send 1 or
 *    5 distinct packages: the bytes follow the distinct packages, not the steps.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { contextBlobDigest, type AgentRunEnvelope, type AgentRunEnvelopeV3, type AgentRunStore, type AgentRunStoreV3, type ContextBlobInput } from 'cairn/agent';
import { createPostgresAgentRunStoreV3, createPostgresOpsStore } from 'cairn/ops/postgres';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore } from 'cairn/ops/sqlite';
import { toolLoop } from './tool-loop.js';

const STEPS = 50;
const ROUNDS = 9;
const WARMUP = 2;

/** A package about the size of two retrieved passages. */
function pkg(n: number): ContextBlobInput {
  const blocks = [{ type: 'retrieval', index: 0, text: `Passage ${n}: ${'Deploys need a green CI run. '.repeat(35)}` },
    { type: 'retrieval', index: 1, text: `Passage ${n}b: ${'Roll back from the release page. '.repeat(30)}` }];
  return { digest: contextBlobDigest(blocks), content: { blocks } };
}

/** The envelopes one loop saves, in order, as JSON (so they can be re-dressed as V3 records). */
async function recordEnvelopes(): Promise<AgentRunEnvelope[]> {
  const envelopes: AgentRunEnvelope[] = [];
  const store: AgentRunStore = { load: async () => undefined, save: async (e) => void envelopes.push(JSON.parse(JSON.stringify(e))) };
  const result = await toolLoop(store, 'recorded', STEPS, 'bare');
  if (result.status !== 'completed') throw new Error(`recording: the loop ended ${result.status}`);
  return envelopes;
}

/** Step k's package: one of `distinct` packages, in turn. */
const packageOf = (k: number, distinct: number) => pkg(k % distinct);

/** The V3 record of a save: version 3 and one context step per model step so far. */
function asV3(envelope: AgentRunEnvelope, runId: string, distinct: number): { record: AgentRunEnvelopeV3; blobs: ContextBlobInput[] } {
  const step = Number((envelope.snapshot as { context?: { step?: unknown } }).context?.step ?? 0) || 0;
  const steps = Array.from({ length: step + 1 }, (_, k) => ({
    step: k, phase: 'loop' as const, blob: { digest: packageOf(k, distinct).digest }, manifest: { refresh: k === 0 ? 'initial' : 'step' },
  }));
  return { record: { ...envelope, runId, version: 3, context: { steps } }, blobs: [packageOf(step, distinct)] };
}

interface Pair {
  saveMs: { current: number; v3: number };
  loadMs: { current: number; v3: number };
  /** Bytes of the head row after the last save (the transcript and receipts are rows of their own). */
  v3RecordBytes: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function timeStores(current: AgentRunStore, v3: AgentRunStoreV3, envelopes: AgentRunEnvelope[], label: string) {
  const saves = { current: [] as number[], v3: [] as number[] };
  const loads = { current: [] as number[], v3: [] as number[] };
  for (let round = 0; round < WARMUP + ROUNDS; round++) {
    const runId = `${label}-${round}-${Date.now()}`;
    let started = performance.now();
    for (const envelope of envelopes) await current.save({ ...envelope, runId });
    const currentSave = (performance.now() - started) / envelopes.length;
    started = performance.now();
    await current.load(runId);
    const currentLoad = performance.now() - started;
    started = performance.now();
    for (const envelope of envelopes) {
      const { record, blobs } = asV3(envelope, runId, 1);
      await v3.save(record, { blobs });
    }
    const v3Save = (performance.now() - started) / envelopes.length;
    started = performance.now();
    await v3.load(runId);
    const v3Load = performance.now() - started;
    if (round >= WARMUP) {
      saves.current.push(currentSave);
      saves.v3.push(v3Save);
      loads.current.push(currentLoad);
      loads.v3.push(v3Load);
    }
  }
  return {
    saveMs: { current: median(saves.current), v3: median(saves.v3) },
    loadMs: { current: median(loads.current), v3: median(loads.v3) },
  };
}

/** Package bytes stored after one run of `steps` steps sending `distinct` packages, on a fresh V3 store. */
async function packageBytes(open: () => Promise<{ store: AgentRunStoreV3; bytes(): Promise<number>; close(): Promise<void> }>, envelopes: AgentRunEnvelope[]) {
  const rows: { steps: number; distinct: number; bytes: number }[] = [];
  for (const [steps, distinct] of [[10, 1], [50, 1], [10, 5], [50, 5]] as const) {
    const { store, bytes, close } = await open();
    const upTo = envelopes.filter((e) => Number((e.snapshot as { context?: { step?: unknown } }).context?.step ?? 0) < steps);
    for (const [i, envelope] of upTo.entries()) {
      const { record, blobs } = asV3({ ...envelope, revision: i + 1 }, 'bytes', distinct);
      await store.save(record, { blobs });
    }
    rows.push({ steps, distinct, bytes: await bytes() });
    await close();
  }
  return rows;
}

export interface V3StoreFigures {
  saves: number;
  backends: ({ backend: string } & Omit<Pair, 'v3RecordBytes'> & { v3RecordBytes: number })[];
  bytes: { backend: string; rows: { steps: number; distinct: number; bytes: number }[] }[];
  skipped: string[];
}

export async function measureV3Store(): Promise<V3StoreFigures> {
  const envelopes = await recordEnvelopes();
  const figures: V3StoreFigures = { saves: envelopes.length, backends: [], bytes: [], skipped: [] };
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-v3-'));
  try {
    const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
    const v3 = createSqliteAgentRunStoreV3(ops);
    const timed = await timeStores(ops.agentRuns, v3, envelopes, 'sqlite');
    const db = new Database(join(dir, 'runs.sqlite'), { readonly: true });
    const v3RecordBytes = db.prepare('SELECT MAX(length(head)) FROM cairn_runs_v3').pluck().get() as number;
    db.close();
    ops.close();
    figures.backends.push({ backend: 'sqlite (synchronous=FULL)', ...timed, v3RecordBytes });
    let n = 0;
    figures.bytes.push({
      backend: 'sqlite',
      rows: await packageBytes(async () => {
        const path = join(dir, `bytes-${n++}.sqlite`);
        const o = createSqliteOpsStore({ path, synchronous: 'normal' });
        const store = createSqliteAgentRunStoreV3(o);
        return {
          store,
          bytes: async () => {
            const d = new Database(path, { readonly: true });
            try {
              return d.prepare('SELECT COALESCE(SUM(length(content)), 0) FROM cairn_runs_v3_blobs').pluck().get() as number;
            } finally {
              d.close();
            }
          },
          close: async () => o.close(),
        };
      }, envelopes),
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const url = process.env.CAIRN_TEST_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/test';
  const schemas: string[] = [];
  const admin = new pg.Client({ connectionString: url });
  try {
    await admin.connect();
    const schema = `cairn_bench_v3_${Date.now()}`;
    schemas.push(schema);
    const ops = createPostgresOpsStore({ connectionString: url }, { schema });
    await ops.setup();
    const v3 = createPostgresAgentRunStoreV3({ connectionString: url }, { schema });
    await v3.setup();
    const timed = await timeStores(ops.agentRuns, v3, envelopes, 'pg');
    const [{ n: v3RecordBytes }] = (await admin.query(`SELECT MAX(length(head)) AS n FROM ${schema}.cairn_runs_v3`)).rows as [{ n: number }];
    await v3.close();
    await ops.close();
    figures.backends.push({ backend: 'postgres', ...timed, v3RecordBytes });
    let n = 0;
    figures.bytes.push({
      backend: 'postgres',
      rows: await packageBytes(async () => {
        const s = `${schema}_b${n++}`;
        schemas.push(s);
        const store = createPostgresAgentRunStoreV3({ connectionString: url }, { schema: s });
        await store.setup();
        return {
          store,
          bytes: async () => Number((await admin.query(`SELECT COALESCE(SUM(octet_length(content)), 0) AS n FROM ${s}.cairn_runs_v3_blobs`)).rows[0].n),
          close: () => store.close(),
        };
      }, envelopes),
    });
  } catch (error) {
    figures.skipped.push(`postgres: ${(error as Error).message}`);
  } finally {
    for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`).catch(() => undefined);
    await admin.end().catch(() => undefined);
  }
  return figures;
}

export function printV3Store(f: V3StoreFigures): void {
  const ms = (n: number) => n.toFixed(3);
  console.log(`\nV3 store against today's run store: the ${f.saves} saves of one ${STEPS}-step tool loop saved into a fresh run, then loaded (median of ${ROUNDS} alternating rounds after ${WARMUP}); each V3 save carries the step's package (the same one every step)\n`);
  console.log('| store | ms per save, run store | ms per save, V3 store | ratio | ms per load, run store | ms per load, V3 store | ratio | V3 head bytes at the last save |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const b of f.backends) {
    console.log(`| ${b.backend} | ${ms(b.saveMs.current)} | ${ms(b.saveMs.v3)} | ${(b.saveMs.v3 / b.saveMs.current).toFixed(2)}x | ${ms(b.loadMs.current)} | ${ms(b.loadMs.v3)} | ${(b.loadMs.v3 / b.loadMs.current).toFixed(2)}x | ${b.v3RecordBytes} |`);
  }
  console.log('\nStored package bytes (blob content) after one run, by steps and distinct packages sent\n');
  console.log('| store | 10 steps, 1 package | 50 steps, 1 package | 10 steps, 5 packages | 50 steps, 5 packages |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const b of f.bytes) {
    const at = (steps: number, distinct: number) => b.rows.find((r) => r.steps === steps && r.distinct === distinct)!.bytes;
    console.log(`| ${b.backend} | ${at(10, 1)} | ${at(50, 1)} | ${at(10, 5)} | ${at(50, 5)} |`);
  }
  for (const s of f.skipped) console.log(`(skipped ${s})`);
}

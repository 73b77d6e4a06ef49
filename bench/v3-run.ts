/**
 * What a V3 run costs (docs/context.md): a tool loop of STEPS steps run as
 * today's run (its store's AgentRunStore) and as a V3 run with a two-source
 * context and a working memory (the store's AgentRunStoreV3), same model,
 * alternating round by round; the table gives the median wall time per step
 * and the ratio (target: at most 1.3x), on the in-memory stores, an SQLite
 * file and PostgreSQL. Then the packages stored by a V3 run whose retrieval
 * stays the same every step against one whose retrieval changes every step:
 * stored blobs and their bytes grow with distinct packages, not with steps.
 * On SQLite, the WAL frames a commit writes for each of the three (pages
 * changed: a count the machine's load does not move).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import {
  createInMemoryAgentRunStore, createInMemoryAgentRunStoreV3, runAgent, type AgentRunStore, type AgentRunStoreV3, type AgentTool,
} from 'cairn/agent';
import { createRagContextSource } from 'cairn/context';
import type { LanguageModel, ModelRequest, ModelResponse } from 'cairn/models';
import { createPostgresAgentRunStoreV3, createPostgresOpsStore } from 'cairn/ops/postgres';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore } from 'cairn/ops/sqlite';
import { connectionOf } from '../src/stores/sqlite/index.js';
import { alternateRounds } from './rounds.js';

const STEPS = 20;
const ROUNDS = Number(process.env.CAIRN_BENCH_V3_ROUNDS ?? 21);
const WARMUP = 4;
const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };

/** Calls `step` until STEPS calls are answered, then answers. */
const model: LanguageModel = {
  specificationVersion: 'cairn-model-1',
  provider: 'bench',
  modelId: 'loop',
  async doGenerate(request: ModelRequest): Promise<ModelResponse> {
    const done = request.messages.filter((m) => m.role === 'tool').length;
    if (done >= STEPS) return { text: 'done', toolCalls: [], finishReason: 'stop', usage };
    return { text: '', toolCalls: [{ toolCallId: `c${done}`, toolName: 'step', args: { n: done } }], finishReason: 'tool-calls', usage };
  },
};
const step: AgentTool = {
  parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
  execute: async ({ n }: { n: number }) => ({ ok: true, n }),
};

/** Two sources; `changing` makes the second answer something new on every step. */
const sources = (changing: boolean) => [
  createRagContextSource({ name: 'docs', retrieve: () => [{ text: 'Deploys need a green CI run.', index: 0, score: 0.9 }, { text: 'Staging is eu-west.', index: 1, score: 0.4 }] }),
  createRagContextSource({ name: 'tickets', retrieve: ({ step: s }) => [{ text: changing ? `Ticket T-${s} is open.` : 'Ticket T-1 is open.', index: 0, score: 0.7 }] }),
];

interface Backend {
  name: string;
  today(): AgentRunStore;
  v3(): AgentRunStoreV3;
  close(): Promise<void>;
}

let ids = 0;
async function timeRun(run: () => Promise<{ status: string; error?: unknown }>): Promise<number> {
  const started = performance.now();
  const result = await run();
  if (result.status !== "completed") throw new Error(`a bench run ended ${result.status}: ${JSON.stringify((result as { error?: unknown }).error)}`);
  return (performance.now() - started) / (STEPS + 1);
}

const todayRun = (store: AgentRunStore) => () => runAgent({
  model, prompt: 'Loop.', maxSteps: STEPS + 2, tools: { step }, session: { store, runId: `t${ids++}`, scope: 'bench' },
});
const v3Plain = (store: AgentRunStoreV3) => () => runAgent({
  checkpointVersion: 3, model, prompt: 'Loop.', maxSteps: STEPS + 2, tools: { step }, session: { store, runId: `p${ids++}`, scope: 'bench' },
});
const v3Run = (store: AgentRunStoreV3, changing = false, runId = `v${ids++}`) => () => runAgent({
  checkpointVersion: 3, model, prompt: 'Loop.', maxSteps: STEPS + 2, tools: { step }, session: { store, runId, scope: 'bench' },
  context: { sources: sources(changing) }, workingMemory: { create: { scope: 'bench', goal: 'Loop.', now: 0 } },
});

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export interface V3RunFigures {
  steps: number;
  rounds: number;
  rows: { backend: string; today: number; v3Plain: number; v3: number }[];
  bytes: { backend: string; kind: 'same' | 'changing'; steps: number; packages: number; blobs: number; bytes: number }[];
  /** SQLite: WAL frames (pages, 1 KB each) a commit writes, averaged over one run of each. */
  frames: { today: number; v3Plain: number; v3: number } | null;
  skipped: string[];
}

async function measureBackend(backend: Backend, figures: V3RunFigures): Promise<void> {
  const today = backend.today();
  const v3 = backend.v3();
  // A fresh run (and run id) each time.
  const runs = { today: () => todayRun(today), v3Plain: () => v3Plain(v3), v3: () => v3Run(v3) };
  const times = await alternateRounds(['today', 'v3Plain', 'v3'] as const, { warmup: WARMUP, measured: ROUNDS }, (kind) => timeRun(runs[kind]()));
  figures.rows.push({ backend: backend.name, today: median(times.today), v3Plain: median(times.v3Plain), v3: median(times.v3) });
  for (const changing of [false, true]) {
    const runId = `bytes-${changing ? 'changing' : 'same'}-${ids++}`;
    await v3Run(v3, changing, runId)();
    const record = (await v3.load(runId, { scope: 'bench' }))!;
    const digests = [...new Set(record.context!.steps.map((s) => s.blob.digest))];
    let bytes = 0;
    for (const d of digests) {
      const found = await v3.getBlob(d);
      if (found.status === 'found') bytes += Buffer.byteLength(JSON.stringify(found.content));
    }
    figures.bytes.push({ backend: backend.name, kind: changing ? 'changing' : 'same', steps: record.context!.steps.length, packages: record.context!.steps.length, blobs: digests.length, bytes });
  }
}

export async function measureV3Run(): Promise<V3RunFigures> {
  const figures: V3RunFigures = { steps: STEPS, rounds: ROUNDS, rows: [], bytes: [], frames: null, skipped: [] };
  await measureBackend({
    name: 'in-memory', today: () => createInMemoryAgentRunStore(), v3: () => createInMemoryAgentRunStoreV3(), close: async () => undefined,
  }, figures);
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-v3-run-'));
  try {
    const ops = createSqliteOpsStore({ path: join(dir, 'ops.db') });
    try {
      const v3 = createSqliteAgentRunStoreV3(ops);
      await measureBackend({ name: 'sqlite', today: () => ops.agentRuns, v3: () => v3, close: async () => undefined }, figures);
      figures.frames = await walFrames(join(dir, 'ops.db'), ops, v3);
    } finally {
      ops.close();
    }
  } catch (error) {
    figures.skipped.push(`sqlite: ${(error as Error).message}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const url = process.env.CAIRN_TEST_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/test';
  const admin = new pg.Client({ connectionString: url });
  const schema = `cairn_bench_v3run_${Date.now()}`;
  try {
    await admin.connect();
    const ops = createPostgresOpsStore({ connectionString: url }, { schema });
    await ops.setup();
    const v3 = createPostgresAgentRunStoreV3({ connectionString: url }, { schema });
    await v3.setup();
    try {
      await measureBackend({ name: 'postgres', today: () => ops.agentRuns, v3: () => v3, close: async () => undefined }, figures);
    } finally {
      await v3.close();
      await ops.close();
    }
  } catch (error) {
    figures.skipped.push(`postgres: ${(error as Error).message}`);
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await admin.end().catch(() => undefined);
  }
  return figures;
}

/** The WAL frames a commit of each kind of run writes: the log emptied before each run, its size read after it. */
async function walFrames(path: string, ops: ReturnType<typeof createSqliteOpsStore>, v3: AgentRunStoreV3): Promise<V3RunFigures['frames']> {
  const db = connectionOf(ops);
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const counted = <S extends { save(...args: never[]): Promise<void> }>(store: S, tally: { saves: number }): S => {
    const wrapped = Object.create(store) as S;
    const save = store.save.bind(store) as (...args: never[]) => Promise<void>;
    wrapped.save = (async (...args: never[]) => {
      await save(...args);
      tally.saves++;
    }) as S['save'];
    return wrapped;
  };
  const per = async (run: (tally: { saves: number }) => () => Promise<{ status: string }>) => {
    const medians: number[] = [];
    for (let i = 0; i < 5; i++) {
      const tally = { saves: 0 };
      db.pragma('wal_checkpoint(TRUNCATE)');
      await timeRun(run(tally));
      // A WAL file is a 32-byte header, then one frame (a 24-byte header and the page) per page a commit changed.
      medians.push((statSync(`${path}-wal`).size - 32) / (pageSize + 24) / tally.saves);
    }
    return median(medians);
  };
  return {
    today: await per((tally) => todayRun(counted(ops.agentRuns, tally))),
    v3Plain: await per((tally) => v3Plain(counted(v3, tally))),
    v3: await per((tally) => v3Run(counted(v3, tally))),
  };
}

export function printV3Run(f: V3RunFigures): void {
  console.log(`\nV3 run with a two-source context and a working memory against today's run: a ${f.steps}-step tool loop, same model, median wall ms per step of ${f.rounds} alternating rounds (target: at most 1.3x)\n`);
  console.log('| store | today ms/step | V3, no context | V3 with context | ratio (context / today) | of it, the V3 store (no context / today) |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const r of f.rows) {
    console.log(`| ${r.backend} | ${r.today.toFixed(3)} | ${r.v3Plain.toFixed(3)} | ${r.v3.toFixed(3)} | ${(r.v3 / r.today).toFixed(2)}x | ${(r.v3Plain / r.today).toFixed(2)}x |`);
  }
  console.log('\nPackages a V3 run stores: retrieval the same every step, against one that changes every step\n');
  console.log('| store | retrieval | steps compiled | blobs stored | blob bytes |');
  console.log('| --- | --- | ---: | ---: | ---: |');
  for (const r of f.bytes) console.log(`| ${r.backend} | ${r.kind} | ${r.steps} | ${r.blobs} | ${r.bytes} |`);
  if (f.frames) {
    console.log('\nSQLite WAL frames a commit (pages changed, median of 5 runs each; independent of the load)\n');
    console.log('| today | V3, no context | V3 with context |');
    console.log('| ---: | ---: | ---: |');
    console.log(`| ${f.frames.today.toFixed(2)} | ${f.frames.v3Plain.toFixed(2)} | ${f.frames.v3.toFixed(2)} |`);
  }
  for (const s of f.skipped) console.log(`(skipped ${s})`);
}

/**
 * What versioned memory costs a V3 run (docs/versioned-memory.md#cost), on an
 * SQLite file and on PostgreSQL (run store and versioned memory store side by
 * side, in one file or one schema):
 *
 *  - a tool loop of STEPS steps whose tool is `memory_remember` (each step one
 *    memory write: intent, commit, acknowledgment), against the same loop
 *    whose tool is an ordinary idempotent tool. Counted: the run store's saves
 *    (commits) per step of each, which the target wants equal (a
 *    memory write adds no commit to the run beyond its tool receipt's own
 *    saves), and the memory store's commits. Timed: median ms per step.
 *  - a one-turn run with `extract: true` against the same run without it:
 *    commits of the run store and of the memory store, and ms per run.
 *
 * Runs alternate round by round (who goes first rotates), so the machine's
 * noise falls on all of them.
 *
 *   npm run bench -- --versioned
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { runAgent, type AgentRunStoreV3, type AgentTool } from 'cairn/agent';
import type { LanguageModel, ModelRequest, ModelResponse } from 'cairn/models';
import { createMemorySession, type VersionedMemoryStore } from 'cairn/memory/versioned';
import { createPostgresVersionedMemoryStore } from 'cairn/memory/versioned/postgres';
import { createSqliteVersionedMemoryStore } from 'cairn/memory/versioned/sqlite';
import { createPostgresAgentRunStoreV3 } from 'cairn/ops/postgres';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore } from 'cairn/ops/sqlite';
import { alternateRounds } from './rounds.js';

const STEPS = 10;
const ROUNDS = Number(process.env.CAIRN_BENCH_VERSIONED_ROUNDS ?? 15);
const WARMUP = 3;
const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };

/** Calls `tool` until `steps` calls are answered, then answers. */
function loopModel(tool: string, steps: number): LanguageModel {
  return {
    specificationVersion: 'cairn-model-1',
    provider: 'bench',
    modelId: 'loop',
    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      const done = request.messages.filter((m) => m.role === 'tool').length;
      if (done >= steps) return { text: 'done', toolCalls: [], finishReason: 'stop', usage };
      const args: Record<string, string | number> = tool === 'memory_remember' ? { text: `fact number ${done} of the loop` } : { n: done };
      return { text: '', toolCalls: [{ toolCallId: `c${done}`, toolName: tool, args }], finishReason: 'tool-calls', usage };
    },
  };
}

const step: AgentTool = {
  parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
  replay: 'idempotent',
  execute: async ({ n }: { n: number }) => ({ ok: true, n }),
};

/** Counts the saves of a run store (its commits). */
function countingRuns(store: AgentRunStoreV3, counter: { saves: number }): AgentRunStoreV3 {
  return new Proxy(store, {
    get(target, key, receiver) {
      if (key === 'save') return (...args: Parameters<AgentRunStoreV3['save']>) => {
        counter.saves++;
        return target.save(...args);
      };
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Counts the commits of a memory store and its other calls (reads), and the time spent in them. */
function countingMemory(store: VersionedMemoryStore, counter: { commits: number; reads: number; memoryMs: number }): VersionedMemoryStore {
  return new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        if (key === 'commit') counter.commits++;
        else counter.reads++;
        const started = performance.now();
        try {
          return await (value as (...a: unknown[]) => unknown).apply(target, args);
        } finally {
          counter.memoryMs += performance.now() - started;
        }
      };
    },
  });
}

interface Backend {
  name: string;
  runs: AgentRunStoreV3;
  memory: VersionedMemoryStore;
}

type Kind = 'ordinary' | 'memory' | 'plain' | 'extract';
interface Sample { ms: number; saves: number; commits: number; reads: number; memoryMs: number; recordBytes: number; intentBytes: number }

let ids = 0;
async function once(backend: Backend, kind: Kind): Promise<Sample> {
  const counter = { saves: 0, commits: 0, reads: 0, memoryMs: 0, recordBytes: 0, intentBytes: 0 };
  const runs = countingRuns(backend.runs, counter);
  const runId = `vb-${kind}-${ids++}`;
  const session = createMemorySession({
    store: countingMemory(backend.memory, counter), scope: { userId: `u-${runId}` },
    llm: async () => '{"facts":[{"text":"The user likes tea.","sources":["s0"]}]}',
  });
  const loop = kind === 'ordinary' || kind === 'memory';
  const started = performance.now();
  const result = await runAgent({
    checkpointVersion: 3, session: { store: runs, runId, scope: 'bench' }, prompt: 'I like tea.',
    model: loop ? loopModel(kind === 'memory' ? 'memory_remember' : 'step', STEPS) : loopModel('step', 0),
    maxSteps: STEPS + 2,
    ...(kind === 'ordinary' ? { tools: { step } } : {}),
    versionedMemory: { session, tools: kind === 'memory', extract: kind === 'extract' },
  } as never);
  const ms = performance.now() - started;
  if ((result as { status: string }).status !== 'completed') throw new Error(`a bench run ended ${(result as { status: string }).status}: ${JSON.stringify((result as { error?: unknown }).error)}`);
  if (kind === 'memory' || kind === 'ordinary') {
    const record = await backend.runs.load(runId, { scope: 'bench' });
    counter.recordBytes = Buffer.byteLength(JSON.stringify(record));
    counter.intentBytes = Buffer.byteLength(JSON.stringify(record?.memoryIntents ?? []));
  }
  if (kind === 'extract') {
    const record = await backend.runs.load(runId, { scope: 'bench' });
    const statuses = (record?.memoryIntents ?? []).map((i) => i.status);
    if (statuses.join() !== 'acknowledged') throw new Error(`the extraction ended ${JSON.stringify(statuses)}`);
  }
  return { ms, ...counter };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export interface VersionedRow {
  backend: string;
  /** Per tool step (the loop's saves and time divided by STEPS; the answer step is in both). */
  /** `recordBytes`: the stored record's JSON after the loop; `intentBytes`: of it, memoryIntents. */
  ordinary: { msPerStep: number; savesPerStep: number; saves: number; recordBytes: number };
  /** `memoryMs`: the time spent inside the memory store's calls. */
  memory: { msPerStep: number; savesPerStep: number; saves: number; commits: number; reads: number; memoryMs: number; recordBytes: number; intentBytes: number };
  plain: { ms: number; saves: number; commits: number; reads: number; memoryMs: number };
  extract: { ms: number; saves: number; commits: number; reads: number; memoryMs: number };
}

export interface VersionedFigures {
  steps: number;
  rounds: number;
  rows: VersionedRow[];
  skipped: string[];
}

async function measureBackend(backend: Backend): Promise<VersionedRow> {
  const kinds: Kind[] = ['ordinary', 'memory', 'plain', 'extract'];
  const samples = await alternateRounds(kinds, { warmup: WARMUP, measured: ROUNDS }, (kind) => once(backend, kind));
  const of = (kind: Kind) => {
    const s = samples[kind];
    return { ms: median(s.map((x) => x.ms)), saves: median(s.map((x) => x.saves)), commits: median(s.map((x) => x.commits)), reads: median(s.map((x) => x.reads)), memoryMs: median(s.map((x) => x.memoryMs)),
      recordBytes: median(s.map((x) => x.recordBytes)), intentBytes: median(s.map((x) => x.intentBytes)) };
  };
  const ordinary = of('ordinary');
  const memory = of('memory');
  // The loop's saves less the saves of a run that only answers: what the STEPS tool steps saved.
  const base = of('plain');
  return {
    backend: backend.name,
    ordinary: { msPerStep: ordinary.ms / STEPS, savesPerStep: (ordinary.saves - base.saves) / STEPS, saves: ordinary.saves, recordBytes: ordinary.recordBytes },
    memory: { msPerStep: memory.ms / STEPS, savesPerStep: (memory.saves - base.saves) / STEPS, saves: memory.saves, commits: memory.commits, reads: memory.reads, memoryMs: memory.memoryMs,
      recordBytes: memory.recordBytes, intentBytes: memory.intentBytes },
    plain: base,
    extract: of('extract'),
  };
}

export async function measureVersioned(): Promise<VersionedFigures> {
  const figures: VersionedFigures = { steps: STEPS, rounds: ROUNDS, rows: [], skipped: [] };
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-versioned-'));
  try {
    const ops = createSqliteOpsStore({ path: join(dir, 'ops.db') });
    try {
      const memory = createSqliteVersionedMemoryStore(ops);
      figures.rows.push(await measureBackend({ name: 'sqlite', runs: createSqliteAgentRunStoreV3(ops), memory }));
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
  const schema = `cairn_bench_versioned_${Date.now()}`;
  try {
    await admin.connect();
    const runs = createPostgresAgentRunStoreV3({ connectionString: url }, { schema });
    await runs.setup();
    const memory = createPostgresVersionedMemoryStore({ connectionString: url }, { schema });
    await memory.setup();
    try {
      figures.rows.push(await measureBackend({ name: 'postgres', runs, memory }));
    } finally {
      await memory.close();
      await runs.close();
    }
  } catch (error) {
    figures.skipped.push(`postgres: ${(error as Error).message}`);
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await admin.end().catch(() => undefined);
  }
  return figures;
}

export function printVersioned(f: VersionedFigures): void {
  console.log(`\nA V3 tool step whose tool is memory_remember against the same step with an ordinary idempotent tool: a ${f.steps}-step loop, medians of ${f.rounds} alternating rounds`);
  console.log('(target: a memory tool write adds no commit to the run beyond the tool receipt\'s own saves)\n');
  console.log('| store | run-store saves / step, ordinary tool | memory tool | memory commits / step | memory reads / step | target | ms / step, ordinary | memory | ratio | of it, in the memory store |');
  console.log('| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |');
  for (const r of f.rows) {
    const met = r.memory.savesPerStep <= r.ordinary.savesPerStep ? 'met' : 'not met';
    console.log(`| ${r.backend} | ${r.ordinary.savesPerStep.toFixed(2)} | ${r.memory.savesPerStep.toFixed(2)} | ${(r.memory.commits / f.steps).toFixed(2)} | ${(r.memory.reads / f.steps).toFixed(2)} | ${met} | ` +
      `${r.ordinary.msPerStep.toFixed(3)} | ${r.memory.msPerStep.toFixed(3)} | ${(r.memory.msPerStep / r.ordinary.msPerStep).toFixed(2)}x | ${(r.memory.memoryMs / f.steps).toFixed(3)} |`);
  }
  console.log(`\nThe stored record after the ${f.steps}-step loop (JSON bytes)\n`);
  console.log('| store | ordinary tool | memory tool | of it, memoryIntents |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const r of f.rows) console.log(`| ${r.backend} | ${r.ordinary.recordBytes} | ${r.memory.recordBytes} | ${r.memory.intentBytes} |`);
  console.log('\nThe extraction: a one-turn run with extract: true against the same run without it\n');
  console.log('| store | run-store saves, without | with extract | memory commits | memory reads | ms / run, without | with extract | added ms | of it, in the memory store |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of f.rows) {
    console.log(`| ${r.backend} | ${r.plain.saves} | ${r.extract.saves} | ${r.extract.commits} | ${r.extract.reads} | ${r.plain.ms.toFixed(3)} | ${r.extract.ms.toFixed(3)} | ${(r.extract.ms - r.plain.ms).toFixed(3)} | ${r.extract.memoryMs.toFixed(3)} |`);
  }
  for (const s of f.skipped) console.log(`(skipped ${s})`);
}

/**
 * What memory and a chat cost a durable run on SQLite (docs/memory.md,
 * docs/chat.md): the same tool loop, in one file (runs, memories and chats in
 * the store's own tables), with and without `memory` and `chat`, rounds
 * alternating the two, so the machine's noise falls on both.
 *
 * Counted, not timed: the saves of the run's record per run and per tool-loop
 * step (the slope between a loop of STEPS and one of 2 x STEPS steps), which
 * memory and chat must leave unchanged, and what they add per run: the saves
 * around the end (the terminal commit before the chat write and the
 * extraction, and the plan's size; the outcome goes in the run's own last save), the
 * memory reads and writes and the chat writes. Timed: ms per run, medians, and
 * inside a run with memory and chat the time spent in the memory store, the
 * memory LLM (a scripted answer, so the engine's own share) and the chat store.
 *
 *   npm run bench -- --memory-run
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentOptions, AgentRunStore } from 'cairn/agent';
import type { ChatStore, ConditionalChatStore } from 'cairn/chat';
import type { MemoryStore } from 'cairn/memory';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { toolLoop } from './tool-loop.js';

const STEPS = 20;
const WARMUP = 10;
const ROUNDS = 15;

interface Counts {
  saves: number;
  memoryReads: number;
  memoryWrites: number;
  chatWrites: number;
  /** ms spent inside each, summed over the counted runs. */
  memoryMs: number;
  llmMs: number;
  chatMs: number;
}

const zero = (): Counts => ({ saves: 0, memoryReads: 0, memoryWrites: 0, chatWrites: 0, memoryMs: 0, llmMs: 0, chatMs: 0 });

async function timed<T>(counts: Counts, key: 'memoryMs' | 'llmMs' | 'chatMs', work: () => Promise<T> | T): Promise<T> {
  const started = performance.now();
  try {
    return await work();
  } finally {
    counts[key] += performance.now() - started;
  }
}

function countingRuns(store: AgentRunStore, counts: Counts): AgentRunStore {
  return {
    load: (id, o) => store.load(id, o),
    save: (e, o) => {
      counts.saves++;
      return store.save(e, o);
    },
  };
}

function countingMemory(store: MemoryStore, counts: Counts): MemoryStore {
  const read = <K extends 'get' | 'list' | 'search' | 'sweep'>(k: K) => (input: Parameters<MemoryStore[K]>[0]) => {
    counts.memoryReads++;
    return timed(counts, 'memoryMs', () => (store[k] as (i: unknown) => Promise<unknown>)(input));
  };
  const write = <K extends 'add' | 'update' | 'delete'>(k: K) => (input: Parameters<MemoryStore[K]>[0]) => {
    counts.memoryWrites++;
    return timed(counts, 'memoryMs', () => (store[k] as (i: unknown) => Promise<unknown>)(input));
  };
  return {
    add: write('add'), update: write('update'), delete: write('delete'),
    get: read('get'), list: read('list'), search: read('search'), sweep: read('sweep'),
  } as MemoryStore;
}

function countingChats(store: ConditionalChatStore, counts: Counts): ChatStore {
  const chats: ConditionalChatStore = {
    loadChat: (id) => timed(counts, 'chatMs', () => store.loadChat(id)),
    saveChat: (id, r) => {
      counts.chatWrites++;
      return timed(counts, 'chatMs', () => store.saveChat(id, r));
    },
    readChat: (id) => timed(counts, 'chatMs', () => store.readChat(id)),
    writeChat: (id, w, o) => {
      counts.chatWrites++;
      return timed(counts, 'chatMs', () => store.writeChat(id, w, o));
    },
    deleteChat: (id) => timed(counts, 'chatMs', () => store.deleteChat(id)),
  };
  return chats;
}

export interface MemoryRunFigures {
  steps: number;
  /** Saves per run and per tool-loop step, without and with memory and chat. */
  plain: { savesPerRun: number; savesPerStep: number; msPerRun: number };
  withBoth: { savesPerRun: number; savesPerStep: number; msPerRun: number; memoryReads: number; memoryWrites: number; chatWrites: number; memoryMs: number; llmMs: number; chatMs: number };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function measureMemoryRun(): Promise<MemoryRunFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-memory-run-'));
  const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
  let n = 0;
  let ids = 0;
  try {
    const run = async (withBoth: boolean, steps: number, counts: Counts) => {
      const runId = `r${++n}`;
      const extra: Partial<AgentOptions> = withBoth
        ? {
          memory: {
            seams: {
              store: countingMemory(ops.memories, counts),
              // One fact a run, a new one each time (as a conversation that taught something would).
              llm: (input) => timed(counts, 'llmMs', () => (input.system.includes('extract')
                ? `{"facts":["fact of run ${runId}"]}`
                : `{"memory":[{"event":"ADD","text":"fact of run ${runId}"}]}`)),
              clock: { now: () => 1_000, setTimeout: () => () => undefined },
              generateId: () => `m-${++ids}`,
            },
            scope: { userId: 'bench' },
          },
          chat: { store: countingChats(ops.chats, counts), chatId: `chat-${runId}`, scope: { userId: 'bench' } },
        }
        : {};
      const result = await toolLoop(countingRuns(ops.agentRuns, counts), runId, steps, 'bare', extra);
      if (result.status !== 'completed') throw new Error(`bench run ${runId}: ${result.status}`);
    };
    // The slope: saves of a 2 x STEPS loop less those of a STEPS loop, per step.
    const savesOf = async (withBoth: boolean, steps: number) => {
      const counts = zero();
      await run(withBoth, steps, counts);
      return counts.saves;
    };
    const slope = async (withBoth: boolean) => ((await savesOf(withBoth, 2 * STEPS)) - (await savesOf(withBoth, STEPS))) / STEPS;
    for (let i = 0; i < WARMUP; i++) {
      await run(false, STEPS, zero());
      await run(true, STEPS, zero());
    }
    const plainMs: number[] = [];
    const bothMs: number[] = [];
    const plain = zero();
    const both = zero();
    for (let round = 0; round < ROUNDS; round++) {
      for (const withBoth of round % 2 === 0 ? [false, true] : [true, false]) {
        const started = performance.now();
        await run(withBoth, STEPS, withBoth ? both : plain);
        (withBoth ? bothMs : plainMs).push(performance.now() - started);
      }
    }
    const per = (x: number) => x / ROUNDS;
    return {
      steps: STEPS,
      plain: { savesPerRun: per(plain.saves), savesPerStep: await slope(false), msPerRun: median(plainMs) },
      withBoth: {
        savesPerRun: per(both.saves), savesPerStep: await slope(true), msPerRun: median(bothMs),
        memoryReads: per(both.memoryReads), memoryWrites: per(both.memoryWrites), chatWrites: per(both.chatWrites),
        memoryMs: per(both.memoryMs), llmMs: per(both.llmMs), chatMs: per(both.chatMs),
      },
    };
  } finally {
    ops.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function printMemoryRun(f: MemoryRunFigures): void {
  const d = (x: number, digits = 2) => x.toFixed(digits);
  console.log(`\nMemory and chat in a durable run on SQLite (a ${f.steps}-step tool loop, ${ROUNDS} runs each, alternating; medians)`);
  console.log('| run | saves per tool-loop step | saves per run | ms per run | ratio |');
  console.log('| --- | --- | --- | --- | --- |');
  console.log(`| without memory and chat | ${d(f.plain.savesPerStep)} | ${d(f.plain.savesPerRun, 1)} | ${d(f.plain.msPerRun)} | 1.00 |`);
  console.log(`| with memory and chat | ${d(f.withBoth.savesPerStep)} | ${d(f.withBoth.savesPerRun, 1)} | ${d(f.withBoth.msPerRun)} | ${d(f.withBoth.msPerRun / f.plain.msPerRun)} |`);
  const w = f.withBoth;
  console.log(`\nAdded per run: ${d(w.savesPerRun - f.plain.savesPerRun, 1)} saves of the record (the terminal commit before the chat write and the extraction, and the plan's size; the outcome goes in the terminal save a run makes anyway), ` +
    `${d(w.memoryReads, 1)} memory reads (the recall's search, the extraction's searches), ${d(w.memoryWrites, 1)} memory write, ` +
    `${d(w.chatWrites, 1)} chat write; ${d(w.msPerRun - f.plain.msPerRun)} ms in all, of which ${d(w.memoryMs)} ms in the memory store, ` +
    `${d(w.chatMs)} ms in the chat store and ${d(w.llmMs, 3)} ms in the (scripted) memory LLM.`);
  console.log(f.withBoth.savesPerStep === f.plain.savesPerStep
    ? 'Memory and chat add no save to a tool-loop step.'
    : `Memory and chat change the saves of a tool-loop step: ${f.plain.savesPerStep} -> ${f.withBoth.savesPerStep}.`);
}

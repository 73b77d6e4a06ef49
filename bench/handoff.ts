/**
 * The cost of a handoff (docs/delegation.md#handoffs): a tool loop of the
 * same length driven by the run's own agent, and by a target it handed the
 * run to at its first step. The table gives the median CPU time of this
 * process per tool-loop step after the first (the target's steps against the
 * root's), their ratio, and the saves each run made (the handoff's step is
 * saved by the step's one checkpoint, so a run with a handoff makes exactly
 * the saves of a run whose first step called a tool). Runs alternate, so the
 * machine's noise falls on both; on the in-memory store and on an SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInMemoryAgentRunStore, runAgent, type AgentOptions, type AgentRunStore, type AgentTool } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import type { LanguageModel, ModelRequest, ModelResponse } from 'cairn/models';
import { alternateRounds } from './rounds.js';

const ROUNDS = 41;
const WARMUP = 6;
const STEPS = 20;
const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };

/** Transfers first when `transfer` is set, then calls `step` until STEPS calls are answered, then answers. */
function loopModel(modelId: string, transfer: boolean): LanguageModel {
  return {
    specificationVersion: 'cairn-model-1',
    provider: 'bench',
    modelId,
    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      const done = request.messages.filter((m) => m.role === 'tool' && (m as { toolName?: string }).toolName === 'step').length;
      const handedOff = request.messages.some((m) => m.role === 'tool' && (m as { toolName?: string }).toolName === 'transfer_to_worker');
      if (transfer && !handedOff) return { text: '', toolCalls: [{ toolCallId: 'h', toolName: 'transfer_to_worker', args: {} }], finishReason: 'tool-calls', usage };
      if (done >= STEPS) return { text: 'done', toolCalls: [], finishReason: 'stop', usage };
      return { text: '', toolCalls: [{ toolCallId: `c${done}`, toolName: 'step', args: { n: done } }], finishReason: 'tool-calls', usage };
    },
  };
}

const step: AgentTool = {
  parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
  execute: async ({ n }: { n: number }) => ({ ok: true, n }),
};

/** The run's own agent calls `step` STEPS times after a first step that calls `warm` (so both runs have STEPS + 2 turns). */
function rootOptions(): AgentOptions {
  const model = loopModel('root', false);
  let warmed = false;
  const first: LanguageModel = {
    ...model,
    async doGenerate(request) {
      if (!warmed && !request.messages.some((m) => m.role === 'tool')) {
        warmed = true;
        return { text: '', toolCalls: [{ toolCallId: 'h', toolName: 'warm', args: {} }], finishReason: 'tool-calls', usage };
      }
      return model.doGenerate(request);
    },
  };
  return { model: first, prompt: 'Loop.', maxSteps: STEPS + 3, tools: { step, warm: { parameters: { type: 'object' }, execute: async () => 'ok' } } };
}

function handoffOptions(): AgentOptions {
  return {
    model: loopModel('root', true), prompt: 'Loop.', maxSteps: STEPS + 3,
    handoffs: [{ name: 'worker', model: loopModel('worker', false), instructions: 'You are the worker.', tools: { step } }],
  };
}

export interface HandoffFigures {
  rows: { store: string; root: number; handoff: number; rootSaves: number; handoffSaves: number }[];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function counting(store: AgentRunStore): { store: AgentRunStore; saves: () => number } {
  let saves = 0;
  const wrapped = new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (key === 'save') return async (...args: unknown[]) => { saves += 1; return (value as (...a: unknown[]) => unknown).apply(target, args); };
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, saves: () => saves };
}

export async function measureHandoff(): Promise<HandoffFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-handoff-'));
  const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
  const rows: HandoffFigures['rows'] = [];
  try {
    for (const [name, make] of [['in-memory', () => createInMemoryAgentRunStore()], ['sqlite', () => ops.agentRuns]] as const) {
      const saves = { root: 0, handoff: 0 };
      const once = async (kind: 'root' | 'handoff', i: number) => {
        const { store, saves: count } = counting(make());
        const runId = `${kind}-${i}`;
        const options = kind === 'root' ? rootOptions() : handoffOptions();
        const started = process.cpuUsage();
        const result = await runAgent({ ...options, session: { store, runId, scope: 'bench' } });
        const used = process.cpuUsage(started);
        if (result.status !== 'completed' || result.steps !== STEPS + 2) throw new Error(`bench handoff: a ${kind} run ended ${result.status} after ${result.steps} steps`);
        saves[kind] = count();
        return (used.user + used.system) / 1000 / (STEPS + 2);
      };
      const times = await alternateRounds(['root', 'handoff'] as const, { warmup: WARMUP, measured: ROUNDS }, once);
      rows.push({ store: name, root: median(times.root), handoff: median(times.handoff), rootSaves: saves.root, handoffSaves: saves.handoff });
    }
  } finally {
    ops.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return { rows };
}

export function printHandoff(f: HandoffFigures): void {
  const us = (ms: number) => `${(ms * 1000).toFixed(0)} µs`;
  console.log(`\nHandoff: ${STEPS} tool steps driven by the run's own agent against ${STEPS} driven by a target it handed the run to at its first step (same turns: ${STEPS + 2}); median CPU time per turn of ${ROUNDS} alternating runs`);
  console.log('| store | root per turn | after a handoff per turn | ratio | saves (root run) | saves (handoff run) |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const r of f.rows) {
    console.log(`| ${r.store} | ${us(r.root)} | ${us(r.handoff)} | ${(r.handoff / r.root).toFixed(3)}x | ${r.rootSaves} | ${r.handoffSaves} |`);
  }
}

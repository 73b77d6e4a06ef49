/**
 * The cost of a sub-agent (docs/delegation.md#sub-agents): a tool loop of
 * STEPS steps run by a root agent, against the same loop run by a child of a
 * root that delegates to it once through agentTool. The table gives, per
 * store, the saves each run made, the saves per tool step of the root loop
 * and of the child's loop (the child's own saves, counted by run id), the
 * saves the delegation adds over the root-only run, and the median CPU time
 * of this process per tool step of each (the delegating run's whole time
 * divided by the child's steps). Runs alternate, so the machine's noise
 * falls on both.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, agentTool } from 'cairn';
import { createInMemoryAgentRunStore, runAgent, type AgentOptions, type AgentRunEnvelope as AgentEnvelopeLike, type AgentRunStore, type AgentTool } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import type { LanguageModel, ModelRequest, ModelResponse } from 'cairn/models';
import { alternateRounds } from './rounds.js';

const ROUNDS = 31;
const WARMUP = 6;
const STEPS = 20;
const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };

/** Calls `step` until STEPS calls are answered, then answers. */
function loopModel(modelId: string): LanguageModel {
  return {
    specificationVersion: 'cairn-model-1',
    provider: 'bench',
    modelId,
    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      const done = request.messages.filter((m) => m.role === 'tool').length;
      if (done >= STEPS) return { text: 'done', toolCalls: [], finishReason: 'stop', usage };
      return { text: '', toolCalls: [{ toolCallId: `c${done}`, toolName: 'step', args: { n: done } }], finishReason: 'tool-calls', usage };
    },
  };
}

/** Delegates once, then answers. */
function leadModel(): LanguageModel {
  return {
    specificationVersion: 'cairn-model-1',
    provider: 'bench',
    modelId: 'lead',
    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      if (request.messages.some((m) => m.role === 'tool')) return { text: 'done', toolCalls: [], finishReason: 'stop', usage };
      return { text: '', toolCalls: [{ toolCallId: 'd', toolName: 'loop', args: { input: 'Loop.' } }], finishReason: 'tool-calls', usage };
    },
  };
}

const step: AgentTool = {
  parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
  execute: async ({ n }: { n: number }) => ({ ok: true, n }),
};

const rootOptions = (): AgentOptions => ({ model: loopModel('root'), prompt: 'Loop.', maxSteps: STEPS + 2, tools: { step } });
function delegatingOptions(): AgentOptions {
  const child = new Agent({ name: 'looper', model: loopModel('child'), maxSteps: STEPS + 2, tools: { step } });
  return { model: leadModel(), prompt: 'Delegate the loop.', maxSteps: 3, tools: { loop: agentTool(child, { name: 'loop' }) } };
}

export interface SubAgentFigures {
  rows: {
    store: string;
    rootMs: number;
    subMs: number;
    rootSaves: number;
    subSaves: number;
    childSaves: number;
  }[];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A store that counts saves, by run id. */
function counting(store: AgentRunStore): { store: AgentRunStore; saves: Map<string, number> } {
  const saves = new Map<string, number>();
  const wrapped = new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (key === 'save') {
        return async (envelope: AgentEnvelopeLike, ...rest: unknown[]) => {
          saves.set(envelope.runId, (saves.get(envelope.runId) ?? 0) + 1);
          return (value as (...a: unknown[]) => unknown).apply(target, [envelope, ...rest]);
        };
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, saves };
}

export async function measureSubAgent(): Promise<SubAgentFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-subagent-'));
  const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
  const rows: SubAgentFigures['rows'] = [];
  try {
    for (const [name, make] of [['in-memory', () => createInMemoryAgentRunStore()], ['sqlite', () => ops.agentRuns]] as const) {
      const last = { rootSaves: 0, subSaves: 0, childSaves: 0 };
      const once = async (kind: 'root' | 'sub', i: number) => {
        const { store, saves } = counting(make());
        const runId = `${kind}-${i}`;
        const started = process.cpuUsage();
        const result = await runAgent({ ...(kind === 'root' ? rootOptions() : delegatingOptions()), session: { store, runId, scope: 'bench' } });
        const used = process.cpuUsage(started);
        if (result.status !== 'completed') throw new Error(`bench subagent: a ${kind} run ended ${result.status}`);
        const total = [...saves.values()].reduce((a, b) => a + b, 0);
        if (kind === 'root') last.rootSaves = total;
        else {
          last.subSaves = total;
          last.childSaves = total - (saves.get(runId) ?? 0);
        }
        return (used.user + used.system) / 1000 / STEPS;
      };
      const times = await alternateRounds(['root', 'sub'] as const, { warmup: WARMUP, measured: ROUNDS }, once);
      rows.push({ store: name, rootMs: median(times.root), subMs: median(times.sub), ...last });
    }
  } finally {
    ops.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return { rows };
}

export function printSubAgent(f: SubAgentFigures): void {
  const us = (ms: number) => `${(ms * 1000).toFixed(0)} µs`;
  console.log(`\nSub-agent: ${STEPS} tool steps run by a root agent against ${STEPS} run by a child of a root that delegates to it once (agentTool); median CPU time per tool step of ${ROUNDS} alternating runs`);
  console.log('| store | saves (root run) | saves (delegating run: parent + child) | child saves | commits per step (root) | commits per step (child) | extra per child step | extra for the delegation | root per step | delegating run per child step | ratio |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of f.rows) {
    const rootPer = r.rootSaves / STEPS;
    const childPer = r.childSaves / STEPS;
    console.log(
      `| ${r.store} | ${r.rootSaves} | ${r.subSaves} | ${r.childSaves} | ${rootPer.toFixed(2)} | ${childPer.toFixed(2)} | ${(childPer - rootPer).toFixed(2)} | ` +
      `${r.subSaves - r.rootSaves} | ${us(r.rootMs)} | ${us(r.subMs)} | ${(r.subMs / r.rootMs).toFixed(3)}x |`,
    );
  }
}

/**
 * The cost of the Agent layer (docs/agent-class.md): the same tool loop, with
 * the same tool (made by `tool()` with a zod schema), the same model and the
 * same in-memory run store, through `agent.run` and through the engine's
 * `runAgent` with the options the Agent builds. What the Agent adds is one
 * load of the record and the state's digest when the leg ends; the table
 * gives the median CPU time of this process per model step of each and their
 * ratio, for short and longer runs. Runs alternate, so the machine's noise
 * falls on both; CPU time, not wall time, so other processes' load does not.
 */
import { z } from 'zod';
import { Agent, tool } from 'cairn';
import { createInMemoryAgentRunStore, runAgent, type AgentRunStore } from 'cairn/agent';
import type { LanguageModel, ModelRequest, ModelResponse } from 'cairn/models';

const ROUNDS = 61;
const WARMUP = 10;
const LOOPS = [1, 5, 20] as const;
const PAD = 'x'.repeat(200);

/** Calls the tool until `steps` calls are answered, then answers; reads the last message only. */
function loopModel(steps: number): LanguageModel {
  return {
    specificationVersion: 'cairn-model-1',
    provider: 'bench',
    modelId: 'agent-loop',
    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      const last = request.messages[request.messages.length - 1] as { role: string; toolCallId?: string } | undefined;
      const done = last?.role === 'tool' ? Number(last.toolCallId!.slice(1)) + 1 : 0;
      const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };
      if (done >= steps) return { text: 'done', toolCalls: [], finishReason: 'stop', usage };
      return { text: '', toolCalls: [{ toolCallId: `c${done}`, toolName: 'step', args: { n: done } }], finishReason: 'tool-calls', usage };
    },
  };
}

const step = tool({ name: 'step', schema: z.object({ n: z.number().int() }), execute: ({ n }) => ({ ok: true, n, pad: PAD }) });

export interface AgentFigures {
  rows: { loop: number; modelSteps: number; engine: number; agent: number }[];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function measureAgent(): Promise<AgentFigures> {
  const rows: AgentFigures['rows'] = [];
  for (const loop of LOOPS) {
    const agent = new Agent({ model: loopModel(loop), maxSteps: loop + 2, tools: [step] });
    const modelSteps = loop + 1;
    const times = { engine: [] as number[], agent: [] as number[] };
    const once = async (kind: 'engine' | 'agent', i: number) => {
      const store: AgentRunStore = createInMemoryAgentRunStore();
      const runId = `${kind}-${loop}-${i}`;
      const started = process.cpuUsage();
      const status = kind === 'agent'
        ? (await agent.run({ runId, store, prompt: 'Loop.' })).status
        : (await runAgent(agent.engineOptions(runId, { session: { store, runId, scope: 'default' }, prompt: 'Loop.' }))).status;
      const used = process.cpuUsage(started);
      const elapsed = (used.user + used.system) / 1000;
      if (status !== 'completed') throw new Error(`bench agent: a ${kind} run ended ${status}`);
      if (i >= WARMUP) times[kind].push(elapsed / modelSteps);
    };
    for (let i = 0; i < ROUNDS + WARMUP; i++) {
      // Alternate which goes first, so neither always runs on a warmer heap.
      if (i % 2 === 0) {
        await once('engine', i);
        await once('agent', i);
      } else {
        await once('agent', i);
        await once('engine', i);
      }
    }
    rows.push({ loop, modelSteps, engine: median(times.engine), agent: median(times.agent) });
  }
  return { rows };
}

export function printAgent(f: AgentFigures): void {
  const us = (ms: number) => `${(ms * 1000).toFixed(0)} µs`;
  console.log(`\nAgent: agent.run against runAgent with the options the Agent builds (same zod tool, model, in-memory store); median CPU time of ${ROUNDS} alternating runs`);
  console.log('| tool calls | model steps | runAgent per step | agent.run per step | ratio |');
  console.log('| ---: | ---: | ---: | ---: | ---: |');
  for (const r of f.rows) {
    console.log(`| ${r.loop} | ${r.modelSteps} | ${us(r.engine)} | ${us(r.agent)} | ${(r.agent / r.engine).toFixed(3)}x |`);
  }
}

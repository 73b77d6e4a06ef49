/**
 * The run the worker bench drives: a tool loop of STEPS model turns with a
 * scripted model that only answers (no request recording), a tool that
 * returns a small result, then a final answer. Shared by the bench process
 * (runs driven without the queue) and the worker processes.
 */
import type { LanguageModel, ModelRequest, ModelResponse } from 'cairn/models';
import type { AgentRunStore } from 'cairn/agent';
import type { WorkerAgent } from 'cairn/worker';

export const STEPS = 3;
const PAD = 'x'.repeat(200);

function bareModel(): LanguageModel {
  return {
    specificationVersion: 'cairn-model-1',
    provider: 'bench',
    modelId: 'bare',
    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      const last = request.messages[request.messages.length - 1] as { role: string; toolCallId?: string } | undefined;
      const done = last?.role === 'tool' ? Number(last.toolCallId!.slice(1)) + 1 : 0;
      const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };
      if (done >= STEPS) return { text: 'done', toolCalls: [], finishReason: 'stop', usage };
      return { text: '', toolCalls: [{ toolCallId: `c${done}`, toolName: 'step', args: { n: done } }], finishReason: 'tool-calls', usage };
    },
  };
}

/** The options of one leg (what the worker's agent factory returns). */
export const benchOptions = () => ({
  model: bareModel(),
  maxSteps: STEPS + 2,
  bindingId: 'bench-worker',
  tools: { step: { parameters: { type: 'object' as const }, execute: (args: { n: number }) => ({ ok: true, n: args.n, pad: PAD }) } },
});

export const benchAgents: Record<string, WorkerAgent> = { loop: () => benchOptions() };

/** The store, counting its saves (each one a commit). */
export function counting(store: AgentRunStore): { store: AgentRunStore; saves: () => number } {
  let saves = 0;
  return {
    store: {
      load: (id, o) => store.load(id, o),
      async save(envelope, o) {
        await store.save(envelope, o);
        saves++;
      },
    },
    saves: () => saves,
  };
}

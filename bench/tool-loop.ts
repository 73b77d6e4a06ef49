/**
 * The workload the benchmark scripts time: a tool loop of `steps` model turns,
 * each calling one tool, then a final answer. Without a store the run has no
 * session (the engine alone).
 */
import { runAgent, type AgentOptions, type AgentRunStore } from 'cairn/agent';
import type { LanguageModel, ModelRequest, ModelResponse } from 'cairn/models';
import { createMockModel, type MockTurn } from 'cairn/testing';

/** The pad each tool result carries, so a step adds about what a small real result would. */
const PAD = 'x'.repeat(200);

/**
 * The next turn, read from the last message alone: after the tool result of
 * call `c<k>` comes call `c<k+1>`. (Counting the tool messages of the whole
 * request would make the script itself cost O(history) a step.)
 */
function nextTurn(messages: readonly { role: string; toolCallId?: string }[], steps: number): MockTurn {
  const last = messages[messages.length - 1];
  const done = last?.role === 'tool' ? Number(last.toolCallId!.slice(1)) + 1 : 0;
  return done < steps ? { toolCalls: [{ toolName: 'step', args: { n: done }, toolCallId: `c${done}` }] } : { text: 'done' };
}

const USAGE = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };

/**
 * A scripted model that answers and does nothing else. createMockModel also
 * keeps a JSON copy of every request it is sent (what a test asserts on) and
 * counts the request's characters for its usage: work of the test tool, not of
 * the engine, so the engine's own figure is taken with this one.
 */
function bareModel(steps: number): LanguageModel {
  return {
    specificationVersion: 'cairn-model-1',
    provider: 'bench',
    modelId: 'bare',
    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      const turn = nextTurn(request.messages, steps);
      const toolCalls = turn.toolCalls ?? [];
      return {
        text: turn.text ?? '',
        toolCalls: toolCalls.map((c) => ({ toolCallId: c.toolCallId!, toolName: c.toolName, args: c.args ?? {} })),
        finishReason: toolCalls.length > 0 ? 'tool-calls' : 'stop',
        usage: { ...USAGE },
      };
    },
  };
}

/** Which scripted model answers: the bare one (the engine alone) or createMockModel (as the tests run it). */
export type LoopModel = 'bare' | 'mock';

export function toolLoop(store: AgentRunStore | null, runId: string, steps: number, model: LoopModel = 'mock', extra: Partial<AgentOptions> = {}) {
  return runAgent({
    model: model === 'bare' ? bareModel(steps) : createMockModel({ strict: false, responses: [(request) => nextTurn(request.messages, steps)] }),
    prompt: 'Loop.',
    maxSteps: steps + 2,
    ...(store ? { session: { store, runId, scope: 'bench' } } : {}),
    tools: { step: { parameters: { type: 'object' }, execute: (args: { n: number }) => ({ ok: true, n: args.n, pad: PAD }) } },
    ...extra,
  });
}

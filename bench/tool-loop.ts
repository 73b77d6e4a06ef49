/**
 * The workload both benchmark scripts time: a tool loop of `steps` model turns,
 * each calling one tool, then a final answer. Without a store the run has no
 * session (the engine alone).
 */
import { runAgent, type AgentRunStore } from 'cairn/agent';
import { createMockModel, type MockTurn } from 'cairn/testing';

export function toolLoop(store: AgentRunStore | null, runId: string, steps: number) {
  const turn = (request: { messages: { role: string }[] }): MockTurn => {
    const done = request.messages.filter((m) => m.role === 'tool').length;
    return done < steps ? { toolCalls: [{ toolName: 'step', args: { n: done }, toolCallId: `c${done}` }] } : { text: 'done' };
  };
  return runAgent({
    model: createMockModel({ strict: false, responses: [turn] }),
    prompt: 'Loop.',
    maxSteps: steps + 2,
    ...(store ? { session: { store, runId, scope: 'bench' } } : {}),
    tools: { step: { parameters: { type: 'object' }, execute: (args: { n: number }) => ({ ok: true, n: args.n, pad: 'x'.repeat(200) }) } },
  });
}

/**
 * The workload the benchmark scripts time: a tool loop of `steps` model turns,
 * each calling one tool, then a final answer. Without a store the run has no
 * session (the engine alone).
 */
import { runAgent, type AgentRunStore } from 'cairn/agent';
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

export function toolLoop(store: AgentRunStore | null, runId: string, steps: number) {
  return runAgent({
    model: createMockModel({ strict: false, responses: [(request) => nextTurn(request.messages, steps)] }),
    prompt: 'Loop.',
    maxSteps: steps + 2,
    ...(store ? { session: { store, runId, scope: 'bench' } } : {}),
    tools: { step: { parameters: { type: 'object' }, execute: (args: { n: number }) => ({ ok: true, n: args.n, pad: PAD }) } },
  });
}

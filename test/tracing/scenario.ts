/** The traced run of the tracing tests: a lookup, then a deploy that waits for approval, then the answer. */
import type { AgentOptions, AgentRunStore, ResumeOptions } from '../../src/agent/index.js';
import type { ModelRequest } from '../../src/models/types.js';
import { createMockModel, type MockTurn } from '../../src/testing/index.js';

export const PROMPT_CANARY = 'prompt-canary-3317';
export const ARG_CANARY = 'argument-canary-8852';
export const RESULT_CANARY = 'result-canary-1209';

/** The model's turn, read from the request, so that a leg in a fresh process goes on where the record stands. */
function answer(request: ModelRequest): MockTurn {
  const answered = new Set(request.messages.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
  if (!answered.has('c-lookup')) return { toolCalls: [{ toolCallId: 'c-lookup', toolName: 'lookup', args: { q: ARG_CANARY } }], usage: { inputTokens: 11, outputTokens: 5 } };
  if (!answered.has('c-deploy')) return { toolCalls: [{ toolCallId: 'c-deploy', toolName: 'deploy', args: { build: ARG_CANARY } }], usage: { inputTokens: 20, outputTokens: 6 } };
  return { text: 'Deployed.', usage: { inputTokens: 30, outputTokens: 2 } };
}

export function tracedOptions(store: AgentRunStore, extra: Partial<AgentOptions> = {}): ResumeOptions {
  return {
    model: createMockModel({ modelId: 'scripted-1', responses: [answer, answer, answer] }),
    prompt: PROMPT_CANARY,
    session: { store, runId: 'traced-1', scope: 'tenant-t' },
    tools: {
      lookup: { parameters: { type: 'object' }, execute: () => ({ found: RESULT_CANARY }) },
      deploy: { parameters: { type: 'object' }, needsApproval: true, execute: () => ({ deployed: RESULT_CANARY }) },
    },
    ...extra,
  };
}

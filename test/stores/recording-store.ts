/**
 * Helpers for the store tests: a run store wrapper that saves through `inner`,
 * then keeps a JSON copy of every envelope it was handed (a copy, so the
 * engine's later changes to its objects do not reach the list), and a run that
 * suspends after some tool steps.
 */
import type { AgentRunEnvelope, AgentRunStore, AgentTool, JsonValue } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

export const json = <T>(value: T): T => JSON.parse(JSON.stringify(value));

export function recording(inner: AgentRunStore): AgentRunStore & { saved: AgentRunEnvelope[] } {
  const saved: AgentRunEnvelope[] = [];
  return {
    saved,
    load: (runId, options) => inner.load(runId, options),
    async save(envelope, options) {
      await inner.save(envelope, options);
      saved.push(json(envelope));
    },
  };
}

const publish: AgentTool = { parameters: { type: 'object', properties: {} }, needsApproval: true, execute: () => 'published' };

/**
 * Run options for `steps` tool steps of two parallel calls each (`step`, with the arguments `argsOf` gives call `a`
 * and call `b` of step n), then a `publish` call that waits for an approval.
 */
export function waitingRun(
  store: AgentRunStore, runId: string, steps: number, step: AgentTool,
  argsOf: (n: number, call: 'a' | 'b') => { [key: string]: JsonValue } = (n) => ({ n }),
) {
  const turns = Array.from({ length: steps }, (_, n) => ({
    toolCalls: (['a', 'b'] as const).map((call) => ({ toolName: 'step', args: argsOf(n, call), toolCallId: `${call}${n}` })),
  }));
  return {
    model: createMockModel({ responses: [...turns, { toolCalls: [{ toolName: 'publish', args: {}, toolCallId: 'p' }] }] }),
    prompt: 'Work.',
    tools: { step, publish },
    maxSteps: steps + 3,
    session: { store, runId, scope: 'tenant-a' },
  };
}

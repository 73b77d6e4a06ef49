/**
 * A run store wrapper for the store tests: it saves through `inner`, then
 * keeps a JSON copy of every envelope it was handed (a copy, so the engine's
 * later changes to its objects do not reach the list).
 */
import type { AgentRunEnvelope, AgentRunStore } from 'cairn/agent';

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

import { RevisionConflictError } from '../errors/index.js';
import type { AgentRunEnvelope, AgentRunStore } from '../agent/types.js';

export interface InMemoryAgentRunStore extends AgentRunStore {
  /** Every stored run id, in insertion order. */
  runIds(): string[];
}

/**
 * A volatile store for tests and demos: nothing survives the process. It keeps
 * a deep copy of each envelope (so later changes by the caller cannot reach
 * it) and fences saves by revision like the durable stores. `seed` envelopes
 * are stored as they are, revisions kept.
 */
export function createInMemoryAgentRunStore(seed: Iterable<AgentRunEnvelope> = []): InMemoryAgentRunStore {
  const records = new Map<string, string>();
  for (const envelope of seed) records.set(envelope.runId, JSON.stringify(envelope));
  return {
    async load(runId) {
      const stored = records.get(runId);
      return stored === undefined ? undefined : (JSON.parse(stored) as AgentRunEnvelope);
    },
    async save(envelope) {
      const stored = records.get(envelope.runId);
      const storedRevision = stored === undefined ? 0 : (JSON.parse(stored) as AgentRunEnvelope).revision;
      if (envelope.revision !== storedRevision + 1) {
        throw new RevisionConflictError(envelope.runId, envelope.revision - 1, stored === undefined ? null : storedRevision);
      }
      records.set(envelope.runId, JSON.stringify(envelope));
    },
    runIds: () => [...records.keys()],
  };
}

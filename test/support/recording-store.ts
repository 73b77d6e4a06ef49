/**
 * A store for tests that look at what a run saved: every load and save goes
 * on to `inner`, and each envelope it saved is kept in order, after the save
 * succeeded. Kept as a structured clone (what was saved, whatever the engine
 * does with the object afterwards), or with `keep: 'same'` as the very object
 * the engine handed over, for tests about that object.
 */
import { createInMemoryAgentRunStore, type AgentRunEnvelope, type AgentRunStore } from 'cairn/agent';

export function recordingStore(inner: AgentRunStore = createInMemoryAgentRunStore(), keep: 'copy' | 'same' = 'copy') {
  const saved: AgentRunEnvelope[] = [];
  const store: AgentRunStore = {
    load: (runId, options) => inner.load(runId, options),
    async save(envelope, options) {
      await inner.save(envelope, options);
      saved.push(keep === 'same' ? envelope : structuredClone(envelope));
    },
  };
  return { store, saved };
}

/**
 * A fresh store object over a copy of another store's runs: what a restarted
 * process sees when it opens the same database.
 */
import type { AgentRunEnvelope, AgentRunStore } from '../../agent/types.js';
import { createInMemoryAgentRunStore, type InMemoryAgentRunStore } from '../../stores/in-memory.js';
import { copyEnvelope } from './internal.js';

/** A volatile store that keeps deep copies and fences saves by revision, seeded with envelopes as they are. */
export type FencedMapStore = InMemoryAgentRunStore;

/**
 * Creates a volatile store holding deep copies of `seed`, each under its own run id and with its
 * own revision. A save must carry the stored revision plus one (1 for a new run), like the durable
 * stores; otherwise it rejects with a `RevisionConflictError`.
 */
export function createFencedMapStore(seed: Iterable<AgentRunEnvelope> = []): FencedMapStore {
  return createInMemoryAgentRunStore(seed);
}

/**
 * Copies the latest stored envelope of each run in `runIds` from `source` into a new
 * {@link createFencedMapStore} store, revisions kept, so a resume through it writes the revisions
 * that follow. The new object shares nothing with `source`: a run abandoned on `source` (its save
 * hung, or its process "crashed") does not keep the copy busy, and nothing written to one store
 * reaches the other. A run id `source` does not hold is left out.
 *
 * Pass the underlying store, not a crashed or faulty wrapper: their loads may hang or fail.
 */
export async function cloneStore(source: AgentRunStore, runIds: readonly string[]): Promise<FencedMapStore> {
  const seed: AgentRunEnvelope[] = [];
  for (const runId of runIds) {
    const envelope = await source.load(runId);
    if (envelope !== undefined) seed.push(copyEnvelope(envelope));
  }
  return createFencedMapStore(seed);
}

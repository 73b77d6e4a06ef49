/**
 * A fresh store object over a copy of another store's runs: what a restarted
 * process sees when it opens the same database.
 */
import { RevisionConflictError } from '../../errors/index.js';
import type { AgentRunEnvelope, AgentRunStore } from '../../agent/types.js';
import { copyEnvelope } from './internal.js';

/** A volatile store that keeps deep copies and fences saves by revision, seeded with envelopes as they are. */
export interface FencedMapStore extends AgentRunStore {
  /** Every stored run id, in insertion order. */
  runIds(): string[];
}

/**
 * Creates a volatile store holding deep copies of `seed`, each under its own run id and with its
 * own revision. A save must carry the stored revision plus one (1 for a new run), like the durable
 * stores; otherwise it rejects with a `RevisionConflictError`.
 */
export function createFencedMapStore(seed: Iterable<AgentRunEnvelope> = []): FencedMapStore {
  const records = new Map<string, string>();
  for (const envelope of seed) records.set(envelope.runId, JSON.stringify(envelope));
  return {
    async load(runId) {
      const stored = records.get(runId);
      return stored === undefined ? undefined : (JSON.parse(stored) as AgentRunEnvelope);
    },
    async save(envelope) {
      const stored = records.get(envelope.runId);
      const storedRevision = stored === undefined ? null : (JSON.parse(stored) as AgentRunEnvelope).revision;
      if (envelope.revision !== (storedRevision ?? 0) + 1) {
        throw new RevisionConflictError(envelope.runId, envelope.revision - 1, storedRevision);
      }
      records.set(envelope.runId, JSON.stringify(envelope));
    },
    runIds: () => [...records.keys()],
  };
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

/** Stores for the V3 run tests: one that counts saves and blobs, one whose Nth save throws (a crash at that save). */
import {
  createInMemoryAgentRunStoreV3, type AgentRunEnvelopeV3, type AgentRunSaveOptionsV3, type AgentRunStoreV3,
} from 'cairn/agent';

/** A V3 store that keeps a summary of every save it made, and whose Nth save can throw (a crash at that save). */
export interface SavingStoreV3<S> extends AgentRunStoreV3 {
  saves: S[];
  loads: number;
  /** Makes the save with this 1-based number throw (once) before it writes. */
  failSave(n: number): void;
}

export function savingStoreV3<S>(
  summarize: (envelope: AgentRunEnvelopeV3, options: AgentRunSaveOptionsV3 | undefined) => S,
  inner: AgentRunStoreV3 = createInMemoryAgentRunStoreV3(),
): SavingStoreV3<S> {
  let failAt = -1;
  let count = 0;
  const store: SavingStoreV3<S> = {
    checkpointVersion: 3,
    saves: [],
    loads: 0,
    failSave: (n) => {
      failAt = n;
    },
    load: (runId, options) => {
      store.loads++;
      return inner.load(runId, options);
    },
    save: async (envelope: AgentRunEnvelopeV3, options?: AgentRunSaveOptionsV3) => {
      count++;
      if (count === failAt) {
        failAt = -1;
        throw new Error(`injected: save ${count} failed`);
      }
      await inner.save(envelope, options);
      store.saves.push(summarize(envelope, options));
    },
    list: (q) => inner.list(q),
    putBlob: (b) => inner.putBlob(b),
    getBlob: (d) => inner.getBlob(d),
    prune: (o) => inner.prune(o),
    redactForgotten: (e) => inner.redactForgotten(e),
    now: () => inner.now(),
  };
  return store;
}

export type CountingStoreV3 = SavingStoreV3<{ revision: number; status: string; state: unknown; blobs: string[] }>;

/** Saves summarized by revision, status, chart state and the blobs they carried. */
export const countingStoreV3 = (inner?: AgentRunStoreV3): CountingStoreV3 => savingStoreV3((envelope, options) => ({
  revision: envelope.revision, status: envelope.status, state: (envelope.snapshot as { value: unknown }).value,
  blobs: (options?.blobs ?? []).map((b) => b.digest),
}), inner);

/** The text of a message's content. */
export const textOf = (m: { content: unknown }) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content));

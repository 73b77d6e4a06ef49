/** Stores for the V3 run tests: one that counts saves and blobs, one whose Nth save throws (a crash at that save). */
import {
  createInMemoryAgentRunStoreV3, type AgentRunEnvelopeV3, type AgentRunSaveOptionsV3, type AgentRunStoreV3,
} from 'cairn/agent';

export interface CountingStoreV3 extends AgentRunStoreV3 {
  saves: Array<{ revision: number; status: string; state: unknown; blobs: string[] }>;
  loads: number;
  /** Makes the save with this 1-based number throw (once) before it writes. */
  failSave(n: number): void;
}

export function countingStoreV3(inner: AgentRunStoreV3 = createInMemoryAgentRunStoreV3()): CountingStoreV3 {
  let failAt = -1;
  let count = 0;
  const store: CountingStoreV3 = {
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
      store.saves.push({
        revision: envelope.revision, status: envelope.status, state: (envelope.snapshot as { value: unknown }).value,
        blobs: (options?.blobs ?? []).map((b) => b.digest),
      });
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

/** The text of a message's content. */
export const textOf = (m: { content: unknown }) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content));

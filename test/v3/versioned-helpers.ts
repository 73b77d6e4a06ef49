/** Stores and models for the versioned-memory V3 run tests. */
import type { AgentRunStoreV3 } from 'cairn/agent';
import { savingStoreV3, type SavingStoreV3 } from './run-helpers.js';
import {
  createInMemoryVersionedMemoryStore, createMemorySession, type MemorySessionOptions, type VersionedMemoryStore,
} from 'cairn/memory/versioned';
import { createMockModel } from 'cairn/testing';

export interface SavedIntents {
  revision: number;
  status: string;
  /** `<operationId>=<status>` of each intent. */
  intents: string[];
  /** `<toolName>:<status>` of each memory tool receipt. */
  receipts: string[];
}

export type RecordingStoreV3 = SavingStoreV3<SavedIntents>;

/** A V3 store that records the intents and memory tool receipts of every save, and whose Nth save can throw. */
export const recordingStoreV3 = (inner?: AgentRunStoreV3): RecordingStoreV3 => savingStoreV3((envelope) => ({
  revision: envelope.revision,
  status: envelope.status,
  intents: (envelope.memoryIntents ?? []).map((i) => `${i.operationId}=${i.status}`),
  receipts: Object.values(envelope.receipts).filter((r) => r.toolName.startsWith('memory_')).map((r) => `${r.toolName}:${r.status}`),
}), inner);

export interface CountingMemoryStore extends VersionedMemoryStore {
  /** Commits that applied something (not replays). */
  applied: string[];
  /** Every commit call, replays included. */
  calls: number;
}

/** A versioned memory store that counts the commits that applied (a replay under a committed operation id is not one). */
export function countingMemoryStore(inner: VersionedMemoryStore = createInMemoryVersionedMemoryStore()): CountingMemoryStore {
  const store = Object.create(inner) as CountingMemoryStore;
  store.applied = [];
  store.calls = 0;
  store.commit = async (input) => {
    store.calls++;
    const result = await inner.commit(input);
    if (!result.replayed) store.applied.push(input.operationId);
    return result;
  };
  for (const name of ['receipt', 'get', 'history', 'list', 'search', 'scopeRevision', 'forget', 'forgotten'] as const) {
    (store as unknown as Record<string, unknown>)[name] = (inner[name] as (...a: unknown[]) => unknown).bind(inner);
  }
  return store;
}

/** A session on a counting store; `llm` answers one fact citing the first message by default. */
export function memorySession(store: VersionedMemoryStore, extra: Partial<MemorySessionOptions> = {}) {
  let n = 0;
  return createMemorySession({
    store, scope: { userId: 'ada' }, generateId: () => `r${++n}`,
    llm: async () => '{"facts":[{"text":"Ada prefers tea.","sources":["s0"]}]}',
    ...extra,
  });
}

/** A model that calls memory_remember once (call c1), then answers: a replayed step asks again, as a model would. */
export const rememberingModel = (text = 'Ada prefers tea.') => createMockModel({
  strict: false,
  responses: [(request) => (request.messages.some((m) => m.role === 'tool')
    ? { text: 'noted' }
    : { toolCalls: [{ toolName: 'memory_remember', args: { text }, toolCallId: 'c1' }] })],
});

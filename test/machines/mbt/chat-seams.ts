/**
 * Seams the run-end scenarios with a chat share (chat-end-scenarios.ts,
 * memory-intent-run-scenarios.ts): the run input of a run that projects to a
 * chat, a lease that is lost at its first renewal, and a chat store slow
 * enough for that loss to happen during a chat write.
 */
import type { LeaseProvider } from 'cairn/agent';
import { createInMemoryChatStore } from '../../../src/chat/in-memory.js';
import type { ChatStore } from '../../../src/chat/types.js';
import type { RunInput } from '../../../machines/index.js';

/** A run that projects its transcript to chat c1, nothing written yet. */
export const chatInput: Partial<RunInput> = { chat: { chatId: 'c1', inputCount: 1, status: 'pending', cursor: 0 } };

/** A lease the provider takes back at its first renewal (every ttl / 3 = 10 ms). */
export const losingLease = {
  acquire: async (key: string, owner: string, ttlMs: number) => ({ key, owner, token: 1, expiresAt: Date.now() + ttlMs }),
  renew: async () => null,
  release: async () => undefined,
} as unknown as LeaseProvider;

/** A chat store whose writes take long enough for the lease to be lost meanwhile. */
export function slowChats(): ChatStore {
  const inner = createInMemoryChatStore();
  return {
    loadChat: (id) => inner.loadChat(id),
    saveChat: async (id, record) => {
      await new Promise((resolve) => setTimeout(resolve, 60));
      return inner.saveChat(id, record);
    },
  };
}

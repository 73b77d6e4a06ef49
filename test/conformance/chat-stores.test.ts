/**
 * The chat store conformance suite against the three conditional chat stores:
 * the in-memory one, and `ops.chats` of the SQLite and PostgreSQL ops stores
 * (durable: every reopen() is another ops store on the same file or schema,
 * as a second process opens it); and the plain-ChatStore half against a
 * store that offers only loadChat and saveChat.
 */
import { describe, it } from 'vitest';
import { createInMemoryChatStore, type ChatStore } from 'cairn/chat';
import { defineChatStoreConformance } from 'cairn/testing';
import { defineStoreMatrix, opsBackends, reopening } from './store-matrix.js';

defineStoreMatrix({
  label: 'chat conformance',
  define: defineChatStoreConformance,
  inMemory: () => ({ store: createInMemoryChatStore() }),
  backends: opsBackends({ synchronous: 'normal' }),
  fixture: (opened) => reopening(opened, (ops) => ops.chats),
});

// A store of your own with no conditional writes: only loadChat and saveChat, over the in-memory one.
defineChatStoreConformance({
  name: 'plain ChatStore',
  conditional: false,
  async create() {
    const inner = createInMemoryChatStore();
    const plain: ChatStore = {
      loadChat: async (chatId) => {
        const record = await inner.loadChat(chatId);
        if (record) delete record.revision;
        return record;
      },
      saveChat: (chatId, record) => inner.saveChat(chatId, record),
    };
    return { store: plain };
  },
}, { describe, it });

/** `createInMemoryChatStore`: a ConditionalChatStore in this process's memory. */
import { checkChatId, checkChatRecord, checkChatWrite, copyChatRecord } from './records.js';
import type { ChatReadResult, ChatRecord, ConditionalChatStore } from './types.js';

interface Entry {
  revision: number;
  /** `null`: the chat was deleted (a tombstone). */
  record: ChatRecord | null;
}

/**
 * A conditional chat store in memory, for tests, demos and single-process
 * apps: nothing survives the process. Every call copies what it takes and
 * what it returns, and every write moves the chat's revision up by one.
 *
 * @example
 * ```ts
 * const chats = createInMemoryChatStore();
 * await runAgent({ model, prompt: 'Hi!', chat: { store: chats, chatId: 'chat-1', scope: { userId: 'ada' } } });
 * const record = await chats.loadChat('chat-1');
 * ```
 */
export function createInMemoryChatStore(): ConditionalChatStore {
  const chats = new Map<string, Entry>();
  const put = (chatId: string, record: ChatRecord | null): number => {
    const revision = (chats.get(chatId)?.revision ?? 0) + 1;
    chats.set(chatId, { revision, record });
    return revision;
  };
  return {
    async loadChat(chatId) {
      const id = checkChatId(chatId, 'loadChat');
      const entry = chats.get(id);
      return entry?.record ? copyChatRecord(entry.record, entry.revision) : undefined;
    },
    async saveChat(chatId, record) {
      const id = checkChatId(chatId, 'saveChat');
      put(id, checkChatRecord(record, id, 'saveChat'));
    },
    async readChat(chatId): Promise<ChatReadResult> {
      const id = checkChatId(chatId, 'readChat');
      const entry = chats.get(id);
      if (!entry) return { state: 'absent', revision: 0 };
      if (!entry.record) return { state: 'tombstone', revision: entry.revision };
      return { state: 'stored', record: copyChatRecord(entry.record, entry.revision), revision: entry.revision };
    },
    async writeChat(chatId, write, options) {
      const id = checkChatId(chatId, 'writeChat');
      const { record, expectedRevision } = checkChatWrite(write, options, id);
      const stored = chats.get(id)?.revision ?? 0;
      if (stored !== expectedRevision) return { status: 'conflict', revision: stored };
      return { status: 'written', revision: put(id, record) };
    },
    async deleteChat(chatId) {
      const id = checkChatId(chatId, 'deleteChat');
      if (!chats.get(id)?.record) return false;
      put(id, null);
      return true;
    },
  };
}

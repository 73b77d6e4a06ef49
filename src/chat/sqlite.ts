/**
 * The conditional chat store in the SQLite ops file (`cairn_chats`, created by
 * the ops store's migrations), reached as `ops.chats`. One row a chat: its
 * revision and its record as JSON text, NULL once deleted (the tombstone).
 * Every write is one statement that compares and moves the revision, so two
 * writers at the same revision can never both land.
 */
import type Database from 'better-sqlite3';
import { CairnError, CairnTypeError, PersistenceError } from '../errors/index.js';
import { chatFromText, chatToText, checkChatId, checkChatRecord, checkChatWrite, type ChatRow } from './records.js';
import type { ChatReadResult, ChatRecord, ConditionalChatStore } from './types.js';

export interface SqliteChatOptions {
  /** A read-only connection: chats are read, writes are refused. */
  readonly: boolean;
  /** The file has no chat table (a read-only store older than its migration): no chat is stored. */
  missing: boolean;
}

/** @internal Takes a better-sqlite3 handle, whose types stay out of the published declarations (a user need not install @types/better-sqlite3). */
export function createSqliteChatStore(db: Database.Database, options: SqliteChatOptions): ConditionalChatStore {
  let prepared: ReturnType<typeof prepare> | undefined;
  const statements = () => (prepared ??= prepare(db));
  const refuseWrite = (what: string) => {
    if (options.readonly) throw new CairnTypeError('invalid_options', `The ops store was opened read-only: it cannot ${what} a chat.`);
  };
  const read = (chatId: string): ChatRow | undefined => (options.missing ? undefined : statements().read.get(chatId) as ChatRow | undefined);
  const write = (chatId: string, record: ChatRecord | null, expectedRevision: number): boolean => {
    const s = statements();
    const text = record === null ? null : chatToText(record);
    const changes = expectedRevision === 0 ? s.create.run(chatId, text).changes : s.swap.run(text, chatId, expectedRevision).changes;
    return changes === 1;
  };

  return guarded({
    async loadChat(chatId) {
      const id = checkChatId(chatId, 'loadChat');
      const row = read(id);
      return row && row.record !== null ? chatFromText(id, row.record, Number(row.revision)) : undefined;
    },
    async saveChat(chatId, record) {
      const id = checkChatId(chatId, 'saveChat');
      const checked = checkChatRecord(record, id, 'saveChat');
      refuseWrite('save');
      statements().save.run(id, chatToText(checked));
    },
    async readChat(chatId): Promise<ChatReadResult> {
      const id = checkChatId(chatId, 'readChat');
      const row = read(id);
      if (!row) return { state: 'absent', revision: 0 };
      const revision = Number(row.revision);
      if (row.record === null) return { state: 'tombstone', revision };
      return { state: 'stored', record: chatFromText(id, row.record, revision), revision };
    },
    async writeChat(chatId, write_, options_) {
      const id = checkChatId(chatId, 'writeChat');
      const { record, expectedRevision } = checkChatWrite(write_, options_, id);
      refuseWrite('write');
      if (write(id, record, expectedRevision)) return { status: 'written', revision: expectedRevision + 1 };
      return { status: 'conflict', revision: Number(read(id)?.revision ?? 0) };
    },
    async deleteChat(chatId) {
      const id = checkChatId(chatId, 'deleteChat');
      refuseWrite('delete');
      return statements().remove.run(id).changes === 1;
    },
  });
}

function prepare(db: Database.Database) {
  return {
    read: db.prepare('SELECT chat_id, revision, record FROM cairn_chats WHERE chat_id = ?'),
    create: db.prepare('INSERT INTO cairn_chats (chat_id, revision, record) VALUES (?, 1, ?) ON CONFLICT (chat_id) DO NOTHING'),
    swap: db.prepare('UPDATE cairn_chats SET revision = revision + 1, record = ? WHERE chat_id = ? AND revision = ?'),
    save: db.prepare(`INSERT INTO cairn_chats (chat_id, revision, record) VALUES (?, 1, ?)
ON CONFLICT (chat_id) DO UPDATE SET revision = cairn_chats.revision + 1, record = excluded.record`),
    remove: db.prepare('UPDATE cairn_chats SET revision = revision + 1, record = NULL WHERE chat_id = ? AND record IS NOT NULL'),
  };
}

/**
 * Every call with the driver's failures (a closed connection, a full disk, a
 * busy file past its timeout) turned into a PersistenceError that keeps the
 * driver's error as its cause; Cairn's own errors pass as they are.
 */
function guarded<T extends object>(store: T): T {
  const wrapped = {} as Record<string, unknown>;
  for (const [name, call] of Object.entries(store) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    wrapped[name] = async (...args: unknown[]) => {
      try {
        return await call(...args);
      } catch (error) {
        if (CairnError.isInstance(error)) throw error;
        throw new PersistenceError(`The SQLite chat store's ${name} failed: ${error instanceof Error ? error.message : String(error)}`, error);
      }
    };
  }
  return wrapped as T;
}

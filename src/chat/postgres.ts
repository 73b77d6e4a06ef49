/**
 * The conditional chat store in the PostgreSQL ops schema (`cairn_chats`,
 * created by the ops store's `setup()`), reached as `ops.chats`. One row a
 * chat: its revision and its record as JSON text, NULL once deleted (the
 * tombstone). Every write is one statement that compares and moves the
 * revision (an INSERT that does nothing on a taken id, or an UPDATE on the
 * expected revision), so of two writers at the same revision one lands.
 */
import { quoteSchema, type Db } from '../stores/postgres/sql.js';
import { chatFromText, chatToText, checkChatId, checkChatRecord, checkChatWrite, type ChatRow } from './records.js';
import type { ChatReadResult, ConditionalChatStore } from './types.js';

/**
 * The chat store of a PostgreSQL ops store (`ops.chats`), on its pool and schema.
 * @internal Takes the ops store's connection, whose pg types stay out of the published declarations.
 */
export function createPostgresChatStore(db: Db): ConditionalChatStore {
  const table = `${quoteSchema(db.schema)}.cairn_chats`;
  const sql = {
    read: `SELECT chat_id, revision, record FROM ${table} WHERE chat_id = $1`,
    create: `INSERT INTO ${table} (chat_id, revision, record) VALUES ($1, 1, $2) ON CONFLICT (chat_id) DO NOTHING RETURNING revision`,
    swap: `UPDATE ${table} SET revision = revision + 1, record = $1 WHERE chat_id = $2 AND revision = $3 RETURNING revision`,
    save: `INSERT INTO ${table} AS c (chat_id, revision, record) VALUES ($1, 1, $2)
ON CONFLICT (chat_id) DO UPDATE SET revision = c.revision + 1, record = excluded.record`,
    remove: `UPDATE ${table} SET revision = revision + 1, record = NULL WHERE chat_id = $1 AND record IS NOT NULL RETURNING revision`,
  };
  const read = async (chatId: string): Promise<ChatRow | undefined> =>
    (await db.query<ChatRow>('Reading a chat', sql.read, [chatId]))[0];

  return {
    async loadChat(chatId) {
      const id = checkChatId(chatId, 'loadChat');
      const row = await read(id);
      return row && row.record !== null ? chatFromText(id, row.record, Number(row.revision)) : undefined;
    },
    async saveChat(chatId, record) {
      const id = checkChatId(chatId, 'saveChat');
      const text = chatToText(checkChatRecord(record, id, 'saveChat'));
      await db.query('Saving a chat', sql.save, [id, text], true);
    },
    async readChat(chatId): Promise<ChatReadResult> {
      const id = checkChatId(chatId, 'readChat');
      const row = await read(id);
      if (!row) return { state: 'absent', revision: 0 };
      const revision = Number(row.revision);
      if (row.record === null) return { state: 'tombstone', revision };
      return { state: 'stored', record: chatFromText(id, row.record, revision), revision };
    },
    async writeChat(chatId, write, options) {
      const id = checkChatId(chatId, 'writeChat');
      const { record, expectedRevision } = checkChatWrite(write, options, id);
      const text = record === null ? null : chatToText(record);
      const rows = expectedRevision === 0
        ? await db.query<{ revision: number }>('Writing a chat', sql.create, [id, text], true)
        : await db.query<{ revision: number }>('Writing a chat', sql.swap, [text, id, expectedRevision], true);
      if (rows.length === 1) return { status: 'written', revision: Number(rows[0]!.revision) };
      return { status: 'conflict', revision: Number((await read(id))?.revision ?? 0) };
    },
    async deleteChat(chatId) {
      const id = checkChatId(chatId, 'deleteChat');
      return (await db.query('Deleting a chat', sql.remove, [id], true)).length === 1;
    },
  };
}

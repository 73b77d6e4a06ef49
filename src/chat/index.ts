/**
 * `cairn/chat`: where a run's transcript is projected for people to read. The
 * store contract (plain and conditional), the in-memory store, and the typed
 * error; the SQLite and PostgreSQL stores are `ops.chats` of
 * `createSqliteOpsStore` (cairn/ops/sqlite) and `createPostgresOpsStore`
 * (cairn/ops/postgres). See docs/chat.md.
 */
export { createInMemoryChatStore } from './in-memory.js';
export { ChatStoreError } from './errors.js';
export { CHAT_SCOPE_KEYS } from './records.js';
export type {
  ChatDeletion,
  ChatMessage,
  ChatReadResult,
  ChatRecord,
  ChatScope,
  ChatStore,
  ChatWriteOptions,
  ChatWriteResult,
  ConditionalChatStore,
} from './types.js';

/**
 * The chat store's contract: what a stored chat is, and the calls every
 * backend (in memory, SQLite, PostgreSQL, yours) answers the same way. A run
 * with `chat` writes its transcript here as a projection of its checkpoint;
 * the conformance suite in cairn/testing checks a store against this file.
 */
import type { ModelMessage } from '../models/types.js';

/** A chat message: the same message shape a run sends to its model. */
export type ChatMessage = ModelMessage;

/**
 * Whose chat: one or more of a user, an agent and a chat, with the same keys
 * and rules as a memory scope. A run compares the stored record's scope with
 * its own `chat.scope` and never overwrites a chat of another scope. Any
 * other key, a prototype name or a value that is not a non-empty string is
 * refused with `chat_record_invalid`.
 */
export interface ChatScope {
  userId?: string;
  agentId?: string;
  chatId?: string;
}

/**
 * One stored chat, always written whole. `messageIds[i]` names `messages[i]`:
 * the two lists have the same length and the ids are distinct non-empty
 * strings (a run gives its own turns `<runId>:<n>` and keeps the id of a
 * message it continued from the stored chat).
 */
export interface ChatRecord {
  chatId: string;
  scope: ChatScope;
  messages: ChatMessage[];
  messageIds: string[];
  /** When the writer wrote it (ms, on the writer's clock). The store keeps what it is given. */
  updatedAt?: number;
  /** Plain JSON the writer keeps with the chat (a title, the last run id ...). */
  metadata?: Record<string, unknown>;
  /**
   * The revision the record was read at. A conditional store sets it on every
   * record it returns and ignores it on a write (the store counts revisions).
   */
  revision?: number;
}

/**
 * A chat store: `saveChat` replaces the whole record, so writing the same
 * record twice leaves one copy of every message. Both calls refuse a chat id
 * that is not a non-empty string, and `saveChat` a record that is not
 * well-formed (see {@link ChatRecord}) or whose `chatId` is not the one
 * named, with `ChatStoreError` `chat_record_invalid` and nothing written.
 * Returned records are copies: changing one changes nothing stored.
 */
export interface ChatStore {
  /** The stored chat, or `undefined` when none is stored (or it was deleted). */
  loadChat(chatId: string): Promise<ChatRecord | undefined>;
  /** Stores the whole record, over whatever is stored (a tombstone included). */
  saveChat(chatId: string, record: ChatRecord): Promise<void>;
}

/** What `readChat` found. Revision 0 means nothing was ever written under the id. */
export type ChatReadResult =
  | { state: 'absent'; revision: 0 }
  | { state: 'stored'; record: ChatRecord; revision: number }
  /** The chat was deleted: the id stays taken, at its own revision. */
  | { state: 'tombstone'; revision: number };

/** A conditional write that deletes the chat, leaving a tombstone. */
export interface ChatDeletion {
  deleted: true;
}

export interface ChatWriteOptions {
  /** The revision the write was decided at (what `readChat` returned; 0 for a chat never written). */
  expectedRevision: number;
}

/**
 * What a conditional write did. A conflict is an answer, not an error: the
 * caller reads again and decides again (a run does so three times, then
 * reports `RevisionConflictError` with `subsystem: 'chat'`).
 */
export type ChatWriteResult =
  | { status: 'written'; revision: number }
  /** Nothing was written; `revision` is the one stored now (0 when nothing ever was). */
  | { status: 'conflict'; revision: number };

/**
 * A chat store with compare-and-swap writes. Every write (`saveChat`,
 * `writeChat`, `deleteChat`) moves the chat's revision up by one; a write at
 * a revision that is not the stored one changes nothing. Of any number of
 * concurrent writes at the same revision exactly one is written.
 */
export interface ConditionalChatStore extends ChatStore {
  readChat(chatId: string): Promise<ChatReadResult>;
  writeChat(chatId: string, write: ChatRecord | ChatDeletion, options: ChatWriteOptions): Promise<ChatWriteResult>;
  /** Deletes the chat unconditionally, leaving a tombstone; false when nothing was stored (absent or already deleted). */
  deleteChat(chatId: string): Promise<boolean>;
}

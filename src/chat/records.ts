/**
 * What every chat backend shares: the checks of a chat id, a scope and a
 * record, and the copy a store keeps. A backend checks first and writes after,
 * so a refused call writes nothing on any backend.
 */
import { StoredRecordError } from '../errors/index.js';
import { ChatStoreError } from './errors.js';
import type { ChatDeletion, ChatRecord, ChatScope, ChatWriteOptions } from './types.js';

/** The keys a chat scope may have (the same as a memory scope's). */
export const CHAT_SCOPE_KEYS = ['userId', 'agentId', 'chatId'] as const;
const KNOWN: ReadonlySet<string> = new Set(CHAT_SCOPE_KEYS);

/** Checks a chat id: a non-empty string. */
export function checkChatId(chatId: unknown, where: string): string {
  if (typeof chatId !== 'string' || chatId === '') {
    throw new ChatStoreError(`${where}: chatId must be a non-empty string, got ${describe(chatId)}.`);
  }
  return chatId;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Checks a chat scope and returns a clean copy: own keys of the known names only, each a non-empty string, at least one. */
export function checkChatScope(scope: unknown, where: string, chatId?: string): ChatScope {
  const fail = (why: string) => new ChatStoreError(`${where}: ${why}`, chatId);
  if (!isPlainObject(scope)) throw fail("scope must be a plain object such as { userId: 'ada' }.");
  const clean: ChatScope = {};
  const keys = Reflect.ownKeys(scope);
  for (const key of keys) {
    if (typeof key !== 'string' || !KNOWN.has(key)) {
      throw fail(`scope key ${JSON.stringify(String(key))} is not one of ${CHAT_SCOPE_KEYS.join(', ')}.`);
    }
    const descriptor = Object.getOwnPropertyDescriptor(scope, key)!;
    if (!('value' in descriptor) || typeof descriptor.value !== 'string' || descriptor.value === '') {
      throw fail(`scope.${key} must be a non-empty string.`);
    }
    clean[key as keyof ChatScope] = descriptor.value as string;
  }
  if (keys.length === 0) throw fail(`scope must name at least one of ${CHAT_SCOPE_KEYS.join(', ')}.`);
  return clean;
}

/** True when two checked scopes name the same user, agent and chat. */
export function sameChatScope(a: ChatScope, b: ChatScope): boolean {
  return CHAT_SCOPE_KEYS.every((key) => a[key] === b[key]);
}

/** A deep copy of plain JSON, or a refusal naming where it is not (cycles, functions, class instances, non-finite numbers, `__proto__` keys). */
function plainJson(value: unknown, what: string, fail: (why: string) => ChatStoreError, seen: Set<object>): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw fail(`${what} holds a number that is not finite.`);
    return value;
  }
  if (typeof value !== 'object') throw fail(`${what} must be plain JSON (found a ${typeof value}).`);
  if (seen.has(value)) throw fail(`${what} must be plain JSON (found a cycle).`);
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((entry, index) => plainJson(entry, `${what}[${index}]`, fail, seen));
    if (!isPlainObject(value)) throw fail(`${what} must be plain JSON (found a class instance).`);
    const copy: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      if (key === '__proto__') throw fail(`${what} may not have a __proto__ key.`);
      const entry = value[key];
      if (entry === undefined) continue;
      copy[key] = plainJson(entry, `${what}.${key}`, fail, seen);
    }
    return copy;
  } finally {
    seen.delete(value);
  }
}

const ROLES: ReadonlySet<string> = new Set(['system', 'user', 'assistant', 'tool']);

/**
 * Checks a record for `saveChat` / `writeChat` under `chatId` and returns the
 * copy a store keeps (plain JSON, without `revision`, which the store counts).
 */
export function checkChatRecord(record: unknown, chatId: string, where: string): ChatRecord {
  const fail = (why: string) => new ChatStoreError(`${where}: chat ${JSON.stringify(chatId)}: ${why}`, chatId);
  if (!isPlainObject(record)) throw fail('the record must be a plain object.');
  if (record.chatId !== chatId) throw fail(`the record's chatId ${describe(record.chatId)} is not the chat id it is saved under.`);
  const scope = checkChatScope(record.scope, `${where}: chat ${JSON.stringify(chatId)}`, chatId);
  const { messages, messageIds } = record;
  if (!Array.isArray(messages)) throw fail('messages must be an array.');
  if (!Array.isArray(messageIds)) throw fail('messageIds must be an array.');
  if (messageIds.length !== messages.length) {
    throw fail(`messageIds has ${messageIds.length} ids for ${messages.length} messages: it needs one id a message.`);
  }
  const ids = new Set<string>();
  messageIds.forEach((id: unknown, index) => {
    if (typeof id !== 'string' || id === '') throw fail(`messageIds[${index}] must be a non-empty string, got ${describe(id)}.`);
    if (ids.has(id)) throw fail(`messageIds[${index}] ${JSON.stringify(id)} names two messages.`);
    ids.add(id);
  });
  messages.forEach((message: unknown, index) => {
    const role = isPlainObject(message) ? message.role : undefined;
    if (typeof role !== 'string' || !ROLES.has(role)) throw fail(`messages[${index}] must be a message with a role (system, user, assistant or tool).`);
  });
  if (record.updatedAt !== undefined && (typeof record.updatedAt !== 'number' || !Number.isFinite(record.updatedAt))) {
    throw fail('updatedAt must be a finite number (ms).');
  }
  if (record.metadata !== undefined && !isPlainObject(record.metadata)) throw fail('metadata must be a plain object.');
  const seen = new Set<object>();
  return {
    chatId,
    scope,
    messages: plainJson(messages, 'messages', fail, seen) as ChatRecord['messages'],
    messageIds: [...(messageIds as string[])],
    ...(record.updatedAt !== undefined ? { updatedAt: record.updatedAt as number } : {}),
    ...(record.metadata !== undefined ? { metadata: plainJson(record.metadata, 'metadata', fail, seen) as Record<string, unknown> } : {}),
  };
}

/** A checked conditional write: the record to store, or `null` for a deletion (a tombstone). */
export function checkChatWrite(write: unknown, options: unknown, chatId: string): { record: ChatRecord | null; expectedRevision: number } {
  const where = 'writeChat';
  const revision = (options as Partial<ChatWriteOptions> | null | undefined)?.expectedRevision;
  if (typeof revision !== 'number' || !Number.isInteger(revision) || revision < 0) {
    throw new ChatStoreError(`${where}: chat ${JSON.stringify(chatId)}: options.expectedRevision must be a whole number >= 0.`, chatId);
  }
  if (isPlainObject(write) && (write as Partial<ChatDeletion>).deleted === true && write.messages === undefined) {
    return { record: null, expectedRevision: revision };
  }
  return { record: checkChatRecord(write, chatId, where), expectedRevision: revision };
}

/** A deep copy of a stored record, with the revision it is read at. */
export function copyChatRecord(record: ChatRecord, revision: number): ChatRecord {
  return { ...structuredClone(record), revision };
}

/** A `cairn_chats` row as the SQL backends read it. */
export interface ChatRow {
  chat_id: string;
  revision: number | string;
  /** `null`: the chat was deleted (a tombstone). */
  record: string | null;
}

/** The stored text of a checked record (which carries no revision). */
export function chatToText(record: ChatRecord): string {
  return JSON.stringify(record);
}

/** A stored record read back, with the revision it is read at; unreadable text is `record_corrupt`. */
export function chatFromText(chatId: string, text: string, revision: number): ChatRecord {
  try {
    return { ...(JSON.parse(text) as ChatRecord), revision };
  } catch (error) {
    throw new StoredRecordError('record_corrupt', chatId, `Chat ${chatId} cannot be read: ${(error as Error).message}`);
  }
}

/**
 * What the chat store conformance cases share: the fixture a backend hands
 * each case, and the records and checks the cases are written with.
 */
import assert from 'node:assert/strict';
import type { ChatRecord, ChatStore, ConditionalChatStore } from '../chat/types.js';

/** What `create()` hands one chat case. */
export interface ChatStoreFixture {
  /** A store holding no chats. Every case gets its own (reset a shared database in `create`). */
  store: ChatStore | ConditionalChatStore;
  /**
   * Another store object over the same chats, as a second process opens it
   * (`ops.chats` of a second ops store on the same file or schema). When
   * given, the durability case reads through it and the race cases write
   * through several at once; close them in `destroy`.
   */
  reopen?(): Promise<ChatStore | ConditionalChatStore>;
}

export interface ChatStoreInitializer {
  /** Names the describe block: `ChatStore conformance: <name>`. */
  name: string;
  /**
   * Whether the store is a ConditionalChatStore (readChat, writeChat,
   * deleteChat): then the revision, tombstone and race cases run too.
   * @default true
   */
  conditional?: boolean;
  /** Whether the chats outlive the store object; when true, `create()` must give `reopen`. @default false */
  durable?: boolean;
  /** Makes the store for one case. Called once per case. */
  create(): Promise<ChatStoreFixture>;
  /** Closes what `create` and `reopen` opened. Called after each case, passed or failed. */
  destroy?(fixture: ChatStoreFixture): Promise<void>;
}

export type ChatRegister = (name: string, body: (fixture: ChatStoreFixture) => Promise<void>) => void;
export type ConditionalRegister = (name: string, body: (store: ConditionalChatStore, fixture: ChatStoreFixture) => Promise<void>) => void;

/**
 * A two-turn chat: a user message, an assistant turn with reasoning (kept
 * byte for byte), a tool call and its result, and the answer.
 */
export function chat(chatId: string, over: Partial<ChatRecord> = {}): ChatRecord {
  return {
    chatId,
    scope: { userId: 'ada' },
    messages: [
      { role: 'user', content: 'Is order 7 shipped?' },
      {
        role: 'assistant',
        content: '',
        reasoning: [{ type: 'reasoning', text: '  The user asks\u00a0about order 7 \u2014 check it.\n\n', providerMetadata: { anthropic: { signature: 'c2ln\u00e9' } } }],
        toolCalls: [{ toolCallId: 'call-1', toolName: 'lookup', args: { orderId: 7 } }],
      },
      { role: 'tool', toolCallId: 'call-1', toolName: 'lookup', content: { status: 'shipped', items: [1, 2.5, null, true] } },
      { role: 'assistant', content: 'Yes: order 7 shipped. \ud83d\udce6' },
    ],
    messageIds: ['in-0', 'run-1:1', 'run-1:2', 'run-1:3'],
    updatedAt: 1_700_000_000_000,
    metadata: { title: 'Order 7' },
    ...over,
  };
}

/** The record as a store returns it: what was written, at a revision (a plain ChatStore may leave the revision out). */
export function stored(record: ChatRecord, revision: number | undefined): ChatRecord {
  const { revision: _ignored, ...rest } = record;
  return revision === undefined ? rest : { ...rest, revision };
}

/** Asserts that `call` rejects with a ChatStoreError `chat_record_invalid`. */
export async function refused(call: () => Promise<unknown>, what: string): Promise<void> {
  await assert.rejects(call, (error: unknown) => {
    const e = error as { code?: unknown; name?: unknown };
    assert.equal(e.code, 'chat_record_invalid', `${what}: code`);
    assert.equal(e.name, 'ChatStoreError', `${what}: name`);
    return true;
  }, what);
}

/** A loaded record without its revision, for stores that may not set one. */
export function withoutRevision(record: ChatRecord | undefined): ChatRecord | undefined {
  if (!record) return record;
  const { revision: _r, ...rest } = record;
  return rest;
}

/** Chat ids every call refuses. */
export const BAD_CHAT_IDS: [string, unknown][] = [
  ['an empty string', ''], ['a number', 7], ['null', null], ['undefined', undefined], ['an object', { id: 'chat-1' }], ['an array', ['chat-1']],
];

/** Records `saveChat('chat-1', ...)` refuses. */
export function badRecords(): [string, unknown][] {
  const good = chat('chat-1');
  return [
    ['fewer messageIds than messages', { ...good, messageIds: good.messageIds.slice(1) }],
    ['more messageIds than messages', { ...good, messageIds: [...good.messageIds, 'extra'] }],
    ['a messageId that is not a string', { ...good, messageIds: ['in-0', 1, 'run-1:2', 'run-1:3'] }],
    ['an empty messageId', { ...good, messageIds: ['in-0', '', 'run-1:2', 'run-1:3'] }],
    ['a messageId used twice', { ...good, messageIds: ['in-0', 'run-1:1', 'run-1:1', 'run-1:3'] }],
    ['no messageIds', { ...good, messageIds: undefined }],
    ['messages that are not an array', { ...good, messages: 'hi', messageIds: [] }],
    ['a message without a role', { ...good, messages: [{ content: 'hi' }], messageIds: ['m'] }],
    ['a message with a function', { ...good, messages: [{ role: 'user', content: () => 'hi' }], messageIds: ['m'] }],
    ['another chat id', { ...good, chatId: 'chat-2' }],
    ['no scope', { ...good, scope: undefined }],
    ['an unknown scope key', { ...good, scope: { userId: 'ada', tenant: 'acme' } }],
    ['an own __proto__ scope key', { ...good, scope: JSON.parse('{"userId":"ada","__proto__":{"x":1}}') }],
    ['a constructor scope key', { ...good, scope: { constructor: 'x' } }],
    ['a scope value that is not a string', { ...good, scope: { userId: 7 } }],
    ['an empty scope', { ...good, scope: {} }],
    ['updatedAt that is not a number', { ...good, updatedAt: 'now' }],
    ['metadata that is not an object', { ...good, metadata: ['x'] }],
    ['a record that is not an object', 'chat-1'],
    ['null', null],
  ];
}

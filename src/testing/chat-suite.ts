/**
 * The chat store conformance suite: what a run's chat projection relies on
 * (docs/chat.md). The same cases run against the in-memory store and
 * `ops.chats` of the SQLite and PostgreSQL ops stores, and against yours; a
 * plain ChatStore (no conditional writes) runs the first half.
 */
import assert from 'node:assert/strict';
import type { ChatRecord, ConditionalChatStore } from '../chat/types.js';
import { registerConditionalBadInput, registerConditionalCases, registerRaceCases } from './chat-cases.js';
import { freshFixtureCases } from './conformance/suite.js';
import type { ConformanceTestApi } from './conformance/types.js';
import {
  BAD_CHAT_IDS, badRecords, chat, refused, stored, withoutRevision, type ChatRegister, type ChatStoreInitializer, type ConditionalRegister,
} from './chat-fixture.js';

export type { ChatStoreFixture, ChatStoreInitializer } from './chat-fixture.js';

/**
 * Registers the chat store conformance cases with your test framework. Each
 * case gets a fresh store from `initializer.create()`.
 *
 * @example
 * ```ts
 * import { describe, it } from 'vitest';
 * import { createInMemoryChatStore } from 'cairn/chat';
 * import { defineChatStoreConformance } from 'cairn/testing';
 *
 * defineChatStoreConformance({ name: 'in-memory', create: async () => ({ store: createInMemoryChatStore() }) }, { describe, it });
 * ```
 */
export function defineChatStoreConformance(initializer: ChatStoreInitializer, api: ConformanceTestApi): void {
  const conditional = initializer.conditional !== false;
  const register: ChatRegister = freshFixtureCases(initializer, api);
  const registerConditional: ConditionalRegister = (name, body) => register(name, async (fixture) => {
    const store = fixture.store as ConditionalChatStore;
    for (const method of ['readChat', 'writeChat', 'deleteChat'] as const) {
      assert.equal(typeof store[method], 'function', `a conditional chat store has ${method}()`);
    }
    await body(store, fixture);
  });
  api.describe(`ChatStore conformance: ${initializer.name}`, () => {
    api.describe('whole records', () => registerRecordCases(register, conditional));
    api.describe('bad input', () => registerBadInputCases(register));
    if (conditional) {
      api.describe('conditional writes and tombstones', () => {
        registerConditionalCases(registerConditional);
        registerConditionalBadInput(registerConditional);
      });
    }
    api.describe('concurrency and durability', () => registerRaceCases(register, registerConditional, { conditional, durable: initializer.durable === true }));
  });
}

function registerRecordCases(register: ChatRegister, conditional: boolean): void {
  const revision = (n: number) => (conditional ? n : undefined);
  const loaded = (record: ChatRecord | undefined) => (conditional ? record : withoutRevision(record));

  register('loads nothing for a chat never saved, then the whole record saved, messages byte for byte', async ({ store }) => {
    assert.equal(await store.loadChat('chat-1'), undefined);
    const record = chat('chat-1');
    await store.saveChat('chat-1', record);
    assert.deepEqual(loaded(await store.loadChat('chat-1')), stored(record, revision(1)));
    const reasoning = (await store.loadChat('chat-1'))!.messages[1]!;
    assert.equal(reasoning.role === 'assistant' && reasoning.reasoning?.[0]?.text, '  The user asks\u00a0about order 7 \u2014 check it.\n\n');
    assert.equal(await store.loadChat('chat-2'), undefined, 'another chat id holds nothing');
  });

  register('a save replaces the whole record: saving the same record twice keeps one copy of every message', async ({ store }) => {
    const record = chat('chat-1');
    await store.saveChat('chat-1', record);
    await store.saveChat('chat-1', record);
    const twice = (await store.loadChat('chat-1'))!;
    assert.deepEqual(twice.messageIds, record.messageIds);
    assert.equal(twice.messages.length, 4);
    const shorter = chat('chat-1', { messages: [{ role: 'user', content: 'Start over.' }], messageIds: ['in-9'], scope: { userId: 'ada', agentId: 'support' } });
    await store.saveChat('chat-1', shorter);
    assert.deepEqual(loaded(await store.loadChat('chat-1')), stored(shorter, revision(3)));
  });

  register('returns copies: changing a returned record or a saved input changes nothing stored', async ({ store }) => {
    const record = chat('chat-1');
    await store.saveChat('chat-1', record);
    const before = await store.loadChat('chat-1');
    record.messages.push({ role: 'user', content: 'sneaked in' });
    record.messageIds.push('x');
    record.scope.userId = 'mallory';
    const got = (await store.loadChat('chat-1'))!;
    assert.deepEqual(got, before);
    got.messages.length = 0;
    got.messageIds[0] = 'changed';
    (got.metadata as Record<string, unknown>).title = 'changed';
    assert.deepEqual(await store.loadChat('chat-1'), before);
  });
}

function registerBadInputCases(register: ChatRegister): void {
  register('refuses a chat id that is not a non-empty string on load and save, writing nothing', async ({ store }) => {
    for (const [what, id] of BAD_CHAT_IDS) {
      await refused(() => store.loadChat(id as string), `loadChat with ${what}`);
      await refused(() => store.saveChat(id as string, chat(id as string)), `saveChat with ${what}`);
    }
  });

  register('refuses a record that is not well-formed, writing nothing', async ({ store }) => {
    const kept = chat('chat-1', { messages: [{ role: 'user', content: 'kept' }], messageIds: ['k'] });
    await store.saveChat('chat-1', kept);
    const before = await store.loadChat('chat-1');
    for (const [what, record] of badRecords()) {
      await refused(() => store.saveChat('chat-1', record as ChatRecord), `saveChat with ${what}`);
    }
    assert.deepEqual(await store.loadChat('chat-1'), before);
    await refused(() => store.saveChat('chat-3', chat('chat-3', { messageIds: [] })), 'a new chat with no ids');
    assert.equal(await store.loadChat('chat-3'), undefined);
  });
}

/**
 * The MemoryStore conformance suite: what a run's recall and extraction rely
 * on (docs/memory.md, "The store"). The same cases run against the in-memory
 * store and `ops.memories` of the SQLite and PostgreSQL ops stores, and
 * against yours.
 */
import assert from 'node:assert/strict';
import { memoryContentHash } from '../memory/records.js';
import { describeConformance } from './conformance/suite.js';
import type { ConformanceTestApi } from './conformance/types.js';
import { registerBadInputCases, registerRaceCases, registerSearchCases } from './memory-cases.js';
import {
  ADA, ADA_SALES, ADA_SUPPORT, AT, BOB, fact, ids, type MemoryRegister, type MemoryStoreInitializer,
} from './memory-fixture.js';

export type { MemoryStoreFixture, MemoryStoreInitializer } from './memory-fixture.js';

/**
 * Registers the MemoryStore conformance cases with your test framework. Each
 * case gets a fresh store from `initializer.create()`.
 *
 * @example
 * ```ts
 * import { describe, it } from 'vitest';
 * import { createInMemoryMemoryStore } from 'cairn/memory';
 * import { defineMemoryStoreConformance } from 'cairn/testing';
 *
 * defineMemoryStoreConformance({ name: 'in-memory', create: async () => ({ store: createInMemoryMemoryStore() }) }, { describe, it });
 * ```
 */
export function defineMemoryStoreConformance(initializer: MemoryStoreInitializer, api: ConformanceTestApi): void {
  describeConformance('MemoryStore', initializer, api, (register: MemoryRegister) => {
    api.describe('records and dedup', () => registerRecordCases(register));
    api.describe('scopes', () => registerScopeCases(register));
    api.describe('search and sweep', () => registerSearchCases(register));
    api.describe('bad input', () => registerBadInputCases(register));
    api.describe('concurrency and durability', () => registerRaceCases(register, initializer.durable === true));
  });
}

function registerRecordCases(register: MemoryRegister): void {
  register('adds a record with its hash, exact scope, metadata and times, and reads it back', async ({ store }) => {
    const metadata = { cairn: { runId: 'run-1', operationId: 'op-1' }, source: 'chat' };
    const written = await store.add(fact('m-1', 'prefers tea', ADA_SUPPORT, { metadata, expiresAt: AT + 1000 }));
    assert.equal(written.deduplicated, false);
    const expected = {
      id: 'm-1', text: 'prefers tea', hash: memoryContentHash('prefers tea'), scope: ADA_SUPPORT, metadata,
      expiresAt: AT + 1000, createdAt: AT, updatedAt: AT,
    };
    assert.deepEqual(written.record, expected);
    assert.deepEqual(await store.get({ id: 'm-1', scope: ADA_SUPPORT }), expected);
    assert.deepEqual(await store.list({ scope: ADA }), [expected]);
    assert.equal(await store.get({ id: 'm-2', scope: ADA }), undefined);
  });

  register('dedups by the hash of the normalized text per scope: one record, refreshed', async ({ store }) => {
    await store.add(fact('m-1', 'prefers tea', ADA, { metadata: { n: 1 } }));
    const again = await store.add(fact('m-2', '  prefers \n\t tea ', ADA, { at: AT + 5, metadata: { n: 2 }, embedding: { vector: [1, 0] } }));
    assert.equal(again.deduplicated, true, 'the same text with other whitespace is the same fact');
    assert.equal(again.record.id, 'm-1', 'the stored record is kept, not the new id');
    assert.equal(again.record.text, 'prefers tea');
    assert.equal(again.record.createdAt, AT);
    assert.equal(again.record.updatedAt, AT + 5);
    assert.deepEqual(again.record.metadata, { n: 2 }, 'the refresh carries the latest writer\'s metadata');
    assert.deepEqual(again.record.embedding, { vector: [1, 0] });
    assert.deepEqual(ids(await store.list({ scope: ADA })), ['m-1']);
    assert.equal(await store.get({ id: 'm-2', scope: ADA }), undefined, 'no record under the second id');
    // Another scope, or other words, is another fact.
    await store.add(fact('m-3', 'prefers tea', BOB));
    await store.add(fact('m-4', 'prefers tea', ADA_SUPPORT));
    await store.add(fact('m-5', 'Prefers tea', ADA));
    assert.deepEqual(ids(await store.list({ scope: ADA })), ['m-1', 'm-4', 'm-5']);
    assert.deepEqual(ids(await store.list({ scope: BOB })), ['m-3']);
    // Unicode normalization: a composed and a decomposed é are one text.
    await store.add(fact('u-1', 'caf\u00e9 au lait', BOB, { at: AT + 6 }));
    assert.equal((await store.add(fact('u-2', 'cafe\u0301 au lait', BOB, { at: AT + 7 }))).record.id, 'u-1');
    assert.deepEqual(ids(await store.list({ scope: BOB })), ['m-3', 'u-1']);
  });

  register('updates a record in place, and folds an update onto the record that holds its new text', async ({ store }) => {
    await store.add(fact('m-1', 'prefers tea', ADA, { embedding: { vector: [1, 0] } }));
    await store.add(fact('m-2', 'lives in Oslo', ADA, { at: AT + 1 }));
    const updated = await store.update({ id: 'm-1', scope: ADA, text: 'prefers green tea', at: AT + 2, metadata: { v: 2 } });
    assert.deepEqual(updated, {
      deduplicated: false,
      record: { id: 'm-1', text: 'prefers green tea', hash: memoryContentHash('prefers green tea'), scope: ADA, metadata: { v: 2 }, createdAt: AT, updatedAt: AT + 2 },
    }, 'new text, new hash, the old embedding dropped (it described the old text), createdAt kept');
    const folded = await store.update({ id: 'm-2', scope: ADA, text: 'prefers green  tea', at: AT + 3 });
    assert.equal(folded?.deduplicated, true);
    assert.equal(folded?.record.id, 'm-1');
    assert.equal(folded?.record.updatedAt, AT + 3);
    assert.deepEqual(ids(await store.list({ scope: ADA })), ['m-1'], 'the updated record folded into the one that holds the text');
    assert.equal(await store.update({ id: 'm-2', scope: ADA, text: 'x', at: AT }), undefined, 'the folded id is gone');
    assert.equal(await store.delete({ id: 'm-1', scope: ADA }), true);
    assert.equal(await store.delete({ id: 'm-1', scope: ADA }), false);
    assert.deepEqual(await store.list({ scope: ADA }), []);
  });

  register('lists by operation id (what one extraction wrote), oldest first, with a limit', async ({ store }) => {
    const by = (operationId: string) => ({ metadata: { cairn: { runId: 'run-1', operationId } } });
    await store.add(fact('m-3', 'fact three', ADA, { at: AT + 3, ...by('op-1') }));
    await store.add(fact('m-1', 'fact one', ADA_SUPPORT, { at: AT + 1, ...by('op-1') }));
    await store.add(fact('m-2', 'fact two', ADA, { at: AT + 2, ...by('op-2') }));
    await store.add(fact('m-4', 'fact four', ADA, { at: AT + 4 }));
    await store.add(fact('m-5', 'fact five', BOB, { at: AT + 5, ...by('op-1') }));
    assert.deepEqual(ids(await store.list({ scope: ADA, operationId: 'op-1' })), ['m-1', 'm-3']);
    assert.deepEqual(ids(await store.list({ scope: ADA, operationId: 'op-2' })), ['m-2']);
    assert.deepEqual(ids(await store.list({ scope: ADA, operationId: 'op-9' })), []);
    assert.deepEqual(ids(await store.list({ scope: ADA })), ['m-1', 'm-2', 'm-3', 'm-4']);
    assert.deepEqual(ids(await store.list({ scope: ADA, limit: 2 })), ['m-1', 'm-2']);
    // An update stamps the updating operation's ids: the record now counts for op-3.
    await store.update({ id: 'm-4', scope: ADA, text: 'fact four, revised', at: AT + 6, ...by('op-3') });
    assert.deepEqual(ids(await store.list({ scope: ADA, operationId: 'op-3' })), ['m-4']);
  });

  register('returns copies: changing a returned record or a passed input changes nothing stored', async ({ store }) => {
    const input = fact('m-1', 'prefers tea', { userId: 'ada' }, { metadata: { tags: ['drink'] }, embedding: { vector: [1, 2] } });
    const { record } = await store.add(input);
    const before = structuredClone(record);
    (input.metadata!.tags as string[]).push('input');
    input.embedding!.vector.push(3);
    input.scope.userId = 'mallory';
    record.text = 'changed';
    (record.metadata.tags as string[]).push('returned');
    record.embedding!.vector[0] = 99;
    record.scope.agentId = 'x';
    const got = (await store.get({ id: 'm-1', scope: ADA }))!;
    assert.deepEqual(got, before);
    got.text = 'changed again';
    const [listed] = await store.list({ scope: ADA });
    assert.deepEqual(listed, before);
    listed!.metadata.tags = [];
    const { hits } = await store.search({ scope: ADA, query: 'tea' });
    assert.deepEqual(hits[0]?.record, before);
    hits[0]!.record.hash = 'x';
    assert.deepEqual(await store.get({ id: 'm-1', scope: ADA }), before);
  });
}

function registerScopeCases(register: MemoryRegister): void {
  register('a read sees every record whose scope holds all of its fields, and no other', async ({ store }) => {
    await store.add(fact('s-1', 'likes jazz', ADA_SUPPORT));
    await store.add(fact('s-2', 'likes rock', ADA_SALES, { at: AT + 1 }));
    await store.add(fact('s-3', 'likes folk', { userId: 'ada', agentId: 'support', chatId: 'chat-1' }, { at: AT + 2 }));
    await store.add(fact('s-4', 'likes jazz', BOB, { at: AT + 3 }));
    assert.deepEqual(ids(await store.list({ scope: ADA })), ['s-1', 's-2', 's-3']);
    assert.deepEqual(ids(await store.list({ scope: ADA_SUPPORT })), ['s-1', 's-3']);
    assert.deepEqual(ids(await store.list({ scope: { agentId: 'support' } })), ['s-1', 's-3']);
    assert.deepEqual(ids(await store.list({ scope: { chatId: 'chat-1' } })), ['s-3']);
    assert.deepEqual(ids(await store.list({ scope: { userId: 'ada', agentId: 'billing' } })), []);
    assert.deepEqual(ids((await store.search({ scope: ADA, query: 'likes jazz' })).hits.map((h) => h.record)), ['s-1', 's-3', 's-2']);
  });

  register('a call in another scope finds nothing, and changes nothing', async ({ store }) => {
    await store.add(fact('s-1', 'likes jazz', ADA_SUPPORT));
    assert.equal(await store.get({ id: 's-1', scope: BOB }), undefined);
    assert.equal(await store.get({ id: 's-1', scope: ADA_SALES }), undefined);
    assert.equal(await store.delete({ id: 's-1', scope: BOB }), false);
    assert.equal(await store.update({ id: 's-1', scope: ADA_SALES, text: 'likes metal', at: AT + 1 }), undefined);
    assert.equal(await store.sweep({ scope: BOB, now: Number.MAX_SAFE_INTEGER }), 0);
    const record = await store.get({ id: 's-1', scope: ADA });
    assert.equal(record?.text, 'likes jazz');
    assert.equal(record?.updatedAt, AT);
  });
}

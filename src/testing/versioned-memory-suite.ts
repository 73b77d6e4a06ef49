/**
 * The VersionedMemoryStore conformance suite: what a memory session and a V3
 * run rely on (docs/versioned-memory.md, "The stores"). The same cases run
 * against the in-memory, SQLite and PostgreSQL stores, and against yours.
 * Commits, revisions and receipts here; forget, bad input, copies and races
 * in versioned-memory-cases.ts.
 */
import assert from 'node:assert/strict';
import { describeConformance } from './conformance/suite.js';
import type { ConformanceTestApi } from './conformance/types.js';
import {
  ADA, ADA_SUPPORT, add, AT, BOB, digest, registerBadInputCases, registerCopyCases, registerForgetCases, registerRaceCases,
  rejectsWith, type VersionedRegister, type VersionedMemoryStoreInitializer,
} from './versioned-memory-cases.js';

export type { VersionedMemoryStoreFixture, VersionedMemoryStoreInitializer } from './versioned-memory-cases.js';

/**
 * Registers the VersionedMemoryStore conformance cases with your test
 * framework. Each case gets a fresh store from `initializer.create()`.
 *
 * @example
 * ```ts
 * import { describe, it } from 'vitest';
 * import { createInMemoryVersionedMemoryStore } from 'cairn/memory/versioned';
 * import { defineVersionedMemoryStoreConformance } from 'cairn/testing';
 *
 * defineVersionedMemoryStoreConformance({ name: 'in-memory', create: async () => ({ store: createInMemoryVersionedMemoryStore() }) }, { describe, it });
 * ```
 */
export function defineVersionedMemoryStoreConformance(initializer: VersionedMemoryStoreInitializer, api: ConformanceTestApi): void {
  describeConformance('VersionedMemoryStore', initializer, api, (register: VersionedRegister) => {
    api.describe('commits, revisions and receipts', () => registerCommitCases(register));
    api.describe('errors of a commit', () => registerErrorCases(register));
    api.describe('list and search', () => registerReadCases(register));
    api.describe('forget', () => registerForgetCases(register));
    api.describe('bad input', () => registerBadInputCases(register));
    api.describe('copies', () => registerCopyCases(register));
    api.describe('concurrency and durability', () => registerRaceCases(register, initializer.durable === true));
  });
}

function registerCommitCases(register: VersionedRegister): void {
  register('a first commit is scope revision 1: its records carry it and its receipt says what it wrote', async ({ store }) => {
    const { receipt, replayed } = await store.commit({
      scope: ADA, operationId: 'op-1', requestDigest: digest('a'), at: AT,
      mutations: [add('tea', 'Ada prefers tea.', 'inferred', ['chat-1:0']), add('jazz', 'Ada likes jazz.')],
    });
    assert.equal(replayed, false);
    const expected = {
      operationId: 'op-1', scope: ADA, requestDigest: digest('a'), planned: 2, scopeRevision: 1, committedAt: AT,
      records: [{ id: 'tea', revision: 1, op: 'add' }, { id: 'jazz', revision: 1, op: 'add' }],
    };
    assert.deepEqual(receipt, expected);
    assert.deepEqual(await store.receipt({ scope: ADA, operationId: 'op-1' }), expected);
    const tea = {
      id: 'tea', scope: ADA, text: 'Ada prefers tea.', revision: 1, origin: 'inferred', sources: [{ messageId: 'chat-1:0' }],
      status: 'active', operationId: 'op-1', createdAt: AT, updatedAt: AT,
    };
    assert.deepEqual(await store.get({ scope: ADA, id: 'tea' }), tea);
    assert.deepEqual(await store.history({ scope: ADA, id: 'tea' }), [tea]);
    assert.deepEqual((await store.get({ scope: ADA, id: 'jazz' }))?.sources, [], 'sources default to none');
    assert.equal(await store.scopeRevision({ scope: ADA }), 1);
  });

  register('scopes compare exactly: a wider or narrower scope holds none of the records, and has its own revision', async ({ store }) => {
    await store.commit({ scope: ADA_SUPPORT, operationId: 'op-1', requestDigest: digest('a'), at: AT, mutations: [add('tea', 'prefers tea')] });
    assert.equal(await store.get({ scope: ADA, id: 'tea' }), undefined);
    assert.deepEqual(await store.list({ scope: ADA }), []);
    assert.deepEqual(await store.search({ scope: ADA, text: 'tea' }), []);
    assert.equal(await store.scopeRevision({ scope: ADA }), 0);
    assert.equal(await store.receipt({ scope: ADA, operationId: 'op-1' }), undefined, 'a receipt belongs to its scope');
    const other = await store.commit({ scope: ADA, operationId: 'op-1', requestDigest: digest('b'), at: AT, mutations: [add('tea', 'prefers coffee')] });
    assert.equal(other.replayed, false, 'the same operation id in another scope is another operation');
    assert.equal(other.receipt.scopeRevision, 1);
    assert.equal((await store.get({ scope: { agentId: 'support', userId: 'ada' }, id: 'tea' }))?.text, 'prefers tea', 'key order does not matter');
  });

  register('each commit bumps the scope revision by one; revise and retract write new revisions, oldest first in history', async ({ store }) => {
    await store.commit({ scope: ADA, operationId: 'op-1', requestDigest: digest('1'), at: AT, mutations: [add('tea', 'prefers tea', 'inferred', ['m:0'])] });
    await store.commit({ scope: ADA, operationId: 'op-2', requestDigest: digest('2'), at: AT + 1, mutations: [] });
    const revised = await store.commit({
      scope: ADA, operationId: 'op-3', requestDigest: digest('3'), at: AT + 2, mutations: [{ op: 'revise', id: 'tea', text: 'prefers green tea' }],
    });
    assert.deepEqual(revised.receipt.records, [{ id: 'tea', revision: 3, op: 'revise' }]);
    const retracted = await store.commit({ scope: ADA, operationId: 'op-4', requestDigest: digest('4'), at: AT + 3, mutations: [{ op: 'retract', id: 'tea' }] });
    assert.equal(retracted.receipt.scopeRevision, 4);
    assert.equal(retracted.receipt.planned, 1);
    const history = await store.history({ scope: ADA, id: 'tea' });
    assert.deepEqual(history.map((r) => [r.revision, r.text, r.status, r.operationId, r.createdAt, r.updatedAt]), [
      [1, 'prefers tea', 'active', 'op-1', AT, AT],
      [3, 'prefers green tea', 'active', 'op-3', AT, AT + 2],
      [4, 'prefers green tea', 'retracted', 'op-4', AT, AT + 3],
    ]);
    assert.deepEqual(history[1]!.sources, [{ messageId: 'm:0' }], 'a revise without sources keeps the record\'s');
    const withSources = await store.commit({ scope: ADA, operationId: 'op-5', requestDigest: digest('5'), at: AT + 4, mutations: [add('jazz', 'likes jazz')] });
    assert.equal(withSources.receipt.scopeRevision, 5);
    await store.commit({ scope: ADA, operationId: 'op-6', requestDigest: digest('6'), at: AT + 5, mutations: [{ op: 'revise', id: 'jazz', text: 'likes free jazz', sources: [{ messageId: 'm:7' }] }] });
    assert.deepEqual((await store.get({ scope: ADA, id: 'jazz' }))?.sources, [{ messageId: 'm:7' }]);
    assert.equal(await store.scopeRevision({ scope: ADA }), 6);
    assert.equal((await store.receipt({ scope: ADA, operationId: 'op-2' }))?.planned, 0, 'a commit of no mutations still leaves a receipt');
  });

  register('a replay of a committed operation answers its stored receipt and applies nothing, whatever mutations it brings', async ({ store }) => {
    const first = await store.commit({ scope: ADA, operationId: 'op-1', requestDigest: digest('a'), at: AT, mutations: [add('tea', 'prefers tea')] });
    const again = await store.commit({
      scope: ADA, operationId: 'op-1', requestDigest: digest('a'), at: AT + 50, mutations: [add('tea', 'prefers tea'), add('jazz', 'likes jazz')],
    });
    assert.equal(again.replayed, true);
    assert.deepEqual(again.receipt, first.receipt);
    assert.equal(await store.scopeRevision({ scope: ADA }), 1);
    assert.equal(await store.get({ scope: ADA, id: 'jazz' }), undefined);
    assert.equal((await store.history({ scope: ADA, id: 'tea' })).length, 1);
  });

  register('a replay with another request digest is memory_receipt_mismatch, and nothing is applied', async ({ store }) => {
    await store.commit({ scope: ADA, operationId: 'op-1', requestDigest: digest('a'), at: AT, mutations: [add('tea', 'prefers tea')] });
    await rejectsWith(() => store.commit({ scope: ADA, operationId: 'op-1', requestDigest: digest('b'), at: AT, mutations: [add('jazz', 'likes jazz')] }),
      'memory_receipt_mismatch', 'another digest');
    assert.equal(await store.scopeRevision({ scope: ADA }), 1);
    assert.equal(await store.get({ scope: ADA, id: 'jazz' }), undefined);
    assert.equal((await store.receipt({ scope: ADA, operationId: 'op-1' }))?.requestDigest, digest('a'));
  });

  register('a receipt holds ids and numbers, never a record\'s text', async ({ store }) => {
    const { receipt } = await store.commit({
      scope: ADA, operationId: 'op-1', requestDigest: digest('a'), at: AT, mutations: [add('tea', 'Ada secretly prefers rooibos')],
    });
    await store.commit({ scope: ADA, operationId: 'op-2', requestDigest: digest('b'), at: AT, mutations: [{ op: 'revise', id: 'tea', text: 'Ada openly prefers mint' }] });
    for (const r of [receipt, await store.receipt({ scope: ADA, operationId: 'op-1' }), await store.receipt({ scope: ADA, operationId: 'op-2' })]) {
      assert.ok(!/rooibos|mint/.test(JSON.stringify(r)), JSON.stringify(r));
    }
  });
}

function registerErrorCases(register: VersionedRegister): void {
  const setup = async (store: Parameters<Parameters<VersionedRegister>[1]>[0]['store']) => {
    await store.commit({ scope: ADA, operationId: 'op-1', requestDigest: digest('1'), at: AT, mutations: [add('tea', 'prefers tea'), add('jazz', 'likes jazz'), add('old', 'old fact'), add('keep', 'keeps bees')] });
    await store.commit({ scope: ADA, operationId: 'op-2', requestDigest: digest('2'), at: AT + 1, mutations: [{ op: 'retract', id: 'old' }] });
    await store.forget({ scope: ADA, id: 'jazz', at: AT + 2 });
  };
  const cases: [string, string, unknown][] = [
    ['an add of an id the scope holds', 'memory_record_exists', add('tea', 'again')],
    ['an add of a retracted id', 'memory_record_exists', add('old', 'again')],
    ['an add of a forgotten id', 'memory_record_exists', add('jazz', 'again')],
    ['a revise of an id the scope does not hold', 'memory_record_not_found', { op: 'revise', id: 'none', text: 'x' }],
    ['a retract of an id the scope does not hold', 'memory_record_not_found', { op: 'retract', id: 'none' }],
    ['a revise of a retracted record', 'memory_record_retracted', { op: 'revise', id: 'old', text: 'new' }],
    ['a retract of a retracted record', 'memory_record_retracted', { op: 'retract', id: 'old' }],
    ['a revise of a forgotten record', 'memory_record_forgotten', { op: 'revise', id: 'jazz', text: 'new' }],
    ['a retract of a forgotten record', 'memory_record_forgotten', { op: 'retract', id: 'jazz' }],
  ];
  for (const [what, code, bad] of cases) {
    register(`${what} is ${code}, and the commit writes nothing (its good mutations neither, no receipt)`, async ({ store }) => {
      await setup(store);
      const before = { revision: await store.scopeRevision({ scope: ADA }), keep: await store.history({ scope: ADA, id: 'keep' }) };
      await rejectsWith(() => store.commit({
        scope: ADA, operationId: 'op-bad', requestDigest: digest('bad'), at: AT + 9,
        mutations: [{ op: 'revise', id: 'keep', text: 'keeps wasps' }, add('new', 'a new fact'), bad as never],
      }), code, what);
      assert.equal(await store.scopeRevision({ scope: ADA }), before.revision);
      assert.deepEqual(await store.history({ scope: ADA, id: 'keep' }), before.keep);
      assert.equal(await store.get({ scope: ADA, id: 'new' }), undefined);
      assert.equal(await store.receipt({ scope: ADA, operationId: 'op-bad' }), undefined);
      const retry = await store.commit({ scope: ADA, operationId: 'op-bad', requestDigest: digest('bad'), at: AT + 9, mutations: [add('new', 'a new fact')] });
      assert.equal(retry.replayed, false, 'a refused commit left no receipt: its operation id commits later');
      assert.equal(retry.receipt.scopeRevision, before.revision + 1);
    });
  }
}

function registerReadCases(register: VersionedRegister): void {
  register('list answers the latest revision of each record, oldest record first; retracted and forgotten ones only when asked', async ({ store }) => {
    await store.commit({ scope: ADA, operationId: 'op-1', requestDigest: digest('1'), at: AT, mutations: [add('b', 'bee'), add('a', 'ay')] });
    await store.commit({ scope: ADA, operationId: 'op-2', requestDigest: digest('2'), at: AT + 1, mutations: [add('c', 'see'), { op: 'revise', id: 'b', text: 'bee two' }] });
    await store.commit({ scope: ADA, operationId: 'op-3', requestDigest: digest('3'), at: AT + 2, mutations: [{ op: 'retract', id: 'a' }, add('d', 'dee')] });
    await store.forget({ scope: ADA, id: 'c', at: AT + 3 });
    const view = (records: { id: string; revision: number; status: string }[]) => records.map((r) => `${r.id}@${r.revision}:${r.status}`);
    assert.deepEqual(view(await store.list({ scope: ADA })), ['b@2:active', 'd@3:active']);
    assert.deepEqual(view(await store.list({ scope: ADA, includeRetracted: true })), ['b@2:active', 'a@3:retracted', 'd@3:active']);
    assert.deepEqual(view(await store.list({ scope: ADA, includeRetracted: true, includeForgotten: true })),
      ['b@2:active', 'a@3:retracted', 'c@2:forgotten', 'd@3:active']);
    assert.deepEqual(view(await store.list({ scope: ADA, includeForgotten: true, limit: 2 })), ['b@2:active', 'c@2:forgotten']);
    assert.deepEqual(await store.list({ scope: BOB }), []);
  });

  register('search scores active records by the share of the query\'s words they hold, best first, ties to the newest revision', async ({ store }) => {
    await store.commit({ scope: ADA, operationId: 'op-1', requestDigest: digest('1'), at: AT, mutations: [
      add('t1', 'Ada prefers green tea'), add('t2', 'Ada drinks tea daily'), add('c', 'Ada likes coffee'), add('gone', 'green tea forever'),
    ] });
    await store.commit({ scope: ADA, operationId: 'op-2', requestDigest: digest('2'), at: AT + 1, mutations: [
      { op: 'revise', id: 't2', text: 'Ada drinks TEA, daily!' }, { op: 'retract', id: 'gone' },
    ] });
    const hits = await store.search({ scope: ADA, text: 'green tea' });
    assert.deepEqual(hits.map((h) => [h.record.id, h.score]), [['t1', 1], ['t2', 0.5]]);
    const ties = await store.search({ scope: ADA, text: 'ada' });
    assert.deepEqual(ties.map((h) => h.record.id), ['t2', 't1', 'c'], 'equal scores: the newest revision first, then the older record');
    assert.deepEqual((await store.search({ scope: ADA, text: 'ada', limit: 1 })).map((h) => h.record.id), ['t2']);
    assert.deepEqual(await store.search({ scope: ADA, text: '  ?! ' }), [], 'a query of no words finds nothing');
    assert.deepEqual(await store.search({ scope: ADA, text: 'forever' }), [], 'a retracted record is not recalled');
    assert.equal(hits[0]!.record.text, 'Ada prefers green tea');
  });

  register('search answers at most 10 hits unless told otherwise', async ({ store }) => {
    await store.commit({ scope: ADA, operationId: 'op-1', requestDigest: digest('1'), at: AT,
      mutations: Array.from({ length: 12 }, (_, i) => add(`f-${i}`, `fact number ${i}`)) });
    assert.equal((await store.search({ scope: ADA, text: 'fact' })).length, 10);
    assert.equal((await store.search({ scope: ADA, text: 'fact', limit: 12 })).length, 12);
  });
}

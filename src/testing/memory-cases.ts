/** MemoryStore conformance cases: search and sweep, bad input refused with nothing written, races and durability. */
import assert from 'node:assert/strict';
import type { MemoryScope, MemoryStore } from '../memory/types.js';
import { ADA, ADA_SUPPORT, AT, BOB, everything, fact, ids, rejectsWith, type MemoryRegister } from './memory-fixture.js';

export function registerSearchCases(register: MemoryRegister): void {
  register('without an embedding, ranks by the share of query words a record holds; ties newest first; a limit', async ({ store }) => {
    await store.add(fact('w-1', 'Ada drinks green tea every morning', ADA, { at: AT + 1 }));
    await store.add(fact('w-2', 'Ada likes tea', ADA, { at: AT + 2 }));
    await store.add(fact('w-3', 'Ada lives in Oslo', ADA, { at: AT + 3 }));
    await store.add(fact('w-4', 'green tea for Bob', BOB, { at: AT + 4 }));
    const { hits, embeddingMismatches } = await store.search({ scope: ADA, query: 'Green TEA, please!' });
    assert.equal(embeddingMismatches, 0);
    assert.deepEqual(hits.map((h) => [h.record.id, h.score]), [['w-1', 2 / 3], ['w-2', 1 / 3]], 'words are matched case-blind; Oslo matches none');
    assert.deepEqual(ids((await store.search({ scope: ADA, query: 'ada' })).hits.map((h) => h.record)), ['w-3', 'w-2', 'w-1'], 'equal scores: newest first');
    assert.deepEqual(ids((await store.search({ scope: ADA, query: 'ada', limit: 1 })).hits.map((h) => h.record)), ['w-3']);
    assert.deepEqual((await store.search({ scope: ADA, query: 'coffee' })).hits, []);
    assert.deepEqual((await store.search({ scope: ADA, query: '  ?! ' })).hits, [], 'a query without words finds nothing');
  });

  register('with an embedding, ranks by cosine similarity and counts the records it could not compare', async ({ store }) => {
    await store.add(fact('e-1', 'prefers tea', ADA, { embedding: { vector: [1, 0, 0], model: 'emb-1' } }));
    await store.add(fact('e-2', 'prefers coffee', ADA, { embedding: { vector: [0.6, 0.8, 0] } }));
    await store.add(fact('e-3', 'lives in Oslo', ADA, { embedding: { vector: [0, 0, 1], model: 'emb-1' } }));
    await store.add(fact('e-4', 'no embedding', ADA));
    await store.add(fact('e-5', 'short vector', ADA, { embedding: { vector: [1, 0], model: 'emb-1' } }));
    await store.add(fact('e-6', 'other model', ADA, { embedding: { vector: [1, 0, 0], model: 'emb-2' } }));
    await store.add(fact('e-7', 'other scope', BOB, { embedding: { vector: [1, 0, 0], model: 'emb-1' } }));
    const result = await store.search({ scope: ADA, query: 'tea', embedding: { vector: [2, 0, 0], model: 'emb-1' } });
    assert.deepEqual(result.hits.map((h) => h.record.id), ['e-1', 'e-2', 'e-3']);
    assert.deepEqual(result.hits.map((h) => Math.round(h.score * 1000) / 1000), [1, 0.6, 0]);
    assert.equal(result.embeddingMismatches, 3, 'no embedding, another length, another model');
    const unnamed = await store.search({ scope: ADA, query: 'tea', embedding: { vector: [0, 1, 0] } });
    assert.equal(unnamed.hits[0]?.record.id, 'e-2');
    assert.equal(unnamed.embeddingMismatches, 2, 'a query that names no model compares with every model of its length');
  });

  register('search leaves out expired records; sweep deletes them in its scope only and counts them', async ({ store }) => {
    await store.add(fact('x-1', 'tea until noon', ADA, { expiresAt: AT + 10 }));
    await store.add(fact('x-2', 'tea forever', ADA));
    await store.add(fact('x-3', 'tea until later', ADA_SUPPORT, { expiresAt: AT + 20 }));
    await store.add(fact('x-4', 'tea for Bob until noon', BOB, { expiresAt: AT + 10 }));
    assert.deepEqual(ids((await store.search({ scope: ADA, query: 'tea', now: AT + 10 })).hits.map((h) => h.record)).sort(), ['x-2', 'x-3']);
    assert.equal((await store.search({ scope: ADA, query: 'tea', now: AT + 9 })).hits.length, 3);
    assert.equal(await store.sweep({ scope: ADA, now: AT + 9 }), 0, 'nothing has expired yet');
    assert.equal(await store.sweep({ scope: ADA, now: AT + 10 }), 1, 'expiresAt at now has expired');
    assert.deepEqual(ids(await store.list({ scope: ADA })), ['x-2', 'x-3']);
    assert.equal(await store.sweep({ scope: ADA_SUPPORT, now: AT + 100 }), 1);
    assert.deepEqual(ids(await store.list({ scope: ADA })), ['x-2']);
    assert.deepEqual(ids(await store.list({ scope: BOB })), ['x-4'], 'another scope is not swept');
  });
}

/** Scopes every call refuses with memory_scope_invalid. */
function badScopes(): [string, unknown][] {
  const nullProto = Object.assign(Object.create(null) as object, { userId: 'ada', tenant: 't' });
  return [
    ['an empty scope', {}],
    ['an unknown key', { userId: 'ada', tenant: 'acme' }],
    ['an own __proto__ key', JSON.parse('{"userId":"ada","__proto__":{"agentId":"x"}}')],
    ['a constructor key', { userId: 'ada', constructor: 'x' }],
    ['a prototype key', { userId: 'ada', prototype: 'x' }],
    ['a number value', { userId: 42 }],
    ['an empty value', { userId: '' }],
    ['an object value', { userId: { toString: () => 'ada' } }],
    ['a symbol key', { userId: 'ada', [Symbol('k')]: 'v' }],
    ['an unknown key on a null-prototype object', nullProto],
    ['a class instance', new (class Scope { userId = 'ada'; })()],
    ['an array', ['ada']],
    ['a string', 'ada'],
    ['null', null],
  ];
}

export function registerBadInputCases(register: MemoryRegister): void {
  register('every call refuses a bad scope with memory_scope_invalid, and writes nothing', async ({ store }) => {
    await store.add(fact('k-1', 'kept', ADA, { expiresAt: AT }));
    const before = await everything(store);
    for (const [what, scope] of badScopes()) {
      const s = scope as MemoryScope;
      await rejectsWith(() => store.add(fact('b-1', 'bad', s)), 'memory_scope_invalid', `add with ${what}`);
      await rejectsWith(() => store.update({ id: 'k-1', scope: s, text: 'bad', at: AT }), 'memory_scope_invalid', `update with ${what}`);
      await rejectsWith(() => store.delete({ id: 'k-1', scope: s }), 'memory_scope_invalid', `delete with ${what}`);
      await rejectsWith(() => store.get({ id: 'k-1', scope: s }), 'memory_scope_invalid', `get with ${what}`);
      await rejectsWith(() => store.list({ scope: s }), 'memory_scope_invalid', `list with ${what}`);
      await rejectsWith(() => store.search({ scope: s, query: 'kept' }), 'memory_scope_invalid', `search with ${what}`);
      await rejectsWith(() => store.sweep({ scope: s, now: AT + 1 }), 'memory_scope_invalid', `sweep with ${what}`);
    }
    assert.deepEqual(await everything(store), before);
    // A null-prototype object of known keys is a scope.
    const plain = Object.assign(Object.create(null) as object, { userId: 'ada' }) as MemoryScope;
    assert.deepEqual(ids(await store.list({ scope: plain })), ['k-1']);
  });

  register('refuses a malformed record with memory_record_invalid, and writes nothing', async ({ store }) => {
    await store.add(fact('k-1', 'kept', ADA));
    const before = await everything(store);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const bad: [string, unknown][] = [
      ['an empty text', fact('b-1', '   ')],
      ['a text that is not a string', { ...fact('b-1', 'x'), text: 42 }],
      ['an empty id', fact('', 'bad one')],
      ['a time that is not finite', fact('b-1', 'bad two', ADA, { at: Number.NaN })],
      ['an expiry that is not a number', { ...fact('b-1', 'bad three'), expiresAt: '2030' }],
      ['metadata with a function', fact('b-1', 'bad four', ADA, { metadata: { f: () => 1 } })],
      ['metadata with a cycle', fact('b-1', 'bad five', ADA, { metadata: cyclic })],
      ['metadata with a Date', fact('b-1', 'bad six', ADA, { metadata: { at: new Date(0) } })],
      ['malformed metadata.cairn', fact('b-1', 'bad seven', ADA, { metadata: { cairn: { runId: 'r' } } as never })],
      ['an embedding with NaN', fact('b-1', 'bad eight', ADA, { embedding: { vector: [1, Number.NaN] } })],
      ['an empty embedding', fact('b-1', 'bad nine', ADA, { embedding: { vector: [] } })],
      ['an id another record holds', fact('k-1', 'another text')],
    ];
    for (const [what, input] of bad) {
      await rejectsWith(() => store.add(input as never), 'memory_record_invalid', `add with ${what}`);
    }
    await rejectsWith(() => store.update({ id: 'k-1', scope: ADA, text: '', at: AT }), 'memory_record_invalid', 'update to an empty text');
    await rejectsWith(() => store.update({ id: 'k-1', scope: ADA, text: 'x', at: Infinity }), 'memory_record_invalid', 'update at Infinity');
    await rejectsWith(() => store.list({ scope: ADA, limit: 0 }), 'memory_record_invalid', 'list with limit 0');
    await rejectsWith(() => store.search({ scope: ADA, query: 1 as never }), 'memory_record_invalid', 'search with a query that is not a string');
    await rejectsWith(() => store.sweep({ scope: ADA, now: Number.NaN }), 'memory_record_invalid', 'sweep at NaN');
    assert.deepEqual(await everything(store), before);
  });
}

export function registerRaceCases(register: MemoryRegister, durable: boolean): void {
  register('10 concurrent adds of the same text into one scope make one record', async ({ store, reopen }) => {
    const stores: MemoryStore[] = [store];
    if (reopen) for (let i = 0; i < 4; i++) stores.push(await reopen());
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      stores[i % stores.length]!.add(fact(`r-${i}`, 'likes  jazz', ADA_SUPPORT, { at: AT + i }))));
    const [record, ...rest] = await store.list({ scope: ADA });
    assert.equal(rest.length, 0, 'one record');
    assert.equal(results.filter((r) => !r.deduplicated).length, 1, 'exactly one add inserted');
    assert.ok(results.every((r) => r.record.id === record!.id), 'every add answers with the record that holds the text');
  });

  register('concurrent adds of different texts all land', async ({ store, reopen }) => {
    const stores: MemoryStore[] = [store];
    if (reopen) for (let i = 0; i < 2; i++) stores.push(await reopen());
    await Promise.all(Array.from({ length: 12 }, (_, i) => stores[i % stores.length]!.add(fact(`d-${i}`, `fact ${i}`, ADA, { at: AT + i }))));
    assert.deepEqual(ids(await store.list({ scope: ADA })), Array.from({ length: 12 }, (_, i) => `d-${i}`));
  });

  if (!durable) return;
  register('another store object on the same data sees every write, and dedups against it', async ({ store, reopen }) => {
    assert.ok(reopen, 'a durable initializer gives reopen()');
    await store.add(fact('p-1', 'prefers tea', ADA, { embedding: { vector: [0.5, 0.5], model: 'emb' }, metadata: { cairn: { runId: 'r', operationId: 'op' } } }));
    const other = await reopen();
    assert.deepEqual(await other.get({ id: 'p-1', scope: ADA }), await store.get({ id: 'p-1', scope: ADA }));
    assert.equal((await other.add(fact('p-2', 'prefers tea', ADA))).deduplicated, true);
    assert.deepEqual(ids(await other.list({ scope: ADA, operationId: 'op' })), []);
    assert.deepEqual(ids(await store.list({ scope: ADA })), ['p-1']);
  });
}

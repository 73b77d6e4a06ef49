/**
 * The VersionedMemoryStore conformance cases of forget, bad input, copies
 * and races, and what every case shares: the fixture a backend hands each
 * case and the inputs the cases are written with.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { MemoryScope, VersionedMemoryMutation, VersionedMemoryStore } from '../memory/versioned/types.js';
import type { CaseRegister } from './conformance/suite.js';

/** What `create()` hands one versioned memory case. */
export interface VersionedMemoryStoreFixture {
  /** A store holding nothing. Every case gets its own (reset a shared database in `create`). */
  store: VersionedMemoryStore;
  /**
   * Another store object over the same data, as a second process opens it.
   * When given, the race cases commit through several at once and the
   * durability case reads through one; close them in `destroy`.
   */
  reopen?(): Promise<VersionedMemoryStore>;
}

export interface VersionedMemoryStoreInitializer {
  /** Names the describe block: `VersionedMemoryStore conformance: <name>`. */
  name: string;
  /** Whether the data outlives the store object; when true, `create()` must give `reopen`. @default false */
  durable?: boolean;
  /** Makes the store for one case. Called once per case. */
  create(): Promise<VersionedMemoryStoreFixture>;
  /** Closes what `create` and `reopen` opened. Called after each case, passed or failed. */
  destroy?(fixture: VersionedMemoryStoreFixture): Promise<void>;
}

export type VersionedRegister = CaseRegister<VersionedMemoryStoreFixture>;

/** The write time of the cases: ms on the caller's clock. */
export const AT = 1_700_000_000_000;
export const ADA: MemoryScope = { userId: 'ada' };
export const ADA_SUPPORT: MemoryScope = { userId: 'ada', agentId: 'support' };
export const BOB: MemoryScope = { userId: 'bob' };

/** The request digest of a name (any `sha256:<hex>` the caller chose). */
export const digest = (name: string) => `sha256:${createHash('sha256').update(name).digest('hex')}`;

/** An add mutation. */
export const add = (id: string, text: string, origin: 'explicit' | 'inferred' = 'explicit', sources?: string[]): VersionedMemoryMutation => ({
  op: 'add', id, text, origin, ...(sources ? { sources: sources.map((messageId) => ({ messageId })) } : {}),
});

/** Asserts that `call` rejects with a MemoryError of `code`. */
export async function rejectsWith(call: () => Promise<unknown>, code: string, what: string): Promise<void> {
  await assert.rejects(call, (error: unknown) => {
    const e = error as { code?: unknown; name?: unknown };
    assert.equal(e.code, code, `${what}: code`);
    assert.equal(e.name, 'MemoryError', `${what}: name`);
    return true;
  }, what);
}

/** Every answer the store gives about a scope, as one JSON text (to search for a text that must not be there). */
async function everythingOf(store: VersionedMemoryStore, scope: MemoryScope, ids: string[], operationIds: string[]): Promise<string> {
  const parts: unknown[] = [
    await store.list({ scope, includeRetracted: true, includeForgotten: true }), await store.forgotten({ scope }),
    await store.search({ scope, text: 'rooibos secret tea' }),
  ];
  for (const id of ids) parts.push(await store.get({ scope, id }), await store.history({ scope, id }));
  for (const operationId of operationIds) parts.push(await store.receipt({ scope, operationId }));
  return JSON.stringify(parts);
}

export function registerForgetCases(register: VersionedRegister): void {
  const setup = async (store: VersionedMemoryStore) => {
    await store.commit({ scope: ADA, operationId: 'op-1', requestDigest: digest('1'), at: AT, mutations: [add('tea', 'secret rooibos', 'inferred', ['c:0']), add('jazz', 'likes jazz')] });
    await store.commit({ scope: ADA, operationId: 'op-2', requestDigest: digest('2'), at: AT + 1, mutations: [{ op: 'revise', id: 'tea', text: 'secret rooibos with honey' }] });
    await store.commit({ scope: ADA, operationId: 'op-3', requestDigest: digest('3'), at: AT + 2, mutations: [{ op: 'revise', id: 'tea', text: 'secret rooibos, cold' }] });
  };

  register('forget takes the text out of every revision and answers them; the text is found in no answer of the store', async ({ store }) => {
    await setup(store);
    const event = await store.forget({ scope: ADA, id: 'tea', at: AT + 10 });
    assert.deepEqual(event, { scope: ADA, records: [{ recordId: 'tea', revision: 1 }, { recordId: 'tea', revision: 2 }, { recordId: 'tea', revision: 3 }], forgottenAt: AT + 10 });
    const history = await store.history({ scope: ADA, id: 'tea' });
    assert.deepEqual(history.map((r) => [r.revision, r.text, r.status]), [[1, null, 'forgotten'], [2, null, 'forgotten'], [3, null, 'forgotten']]);
    assert.deepEqual(history[0]!.sources, [{ messageId: 'c:0' }], 'ids and numbers stay');
    assert.equal((await store.get({ scope: ADA, id: 'tea' }))?.status, 'forgotten');
    assert.deepEqual((await store.list({ scope: ADA })).map((r) => r.id), ['jazz']);
    assert.deepEqual(await store.search({ scope: ADA, text: 'rooibos' }), []);
    assert.deepEqual(await store.forgotten({ scope: ADA }), [1, 2, 3].map((revision) => ({ recordId: 'tea', revision, forgottenAt: AT + 10 })));
    const all = await everythingOf(store, ADA, ['tea', 'jazz'], ['op-1', 'op-2', 'op-3']);
    assert.ok(!all.includes('rooibos'), all);
    assert.equal((await store.get({ scope: ADA, id: 'jazz' }))?.text, 'likes jazz', 'other records keep their text');
    assert.equal(await store.scopeRevision({ scope: ADA }), 3, 'a forget is no commit');
  });

  register('a second forget answers the same revisions and writes no second forget row; the record stays forgotten', async ({ store }) => {
    await setup(store);
    const first = await store.forget({ scope: ADA, id: 'tea', at: AT + 10 });
    const second = await store.forget({ scope: ADA, id: 'tea', at: AT + 20 });
    assert.deepEqual(second.records, first.records);
    assert.equal((await store.forgotten({ scope: ADA })).length, 3);
    assert.ok((await store.forgotten({ scope: ADA })).every((f) => f.forgottenAt === AT + 10), 'the first forget\'s time is kept');
    await rejectsWith(() => store.commit({ scope: ADA, operationId: 'op-4', requestDigest: digest('4'), at: AT + 30, mutations: [{ op: 'revise', id: 'tea', text: 'back' }] }),
      'memory_record_forgotten', 'revise after forget');
  });

  register('a forget of one named revision takes that one only; the others keep their text', async ({ store }) => {
    await setup(store);
    const event = await store.forget({ scope: ADA, id: 'tea', revision: 2, at: AT + 10 });
    assert.deepEqual(event.records, [{ recordId: 'tea', revision: 2 }]);
    assert.deepEqual((await store.history({ scope: ADA, id: 'tea' })).map((r) => [r.revision, r.text, r.status]),
      [[1, 'secret rooibos', 'active'], [2, null, 'forgotten'], [3, 'secret rooibos, cold', 'active']]);
    assert.deepEqual(await store.forgotten({ scope: ADA }), [{ recordId: 'tea', revision: 2, forgottenAt: AT + 10 }]);
    assert.deepEqual((await store.search({ scope: ADA, text: 'cold' })).map((h) => h.record.revision), [3]);
    const all = await store.forget({ scope: ADA, id: 'tea', at: AT + 11 });
    assert.deepEqual(all.records.map((r) => r.revision), [1, 2, 3]);
    assert.deepEqual((await store.forgotten({ scope: ADA })).map((f) => [f.revision, f.forgottenAt]), [[2, AT + 10], [1, AT + 11], [3, AT + 11]]);
  });

  register('a forget of an unknown revision is memory_revision_unknown and of an unknown id memory_record_not_found; nothing changes', async ({ store }) => {
    await setup(store);
    await rejectsWith(() => store.forget({ scope: ADA, id: 'tea', revision: 4, at: AT + 10 }), 'memory_revision_unknown', 'revision 4');
    await rejectsWith(() => store.forget({ scope: ADA, id: 'jazz', revision: 2, at: AT + 10 }), 'memory_revision_unknown', 'a revision of another record');
    await rejectsWith(() => store.forget({ scope: ADA, id: 'none', at: AT + 10 }), 'memory_record_not_found', 'unknown id');
    await rejectsWith(() => store.forget({ scope: BOB, id: 'tea', at: AT + 10 }), 'memory_record_not_found', 'another scope');
    assert.deepEqual(await store.forgotten({ scope: ADA }), []);
    assert.equal((await store.get({ scope: ADA, id: 'tea' }))?.text, 'secret rooibos, cold');
  });
}

export function registerBadInputCases(register: VersionedRegister): void {
  const ok = { scope: ADA, operationId: 'op-1', requestDigest: digest('1'), at: AT, mutations: [add('tea', 'prefers tea')] };
  const badScopes: [string, unknown][] = [
    ['no scope', undefined], ['an empty scope', {}], ['an empty user id', { userId: '' }], ['an unknown key', { tenant: 'acme' }],
    ['an array', ['ada']], ['null', null], ['a number as user id', { userId: 7 }],
  ];
  register('a bad scope is memory_scope_invalid on every call, and nothing is written', async ({ store }) => {
    for (const [what, scope] of badScopes) {
      const s = scope as MemoryScope;
      await rejectsWith(() => store.commit({ ...ok, scope: s }), 'memory_scope_invalid', `commit: ${what}`);
      await rejectsWith(() => store.receipt({ scope: s, operationId: 'op-1' }), 'memory_scope_invalid', `receipt: ${what}`);
      await rejectsWith(() => store.get({ scope: s, id: 'tea' }), 'memory_scope_invalid', `get: ${what}`);
      await rejectsWith(() => store.history({ scope: s, id: 'tea' }), 'memory_scope_invalid', `history: ${what}`);
      await rejectsWith(() => store.list({ scope: s }), 'memory_scope_invalid', `list: ${what}`);
      await rejectsWith(() => store.search({ scope: s, text: 'tea' }), 'memory_scope_invalid', `search: ${what}`);
      await rejectsWith(() => store.scopeRevision({ scope: s }), 'memory_scope_invalid', `scopeRevision: ${what}`);
      await rejectsWith(() => store.forget({ scope: s, id: 'tea', at: AT }), 'memory_scope_invalid', `forget: ${what}`);
      await rejectsWith(() => store.forgotten({ scope: s }), 'memory_scope_invalid', `forgotten: ${what}`);
    }
    assert.equal(await store.scopeRevision({ scope: ADA }), 0);
  });

  const badCommits: [string, unknown][] = [
    ['no input', null],
    ['mutations not an array', { ...ok, mutations: { op: 'add' } }],
    ['an unknown op', { ...ok, mutations: [{ op: 'upsert', id: 'tea', text: 'x' }] }],
    ['an empty text', { ...ok, mutations: [add('tea', '')] }],
    ['a text of only spaces', { ...ok, mutations: [add('tea', '  \n ')] }],
    ['a text that is not a string', { ...ok, mutations: [{ op: 'add', id: 'tea', text: 5, origin: 'explicit' }] }],
    ['a revise without text', { ...ok, mutations: [{ op: 'revise', id: 'tea' }] }],
    ['an unknown origin', { ...ok, mutations: [{ op: 'add', id: 'tea', text: 'x', origin: 'guessed' }] }],
    ['no record id', { ...ok, mutations: [{ op: 'add', text: 'x', origin: 'explicit' }] }],
    ['an empty record id', { ...ok, mutations: [add('', 'x')] }],
    ['a mutation that is not an object', { ...ok, mutations: ['add tea'] }],
    ['sources not an array', { ...ok, mutations: [{ ...add('tea', 'x'), sources: 'c:0' }] }],
    ['a source without a message id', { ...ok, mutations: [{ ...add('tea', 'x'), sources: [{}] }] }],
    ['one record changed twice', { ...ok, mutations: [add('tea', 'x'), { op: 'revise', id: 'tea', text: 'y' }] }],
    ['no operation id', { ...ok, operationId: '' }],
    ['a request digest that is not sha256', { ...ok, requestDigest: 'md5:abc' }],
    ['no time', { ...ok, at: undefined }],
    ['a time that is not finite', { ...ok, at: Number.NaN }],
  ];
  for (const [what, input] of badCommits) {
    register(`a commit with ${what} is memory_record_invalid and writes nothing`, async ({ store }) => {
      await rejectsWith(() => store.commit(input as never), 'memory_record_invalid', what);
      assert.equal(await store.scopeRevision({ scope: ADA }), 0);
      assert.equal(await store.receipt({ scope: ADA, operationId: 'op-1' }), undefined);
      assert.deepEqual(await store.list({ scope: ADA, includeRetracted: true, includeForgotten: true }), []);
    });
  }

  register('bad read and forget input is memory_record_invalid', async ({ store }) => {
    await store.commit(ok);
    const calls: [string, () => Promise<unknown>][] = [
      ['get without id', () => store.get({ scope: ADA } as never)],
      ['history with a number id', () => store.history({ scope: ADA, id: 1 } as never)],
      ['receipt without operation id', () => store.receipt({ scope: ADA } as never)],
      ['list with limit 0', () => store.list({ scope: ADA, limit: 0 })],
      ['list with limit 1.5', () => store.list({ scope: ADA, limit: 1.5 })],
      ['list with a flag that is not a boolean', () => store.list({ scope: ADA, includeForgotten: 'yes' } as never)],
      ['search without text', () => store.search({ scope: ADA } as never)],
      ['search with limit -1', () => store.search({ scope: ADA, text: 'tea', limit: -1 })],
      ['forget of revision 0', () => store.forget({ scope: ADA, id: 'tea', revision: 0, at: AT })],
      ['forget of revision 1.5', () => store.forget({ scope: ADA, id: 'tea', revision: 1.5, at: AT })],
      ['forget without time', () => store.forget({ scope: ADA, id: 'tea' } as never)],
      ['forget without id', () => store.forget({ scope: ADA, at: AT } as never)],
    ];
    for (const [what, call] of calls) await rejectsWith(call, 'memory_record_invalid', what);
    assert.equal((await store.get({ scope: ADA, id: 'tea' }))?.text, 'prefers tea', 'a refused forget forgot nothing');
    assert.deepEqual(await store.forgotten({ scope: ADA }), []);
  });
}

export function registerCopyCases(register: VersionedRegister): void {
  register('answers are copies, and a commit keeps copies of what it took', async ({ store }) => {
    const mutation = { op: 'add' as const, id: 'tea', text: 'prefers tea', origin: 'explicit' as const, sources: [{ messageId: 'c:0' }] };
    const scope = { userId: 'ada' };
    const { receipt } = await store.commit({ scope, operationId: 'op-1', requestDigest: digest('1'), at: AT, mutations: [mutation] });
    mutation.sources[0]!.messageId = 'changed';
    mutation.text = 'changed';
    scope.userId = 'changed';
    receipt.records[0]!.id = 'changed';
    receipt.scope.userId = 'changed';
    const got = await store.get({ scope: ADA, id: 'tea' });
    got!.sources[0]!.messageId = 'changed';
    got!.scope.userId = 'changed';
    (await store.history({ scope: ADA, id: 'tea' }))[0]!.text = 'changed';
    (await store.list({ scope: ADA }))[0]!.sources.push({ messageId: 'x' });
    (await store.search({ scope: ADA, text: 'tea' }))[0]!.record.text = 'changed';
    (await store.receipt({ scope: ADA, operationId: 'op-1' }))!.records.push({ id: 'x', revision: 9, op: 'add' });
    assert.deepEqual(await store.get({ scope: ADA, id: 'tea' }), {
      id: 'tea', scope: ADA, text: 'prefers tea', revision: 1, origin: 'explicit', sources: [{ messageId: 'c:0' }],
      status: 'active', operationId: 'op-1', createdAt: AT, updatedAt: AT,
    });
    assert.deepEqual((await store.receipt({ scope: ADA, operationId: 'op-1' }))?.records, [{ id: 'tea', revision: 1, op: 'add' }]);
    const event = await store.forget({ scope: ADA, id: 'tea', at: AT });
    event.records[0]!.revision = 9;
    (await store.forgotten({ scope: ADA }))[0]!.revision = 9;
    assert.deepEqual(await store.forgotten({ scope: ADA }), [{ recordId: 'tea', revision: 1, forgottenAt: AT }]);
  });
}

export function registerRaceCases(register: VersionedRegister, durable: boolean): void {
  const storesOf = async (store: VersionedMemoryStore, reopen: VersionedMemoryStoreFixture['reopen'], extra: number) => {
    const stores = [store];
    if (reopen) for (let i = 0; i < extra; i++) stores.push(await reopen());
    return stores;
  };

  register('ten concurrent commits in one scope all land, with scope revisions 1 to 10, one each', async ({ store, reopen }) => {
    const stores = await storesOf(store, reopen, 4);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => stores[i % stores.length]!.commit({
      scope: ADA, operationId: `op-${i}`, requestDigest: digest(`${i}`), at: AT + i, mutations: [add(`r-${i}`, `fact ${i}`)],
    })));
    assert.deepEqual(results.map((r) => r.receipt.scopeRevision).sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.ok(results.every((r) => !r.replayed));
    assert.equal(await store.scopeRevision({ scope: ADA }), 10);
    for (const [i, r] of results.entries()) assert.equal((await store.get({ scope: ADA, id: `r-${i}` }))?.revision, r.receipt.scopeRevision);
  });

  register('ten concurrent commits of one operation id apply once; the others answer its receipt, replayed', async ({ store, reopen }) => {
    const stores = await storesOf(store, reopen, 4);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => stores[i % stores.length]!.commit({
      scope: ADA, operationId: 'op-once', requestDigest: digest('once'), at: AT + i, mutations: [add('tea', 'prefers tea')],
    })));
    assert.equal(results.filter((r) => !r.replayed).length, 1, 'applied once');
    const applied = results.find((r) => !r.replayed)!;
    assert.ok(results.every((r) => JSON.stringify(r.receipt) === JSON.stringify(applied.receipt)), 'every answer is the one receipt');
    assert.equal(await store.scopeRevision({ scope: ADA }), 1);
    assert.equal((await store.history({ scope: ADA, id: 'tea' })).length, 1);
  });

  register('concurrent adds of one id under different operations: one lands, the others are memory_record_exists', async ({ store, reopen }) => {
    const stores = await storesOf(store, reopen, 2);
    const results = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => stores[i % stores.length]!.commit({
      scope: ADA, operationId: `op-${i}`, requestDigest: digest(`${i}`), at: AT, mutations: [add('tea', `tea ${i}`)],
    })));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    for (const r of results) if (r.status === 'rejected') assert.equal((r.reason as { code?: string }).code, 'memory_record_exists');
    assert.equal(await store.scopeRevision({ scope: ADA }), 1);
  });

  if (!durable) return;
  register('another store object on the same data sees the records, receipts and forget rows', async ({ store, reopen }) => {
    assert.ok(reopen, 'a durable initializer gives reopen()');
    await store.commit({ scope: ADA, operationId: 'op-1', requestDigest: digest('1'), at: AT, mutations: [add('tea', 'prefers tea'), add('jazz', 'likes jazz')] });
    await store.forget({ scope: ADA, id: 'jazz', at: AT + 1 });
    const other = await reopen();
    assert.deepEqual(await other.list({ scope: ADA, includeForgotten: true }), await store.list({ scope: ADA, includeForgotten: true }));
    assert.deepEqual(await other.receipt({ scope: ADA, operationId: 'op-1' }), await store.receipt({ scope: ADA, operationId: 'op-1' }));
    assert.deepEqual(await other.forgotten({ scope: ADA }), [{ recordId: 'jazz', revision: 1, forgottenAt: AT + 1 }]);
    assert.equal((await other.commit({ scope: ADA, operationId: 'op-1', requestDigest: digest('1'), at: AT, mutations: [] })).replayed, true);
    assert.equal(await other.scopeRevision({ scope: ADA }), 1);
  });
}

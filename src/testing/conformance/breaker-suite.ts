/**
 * The BreakerStore conformance suite: what the model layer's circuit breaker
 * relies on when workers share a store. A store keeps one state per key and
 * interprets nothing: `cooldownUntil` is a time on the run's clock, which the
 * breaker compares, not the store.
 */
import assert from 'node:assert/strict';
import type { BreakerState, BreakerStore } from '../../models/breaker-store.js';
import { describeConformance } from './suite.js';
import type { ConformanceTestApi } from './types.js';

/** What `create()` hands one breaker case. */
export interface BreakerStoreFixture {
  /** A store holding no breaker state. Every case gets its own (reset a shared database in `create`). */
  store: BreakerStore;
  /**
   * Another store object over the same data, as another process (or machine)
   * opens it, while `store` stays open. When given, the sharing cases write
   * through one object and read through the other; without it they use
   * `store` alone. Close what it opened in `destroy`.
   */
  reopen?(): Promise<BreakerStore>;
  /**
   * Closes every store object the fixture opened and opens a new one on the
   * same data, as a restarted process does. When given, the durability case
   * reads the states back through it; without it that case reads `store`.
   */
  restart?(): Promise<BreakerStore>;
}

export interface BreakerStoreInitializer {
  /** Names the describe block: `BreakerStore conformance: <name>`. */
  name: string;
  /** Makes the store for one case. Called once per case. */
  create(): Promise<BreakerStoreFixture>;
  /** Closes what `create`, `reopen` and `restart` opened. Called after each case, passed or failed. */
  destroy?(fixture: BreakerStoreFixture): Promise<void>;
}

type Register = (name: string, body: (fixture: BreakerStoreFixture) => Promise<void>) => void;

/** Keys shaped as the breaker makes them (`provider:modelId`), some alike on purpose. */
const KEY = 'openai:gpt-4o';
const LIKE_KEYS = ['openai:gpt-4o-mini', 'OpenAI:gpt-4o', 'openai:gpt-4', 'anthropic:gpt-4o'];
/** A time on a run's clock: ms since the epoch, as Date.now() gives. */
const T = 1_700_000_060_000;

/**
 * Registers the BreakerStore conformance cases with your test framework.
 * Each case gets a fresh store from `initializer.create()`.
 *
 * @example
 * ```ts
 * import { describe, it } from 'vitest';
 * import { createInMemoryBreakerStore } from 'cairn/models';
 * import { validateBreakerStore } from 'cairn/testing';
 *
 * validateBreakerStore({ name: 'in-memory', create: async () => ({ store: createInMemoryBreakerStore() }) }, { describe, it });
 * ```
 */
export function validateBreakerStore(initializer: BreakerStoreInitializer, api: ConformanceTestApi): void {
  describeConformance('BreakerStore', initializer, api, (register: Register) => {
    api.describe('get and set', () => registerStateCases(register));
    api.describe('sharing and durability', () => registerSharingCases(register));
  });
}

/** The state as the contract sees it: an absent, null or undefined `cooldownUntil` is no cooldown. */
function plain(state: BreakerState | null | undefined): BreakerState | null {
  if (state === null || state === undefined) return null;
  assert.equal(typeof state, 'object', `get returned ${String(state)}, not a state`);
  return state.cooldownUntil === undefined || state.cooldownUntil === null
    ? { failures: state.failures }
    : { failures: state.failures, cooldownUntil: state.cooldownUntil };
}

async function read(store: BreakerStore, key: string): Promise<BreakerState | null> {
  return plain(await store.get(key));
}

function registerStateCases(register: Register): void {
  register('get of a key never set is null or undefined, also once other keys are set', async ({ store }) => {
    const fresh = await store.get(KEY);
    assert.ok(fresh === null || fresh === undefined, `get of an unknown key returned ${JSON.stringify(fresh)}`);
    await store.set(LIKE_KEYS[0]!, { failures: 2 });
    await store.set(LIKE_KEYS[1]!, { failures: 5, cooldownUntil: T });
    const still = await store.get(KEY);
    assert.ok(still === null || still === undefined, `get of an unknown key returned ${JSON.stringify(still)} once others were set`);
  });

  register('set then get gives back failures and cooldownUntil exactly', async ({ store }) => {
    await store.set(KEY, { failures: 3 });
    assert.deepStrictEqual(await read(store, KEY), { failures: 3 });
    await store.set(KEY, { failures: 5, cooldownUntil: T });
    assert.deepStrictEqual(await read(store, KEY), { failures: 5, cooldownUntil: T });
    // Far from now, and the smallest values: a store keeps them as they are.
    await store.set(KEY, { failures: 1_000_000, cooldownUntil: 8_640_000_000_000_000 });
    assert.deepStrictEqual(await read(store, KEY), { failures: 1_000_000, cooldownUntil: 8_640_000_000_000_000 });
    await store.set(KEY, { failures: 0, cooldownUntil: 0 });
    assert.deepStrictEqual(await read(store, KEY), { failures: 0, cooldownUntil: 0 });
    const got = await store.get(KEY);
    assert.equal(typeof got?.failures, 'number', 'failures must come back as a number');
    assert.equal(typeof got?.cooldownUntil, 'number', 'cooldownUntil must come back as a number');
  });

  register('set replaces the whole state: without cooldownUntil the cooldown is gone', async ({ store }) => {
    await store.set(KEY, { failures: 5, cooldownUntil: T });
    await store.set(KEY, { failures: 0 });
    assert.deepStrictEqual(await read(store, KEY), { failures: 0 }, 'a success after the cooldown must close the breaker');
    await store.set(KEY, { failures: 6, cooldownUntil: T + 60_000 });
    await store.set(KEY, { failures: 7, cooldownUntil: undefined });
    assert.deepStrictEqual(await read(store, KEY), { failures: 7 }, 'cooldownUntil: undefined must clear it too');
    await store.set(KEY, { failures: 2, cooldownUntil: T });
    await store.set(KEY, { failures: 1, cooldownUntil: T - 1 });
    assert.deepStrictEqual(await read(store, KEY), { failures: 1, cooldownUntil: T - 1 }, 'an earlier cooldown and a lower count overwrite too');
  });

  register('keeps keys apart, also keys that differ only in case or by a suffix', async ({ store }) => {
    await store.set(KEY, { failures: 5, cooldownUntil: T });
    for (const [i, key] of LIKE_KEYS.entries()) await store.set(key, { failures: i + 1 });
    assert.deepStrictEqual(await read(store, KEY), { failures: 5, cooldownUntil: T });
    await store.set(KEY, { failures: 0 });
    for (const [i, key] of LIKE_KEYS.entries()) {
      assert.deepStrictEqual(await read(store, key), { failures: i + 1 }, `writing ${KEY} changed ${key}`);
    }
    await store.set(LIKE_KEYS[0]!, { failures: 9, cooldownUntil: T });
    assert.deepStrictEqual(await read(store, KEY), { failures: 0 }, `writing ${LIKE_KEYS[0]} changed ${KEY}`);
  });

  register('keeps its own copy: changing a state handed to set or got from get changes nothing stored', async ({ store }) => {
    const given: BreakerState = { failures: 2, cooldownUntil: T };
    await store.set(KEY, given);
    given.failures = 99;
    delete given.cooldownUntil;
    const got = await store.get(KEY);
    assert.deepStrictEqual(plain(got), { failures: 2, cooldownUntil: T }, 'the store kept a reference to the state it was handed');
    got!.failures = 42;
    assert.deepStrictEqual(await read(store, KEY), { failures: 2, cooldownUntil: T }, 'get handed out the stored object itself');
  });
}

function registerSharingCases(register: Register): void {
  /** Store objects over the same data: reopened ones when the backend can, else the fixture's. */
  const objects = async ({ store, reopen }: BreakerStoreFixture, n: number): Promise<BreakerStore[]> => {
    if (!reopen) return Array.from({ length: n }, () => store);
    return [store, ...(await Promise.all(Array.from({ length: n - 1 }, () => reopen())))];
  };

  register('two store objects on the same data see each other\'s writes at once', async (fixture) => {
    const [a, b] = (await objects(fixture, 2)) as [BreakerStore, BreakerStore];
    const unknown = await b.get(KEY);
    assert.ok(unknown === null || unknown === undefined, 'a second object sees a state nobody set');
    await a.set(KEY, { failures: 5, cooldownUntil: T });
    assert.deepStrictEqual(await read(b, KEY), { failures: 5, cooldownUntil: T }, 'the other object did not see the cooldown');
    await b.set(KEY, { failures: 0 });
    assert.deepStrictEqual(await read(a, KEY), { failures: 0 }, 'the first object did not see the breaker close');
    await b.set(LIKE_KEYS[0]!, { failures: 1 });
    assert.deepStrictEqual(await read(a, LIKE_KEYS[0]!), { failures: 1 });
  });

  register('writes at once through several objects: every key lands, and a raced key holds one whole state', async (fixture) => {
    const stores = await objects(fixture, 5);
    const keys = Array.from({ length: 10 }, (_, i) => `provider-${i}:model`);
    await Promise.all(keys.map((key, i) => stores[i % stores.length]!.set(key, { failures: i, cooldownUntil: T + i })));
    for (const [i, key] of keys.entries()) {
      assert.deepStrictEqual(await read(stores[(i + 1) % stores.length]!, key), { failures: i, cooldownUntil: T + i }, `${key} was lost`);
    }
    // Racing writers of one key: last writer wins, but never half of one state and half of another.
    const written: BreakerState[] = Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? { failures: i, cooldownUntil: T + i } : { failures: i }));
    await Promise.all(written.map((state, i) => stores[i % stores.length]!.set(KEY, state)));
    const final = await read(fixture.store, KEY);
    assert.ok(written.some((state) => isDeepEqual(state, final)), `after racing writes ${KEY} holds ${JSON.stringify(final)}, which no writer wrote`);
  });

  register('states survive closing the store and opening it again', async (fixture) => {
    await fixture.store.set(KEY, { failures: 5, cooldownUntil: T });
    await fixture.store.set(LIKE_KEYS[0]!, { failures: 2 });
    await fixture.store.set(LIKE_KEYS[1]!, { failures: 7, cooldownUntil: T });
    await fixture.store.set(LIKE_KEYS[1]!, { failures: 0 });
    const after = fixture.restart ? await fixture.restart() : fixture.store;
    assert.deepStrictEqual(await read(after, KEY), { failures: 5, cooldownUntil: T });
    assert.deepStrictEqual(await read(after, LIKE_KEYS[0]!), { failures: 2 });
    assert.deepStrictEqual(await read(after, LIKE_KEYS[1]!), { failures: 0 });
    const unknown = await after.get(LIKE_KEYS[2]!);
    assert.ok(unknown === null || unknown === undefined, 'a key never set has a state after a restart');
  });
}

function isDeepEqual(a: unknown, b: unknown): boolean {
  try {
    assert.deepStrictEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

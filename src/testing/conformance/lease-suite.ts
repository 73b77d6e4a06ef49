/**
 * The LeaseProvider conformance suite: acquire, expiry, fencing tokens,
 * renew, release, drain and inspect, the same for every backend.
 */
import assert from 'node:assert/strict';
import type { Lease, LeaseProvider } from '../../agent/types.js';
import { describeConformance } from './suite.js';
import type { ConformanceTestApi, LeaseProviderFixture, LeaseProviderInitializer } from './types.js';

interface LeaseCase {
  provider: LeaseProvider;
  /** Moves the provider's clock. */
  advance(ms: number): Promise<void>;
  ttl: number;
  fixture: LeaseProviderFixture;
}

/**
 * Registers the LeaseProvider conformance cases with your test framework.
 * Each case gets a fresh provider, holding no leases, from `initializer.create()`,
 * and moves its clock with the fixture's `advance`.
 *
 * @example
 * ```ts
 * import { describe, it } from 'vitest';
 * import { createInMemoryLeaseProvider } from 'cairn/agent';
 * import { createManualClock, validateLeaseProvider } from 'cairn/testing';
 *
 * validateLeaseProvider({
 *   name: 'in-memory',
 *   create: async () => {
 *     const clock = createManualClock();
 *     return { provider: createInMemoryLeaseProvider({ clock }), advance: async (ms) => clock.advance(ms) };
 *   },
 * }, { describe, it });
 * ```
 */
export function validateLeaseProvider(initializer: LeaseProviderInitializer, api: ConformanceTestApi): void {
  describeConformance('LeaseProvider', initializer, api, (fresh) => {
    const register: Register = (name, body) => fresh(name, async (fixture) => {
      assert.equal(typeof fixture.advance, 'function', 'create() must return `advance(ms)`: the lease cases move time');
      await body({ provider: fixture.provider, advance: (ms) => fixture.advance(ms), ttl: fixture.ttlMs ?? 10_000, fixture });
    });
    api.describe('acquire and inspect', () => registerAcquireCases(register));
    api.describe('renew, release and drain', () => registerRenewCases(register));
    api.describe('races', () => registerRaceCases(register));
  });
}

type Register = (name: string, body: (c: LeaseCase) => Promise<void>) => void;

async function take(provider: LeaseProvider, key: string, owner: string, ttl: number): Promise<Lease> {
  const lease = await provider.acquire(key, owner, ttl);
  assert.ok(lease, `${owner} could not acquire ${key}`);
  return lease;
}

function assertLease(lease: Lease | null, key: string, owner: string, what: string): asserts lease is Lease {
  assert.ok(lease, `${what}: no lease`);
  assert.equal(lease.key, key, `${what}: key`);
  assert.equal(lease.owner, owner, `${what}: owner`);
  assert.ok(Number.isSafeInteger(lease.token) && lease.token > 0, `${what}: token ${lease.token} is not a positive integer`);
  assert.ok(Number.isFinite(lease.expiresAt), `${what}: expiresAt ${lease.expiresAt} is not a time`);
}

function registerAcquireCases(register: Register): void {
  register('acquires a free key; inspect shows the lease, and null for a key nobody took', async ({ provider, ttl }) => {
    assert.equal(await provider.inspect('lease:a'), null);
    const lease = await provider.acquire('lease:a', 'owner-1', ttl);
    assertLease(lease, 'lease:a', 'owner-1', 'acquire of a free key');
    assert.deepStrictEqual(await provider.inspect('lease:a'), lease);
    assert.equal(await provider.inspect('lease:b'), null);
  });

  register('refuses another owner while the lease is unexpired', async ({ provider, advance, ttl }) => {
    const lease = await take(provider, 'lease:a', 'owner-1', ttl);
    assert.equal(await provider.acquire('lease:a', 'owner-2', ttl), null);
    await advance(ttl / 2);
    assert.equal(await provider.acquire('lease:a', 'owner-2', ttl), null, 'taken over halfway through its ttl');
    assert.deepStrictEqual(await provider.inspect('lease:a'), lease);
  });

  register('hands an expired lease to the next owner with a greater token', async ({ provider, advance, ttl }) => {
    const first = await take(provider, 'lease:a', 'owner-1', ttl);
    await advance(ttl + ttl / 2);
    const second = await provider.acquire('lease:a', 'owner-2', ttl);
    assertLease(second, 'lease:a', 'owner-2', 'acquire of an expired lease');
    assert.ok(second.token > first.token, `token ${second.token} after ${first.token}: a fencing token must grow`);
    assert.deepStrictEqual(await provider.inspect('lease:a'), second);
    await advance(ttl + ttl / 2);
    const third = await take(provider, 'lease:a', 'owner-1', ttl);
    assert.ok(third.token > second.token, 'an owner coming back after expiry gets a new, greater token');
  });

  register('gives the holder its lease back, same token, extended, when it acquires again', async ({ provider, advance, ttl }) => {
    const first = await take(provider, 'lease:a', 'owner-1', ttl);
    await advance(ttl / 2);
    const again = await provider.acquire('lease:a', 'owner-1', ttl);
    assertLease(again, 'lease:a', 'owner-1', 'acquire by the holder');
    assert.equal(again.token, first.token);
    assert.ok(again.expiresAt > first.expiresAt, 'the lease was not extended');
    await advance(ttl * 0.75);
    // 1.25 ttl after the first acquire, 0.75 after the second: still held.
    assert.equal(await provider.acquire('lease:a', 'owner-2', ttl), null, 'taken over although the holder extended it');
  });

  register('inspect shows an expired lease as it was stored', async ({ provider, advance, ttl }) => {
    const lease = await take(provider, 'lease:a', 'owner-1', ttl);
    await advance(ttl + ttl / 2);
    assert.deepStrictEqual(await provider.inspect('lease:a'), lease);
  });

  register('keeps keys apart', async ({ provider, advance, ttl }) => {
    const a = await take(provider, 'lease:a', 'owner-1', ttl);
    const b = await take(provider, 'lease:b', 'owner-2', ttl);
    assert.equal(await provider.acquire('lease:b', 'owner-1', ttl), null);
    await provider.requestDrain('lease:a');
    assert.equal((await provider.renew(b, ttl))?.drain, false, 'a drain of another key reached this one');
    await provider.release(a);
    assert.deepStrictEqual((await provider.inspect('lease:b'))?.owner, 'owner-2');
    await advance(ttl / 2);
    assert.ok(await provider.renew(b, ttl), 'releasing another key lost this one');
  });
}

function registerRenewCases(register: Register): void {
  register('renews the holder\'s lease: same token, later expiry, no drain', async ({ provider, advance, ttl }) => {
    let lease = await take(provider, 'lease:a', 'owner-1', ttl);
    for (let i = 0; i < 4; i++) {
      await advance(ttl / 2);
      const renewal = await provider.renew(lease, ttl);
      assert.ok(renewal, `renewal ${i + 1} within the ttl was refused`);
      assert.equal(renewal.drain, false);
      assertLease(renewal.lease, 'lease:a', 'owner-1', `renewal ${i + 1}`);
      assert.equal(renewal.lease.token, lease.token);
      assert.ok(renewal.lease.expiresAt > lease.expiresAt, 'renew did not extend the lease');
      lease = renewal.lease;
    }
    // Two ttls after the first acquire, yet renewed all along: nobody else gets it.
    assert.equal(await provider.acquire('lease:a', 'owner-2', ttl), null);
    assert.deepStrictEqual(await provider.inspect('lease:a'), lease);
  });

  register('refuses to renew a lease that expired, was taken over, released, or is not this one', async ({ provider, advance, ttl }) => {
    const lease = await take(provider, 'lease:a', 'owner-1', ttl);
    assert.equal(await provider.renew({ ...lease, token: lease.token + 1 }, ttl), null, 'renew with another token');
    assert.equal(await provider.renew({ ...lease, owner: 'owner-2' }, ttl), null, 'renew by another owner');
    assert.equal(await provider.renew({ ...lease, key: 'lease:z' }, ttl), null, 'renew of a key nobody holds');
    await advance(ttl + ttl / 2);
    assert.equal(await provider.renew(lease, ttl), null, 'renew of an expired lease nobody took');
    const other = await take(provider, 'lease:a', 'owner-2', ttl);
    assert.equal(await provider.renew(lease, ttl), null, 'renew of a lease taken over');
    await provider.release(other);
    assert.equal(await provider.renew(other, ttl), null, 'renew of a released lease');
  });

  register('release frees the key at once; a lost lease\'s release changes nothing', async ({ provider, advance, ttl }) => {
    const first = await take(provider, 'lease:a', 'owner-1', ttl);
    await provider.release(first);
    await provider.release(first); // twice: ignored
    const second = await provider.acquire('lease:a', 'owner-2', ttl);
    assertLease(second, 'lease:a', 'owner-2', 'acquire right after a release');
    assert.ok(second.token > first.token, 'tokens grow across a release');

    await advance(ttl + ttl / 2);
    const third = await take(provider, 'lease:a', 'owner-3', ttl);
    await provider.release(second); // lost: must not free owner-3's lease
    assert.equal(await provider.acquire('lease:a', 'owner-4', ttl), null, 'a stale release freed the new holder\'s lease');
    assert.deepStrictEqual(await provider.inspect('lease:a'), third);
    assert.ok(await provider.renew(third, ttl), 'a stale release lost the new holder its lease');
  });

  register('drain: the holder sees it on every renew until a new holder acquires', async ({ provider, advance, ttl }) => {
    await provider.requestDrain('lease:nobody'); // no holder: ignored, no error
    const lease = await take(provider, 'lease:a', 'owner-1', ttl);
    assert.equal((await provider.renew(lease, ttl))?.drain, false);
    await provider.requestDrain('lease:a');
    const asked = await provider.renew(lease, ttl);
    assert.ok(asked, 'a drain request ended the lease');
    assert.equal(asked.drain, true, 'the holder did not see the drain request');
    assert.equal((await provider.renew(asked.lease, ttl))?.drain, true, 'the drain request was forgotten before a new holder');
    assert.equal(await provider.acquire('lease:a', 'owner-2', ttl), null, 'a drain request freed the lease');
    await provider.release(asked.lease);
    const next = await take(provider, 'lease:a', 'owner-2', ttl);
    assert.equal((await provider.renew(next, ttl))?.drain, false, 'a new holder inherited the drain request');
    await provider.requestDrain('lease:a');
    await advance(ttl + ttl / 2);
    const after = await take(provider, 'lease:a', 'owner-3', ttl);
    assert.equal((await provider.renew(after, ttl))?.drain, false, 'a holder after an expiry inherited the drain request');
  });
}

function registerRaceCases(register: Register): void {
  /** Provider objects over the same leases: reopened ones when the backend can, else the fixture's. */
  const racers = async ({ provider, fixture }: LeaseCase, n: number): Promise<LeaseProvider[]> => {
    const reopen = fixture.reopen;
    if (!reopen) return Array.from({ length: n }, () => provider);
    return [provider, ...(await Promise.all(Array.from({ length: n - 1 }, () => reopen())))];
  };

  register('lets exactly one of 10 owners acquiring a free key at once win', async (c) => {
    const providers = await racers(c, 10);
    const leases = await Promise.all(providers.map((p, i) => p.acquire('lease:race', `owner-${i}`, c.ttl)));
    const winners = leases.filter((l): l is Lease => l !== null);
    assert.equal(winners.length, 1, `${winners.length} of 10 owners hold the lease`);
    assert.deepStrictEqual(await c.provider.inspect('lease:race'), winners[0]);
  });

  register('lets exactly one of 10 owners taking over an expired lease win, with a greater token', async (c) => {
    const old = await take(c.provider, 'lease:race', 'owner-old', c.ttl);
    await c.advance(c.ttl + c.ttl / 2);
    const providers = await racers(c, 10);
    const leases = await Promise.all(providers.map((p, i) => p.acquire('lease:race', `owner-${i}`, c.ttl)));
    const winners = leases.filter((l): l is Lease => l !== null);
    assert.equal(winners.length, 1, `${winners.length} of 10 owners hold the lease`);
    assert.ok(winners[0]!.token > old.token);
    assert.equal(await c.provider.renew(old, c.ttl), null);
    assert.deepStrictEqual(await c.provider.inspect('lease:race'), winners[0]);
  });
}

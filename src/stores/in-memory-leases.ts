/**
 * Leases kept in memory: one process, many executors. Times come from the
 * injected clock, so tests move time instead of waiting for it.
 */
import { InvalidOptionsError } from '../errors/index.js';
import type { Lease, LeaseProvider, LeaseRenewal } from '../agent/types.js';

export interface InMemoryLeaseProviderOptions {
  /** Where times come from; give the store that checks these leases the same clock. @default Date.now */
  clock?: { now(): number };
}

// Synchronous readers of the providers made here. The in-memory store uses one
// to check a lease and write the run in the same synchronous step, so no other
// call can take the lease in between (the async `inspect` would leave a gap).
const peekers = new WeakMap<LeaseProvider, (key: string) => Lease | null>();

/** The lease stored for `key` right now, when `provider` was made by this module; `undefined` otherwise. */
export function peekInMemoryLease(provider: LeaseProvider, key: string): Lease | null | undefined {
  return peekers.get(provider)?.(key);
}

interface Held {
  lease: Lease;
  drain: boolean;
}

/**
 * Creates a volatile {@link LeaseProvider}. A lease is held while the clock is
 * before its `expiresAt`; each new holder gets the previous token plus one
 * (tokens keep growing after a release or an expiry); the owner that holds a
 * lease gets it back renewed, same token, when it acquires it again. A drain
 * request stays set for the holder until someone else acquires the lease.
 *
 * @example
 * ```ts
 * const leases = createInMemoryLeaseProvider();
 * const lease = await leases.acquire('run:42', 'worker-a', 30_000); // { token: 1, ... }
 * await leases.acquire('run:42', 'worker-b', 30_000); // null: worker-a holds it
 * ```
 */
export function createInMemoryLeaseProvider(options: InMemoryLeaseProviderOptions = {}): LeaseProvider {
  const clock = options.clock ?? { now: () => Date.now() };
  const held = new Map<string, Held>();
  // The last token issued per key, kept after a release so tokens never repeat.
  const tokens = new Map<string, number>();

  const live = (entry: Held | undefined, now: number): entry is Held => entry !== undefined && now < entry.lease.expiresAt;
  const isHolder = (entry: Held | undefined, lease: Lease): entry is Held =>
    entry !== undefined && entry.lease.owner === lease.owner && entry.lease.token === lease.token;

  const provider: LeaseProvider = {
    async acquire(key, owner, ttlMs) {
      checkKey(key, 'key');
      checkKey(owner, 'owner');
      checkTtl(ttlMs);
      const now = clock.now();
      const entry = held.get(key);
      if (live(entry, now)) {
        if (entry.lease.owner !== owner) return null;
        entry.lease = { ...entry.lease, expiresAt: now + ttlMs };
        return { ...entry.lease };
      }
      const token = (tokens.get(key) ?? 0) + 1;
      tokens.set(key, token);
      const lease: Lease = { key, owner, token, expiresAt: now + ttlMs };
      held.set(key, { lease, drain: false });
      return { ...lease };
    },

    async renew(lease, ttlMs): Promise<LeaseRenewal | null> {
      checkTtl(ttlMs);
      const now = clock.now();
      const entry = held.get(lease.key);
      if (!isHolder(entry, lease) || !live(entry, now)) return null;
      entry.lease = { ...entry.lease, expiresAt: now + ttlMs };
      return { lease: { ...entry.lease }, drain: entry.drain };
    },

    async release(lease) {
      if (isHolder(held.get(lease.key), lease)) held.delete(lease.key);
    },

    async requestDrain(key) {
      const entry = held.get(key);
      if (entry) entry.drain = true;
    },

    async inspect(key) {
      const entry = held.get(key);
      return entry ? { ...entry.lease } : null;
    },
  };
  peekers.set(provider, (key) => {
    const entry = held.get(key);
    return entry ? { ...entry.lease } : null;
  });
  return provider;
}

function checkKey(value: unknown, name: string): void {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidOptionsError(`A lease ${name} must be a non-empty string.`);
  }
}

function checkTtl(ttlMs: unknown): void {
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new InvalidOptionsError(`A lease ttlMs must be a positive number of milliseconds, got ${String(ttlMs)}.`);
  }
}

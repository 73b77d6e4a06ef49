/**
 * The SQLite LeaseProvider: one row per key in `cairn_leases`, times from the
 * store's clock. A lease is held while its row names the same owner and token
 * and `expires_at` is after now; the run store's save checks exactly that in
 * its own transaction.
 *
 * The row outlives its holders, so the token keeps growing across holders and
 * stays a fencing token: release empties the owner (inspect then answers null,
 * as for a key never taken) and keeps the token.
 */
import type Database from 'better-sqlite3';
import type { Lease, LeaseProvider, LeaseRenewal } from '../../agent/types.js';
import { InvalidOptionsError } from '../../errors/index.js';

/** The owner of a released lease row (a real owner is never empty). */
const RELEASED = '';

interface LeaseRow {
  lease_key: string;
  owner: string;
  token: number;
  expires_at: number;
  drain: number;
}

/** @internal Takes or gives a better-sqlite3 handle, whose types stay out of the published declarations (a user need not install @types/better-sqlite3). */
export function createLeaseProvider(db: Database.Database, clock: { now(): number }): LeaseProvider {
  const statements = {
    get: db.prepare<[string], LeaseRow>('SELECT lease_key, owner, token, expires_at, drain FROM cairn_leases WHERE lease_key = ?'),
    insert: db.prepare<[string, string, number]>(
      'INSERT INTO cairn_leases (lease_key, owner, token, expires_at, drain) VALUES (?, ?, 1, ?, 0)'),
    take: db.prepare<[string, number, string]>(
      'UPDATE cairn_leases SET owner = ?, token = token + 1, expires_at = ?, drain = 0 WHERE lease_key = ?'),
    extend: db.prepare<[number, string]>('UPDATE cairn_leases SET expires_at = ? WHERE lease_key = ?'),
    release: db.prepare<[number, string]>(
      "UPDATE cairn_leases SET owner = '', expires_at = MIN(expires_at, ?), drain = 0 WHERE lease_key = ?"),
    drain: db.prepare<[string]>("UPDATE cairn_leases SET drain = 1 WHERE lease_key = ? AND owner <> ''"),
  };

  const held = (row: LeaseRow | undefined, lease: Lease, now: number): row is LeaseRow =>
    row !== undefined && row.owner === lease.owner && row.token === lease.token && row.expires_at > now;

  const acquireTx = db.transaction((key: string, owner: string, ttlMs: number): Lease | null => {
    const now = clock.now();
    const expiresAt = now + ttlMs;
    const row = statements.get.get(key);
    if (!row) {
      statements.insert.run(key, owner, expiresAt);
      return { key, owner, token: 1, expiresAt };
    }
    if (row.owner === RELEASED || row.expires_at <= now) {
      // Free (released or expired): a new holding, with a new token.
      statements.take.run(owner, expiresAt, key);
      return { key, owner, token: row.token + 1, expiresAt };
    }
    if (row.owner === owner) {
      // The same owner asking again while it holds the lease: a renewal, same token.
      statements.extend.run(expiresAt, key);
      return { key, owner, token: row.token, expiresAt };
    }
    return null;
  });

  const renewTx = db.transaction((lease: Lease, ttlMs: number): LeaseRenewal | null => {
    const now = clock.now();
    const row = statements.get.get(lease.key);
    if (!held(row, lease, now)) return null;
    const expiresAt = now + ttlMs;
    statements.extend.run(expiresAt, lease.key);
    return { lease: { key: lease.key, owner: lease.owner, token: lease.token, expiresAt }, drain: row.drain !== 0 };
  });

  const releaseTx = db.transaction((lease: Lease): void => {
    const now = clock.now();
    const row = statements.get.get(lease.key);
    // Emptied, not deleted: the next holder's token continues from this one.
    if (held(row, lease, now)) statements.release.run(now, lease.key);
  });

  return {
    async acquire(key, owner, ttlMs) {
      checkKey(key);
      if (typeof owner !== 'string' || owner === '') throw new InvalidOptionsError('lease: owner must be a non-empty string.');
      return acquireTx.immediate(key, owner, checkTtl(ttlMs));
    },
    async renew(lease, ttlMs) {
      checkLease(lease);
      return renewTx.immediate(lease, checkTtl(ttlMs));
    },
    async release(lease) {
      checkLease(lease);
      releaseTx.immediate(lease);
    },
    async requestDrain(key) {
      checkKey(key);
      statements.drain.run(key);
    },
    async inspect(key) {
      checkKey(key);
      const row = statements.get.get(key);
      return row && row.owner !== RELEASED ? { key: row.lease_key, owner: row.owner, token: row.token, expiresAt: row.expires_at } : null;
    },
  };
}

function checkKey(key: unknown): void {
  if (typeof key !== 'string' || key === '') throw new InvalidOptionsError('lease: key must be a non-empty string.');
}

function checkTtl(ttlMs: unknown): number {
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new InvalidOptionsError(`lease: ttlMs must be a positive number of milliseconds, got ${String(ttlMs)}.`);
  }
  return ttlMs;
}

function checkLease(lease: Lease): void {
  if (typeof lease !== 'object' || lease === null) throw new InvalidOptionsError('lease: expected a Lease from acquire or renew.');
  checkKey(lease.key);
}

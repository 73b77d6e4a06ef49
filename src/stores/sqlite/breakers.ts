/**
 * The SQLite BreakerStore: one `cairn_breakers` row per `provider:modelId`.
 * The store keeps what the breaker hands it and interprets nothing:
 * `cooldownUntil` is a time on the run's clock (`deps.clock`), not on the
 * store's. `updated_at` (the store's clock) is for operators only.
 */
import type Database from 'better-sqlite3';
import { InvalidOptionsError } from '../../errors/index.js';
import type { BreakerState, BreakerStore } from '../../models/breaker-store.js';

interface BreakerRow {
  failures: number;
  cooldown_until: number | null;
}

/** The largest count the Postgres store's integer column holds; both stores refuse more, so they agree. */
const MAX_FAILURES = 2_147_483_647;

export function createBreakerStore(db: Database.Database, clock: { now(): number }): BreakerStore {
  const statements = {
    get: db.prepare<[string], BreakerRow>('SELECT failures, cooldown_until FROM cairn_breakers WHERE key = ?'),
    set: db.prepare<[string, number, number | null, number]>(`INSERT INTO cairn_breakers (key, failures, cooldown_until, updated_at)
VALUES (?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET
  failures = excluded.failures, cooldown_until = excluded.cooldown_until, updated_at = excluded.updated_at`),
  };
  return {
    async get(key) {
      checkKey(key);
      const row = statements.get.get(key);
      if (!row) return undefined;
      return row.cooldown_until === null ? { failures: row.failures } : { failures: row.failures, cooldownUntil: row.cooldown_until };
    },
    async set(key, state) {
      checkKey(key);
      const { failures, cooldownUntil } = checkState(state);
      // One statement, its own transaction: last writer wins, as with any get/set store.
      statements.set.run(key, failures, cooldownUntil, clock.now());
    },
  };
}

function checkKey(key: unknown): void {
  if (typeof key !== 'string' || key === '') throw new InvalidOptionsError('breaker: key must be a non-empty string.');
}

/**
 * Checks a state and returns its columns. A fractional `cooldownUntil` is
 * rounded up to the next millisecond (the column holds whole ones): the
 * breaker stays open a fraction of a millisecond longer, never shorter.
 */
function checkState(state: BreakerState): { failures: number; cooldownUntil: number | null } {
  if (typeof state !== 'object' || state === null) throw new InvalidOptionsError('breaker: state must be { failures, cooldownUntil? }.');
  const { failures, cooldownUntil } = state;
  if (!Number.isInteger(failures) || failures < 0 || failures > MAX_FAILURES) {
    throw new InvalidOptionsError(`breaker: failures must be an integer from 0 to ${MAX_FAILURES}, got ${String(failures)}.`);
  }
  if (cooldownUntil === undefined || cooldownUntil === null) return { failures, cooldownUntil: null };
  if (typeof cooldownUntil !== 'number' || !Number.isFinite(cooldownUntil) || Math.abs(cooldownUntil) > Number.MAX_SAFE_INTEGER) {
    throw new InvalidOptionsError(`breaker: cooldownUntil must be a time in ms, got ${String(cooldownUntil)}.`);
  }
  return { failures, cooldownUntil: Math.ceil(cooldownUntil) };
}

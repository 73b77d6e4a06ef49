/**
 * The SQLite BreakerStore: one `cairn_breakers` row per `provider:modelId`.
 * The store keeps what the breaker hands it and interprets nothing:
 * `cooldownUntil` is a time on the run's clock (`deps.clock`), not on the
 * store's. `updated_at` (the store's clock) is for operators only.
 */
import type Database from 'better-sqlite3';
import { checkBreakerKey as checkKey, checkBreakerState as checkState, type BreakerStore } from '../../models/breaker-store.js';

interface BreakerRow {
  failures: number;
  cooldown_until: number | null;
}

/** @internal Takes or gives a better-sqlite3 handle, whose types stay out of the published declarations (a user need not install @types/better-sqlite3). */
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

/**
 * The PostgreSQL BreakerStore: one `cairn_breakers` row per
 * `provider:modelId`, shared by every worker on the database. Unlike the
 * leases, the breaker's times are not on the database clock: `cooldownUntil`
 * is a time on the run's clock (`deps.clock`), stored as given and compared
 * by the breaker, never by SQL. `updated_at` (`now()`) is for operators only.
 */
import { checkBreakerKey as checkKey, checkBreakerState as checkState, type BreakerStore } from '../../models/breaker-store.js';
import type { OpsTables } from './migrations.js';
import { statementName, type Db } from './sql.js';

interface BreakerRow {
  failures: number;
  cooldown_until: number | null;
}

export function createPostgresBreakerStore(db: Db, t: OpsTables): BreakerStore {
  // bigint comes back from pg as a string; float8 holds every safe integer exactly.
  const select = `SELECT failures, cooldown_until::float8 AS cooldown_until FROM ${t.breakers} WHERE key = $1`;
  const upsert = `INSERT INTO ${t.breakers} (key, failures, cooldown_until, updated_at)
VALUES ($1, $2, $3::bigint, now())
ON CONFLICT (key) DO UPDATE SET
  failures = EXCLUDED.failures, cooldown_until = EXCLUDED.cooldown_until, updated_at = EXCLUDED.updated_at`;
  const names = { select: statementName(select), upsert: statementName(upsert) };

  return {
    async get(key) {
      checkKey(key);
      const rows = await db.query<BreakerRow>(`Reading breaker ${key}`, select, [key], false, names.select);
      const row = rows[0];
      if (!row) return undefined;
      return row.cooldown_until === null ? { failures: row.failures } : { failures: row.failures, cooldownUntil: row.cooldown_until };
    },
    async set(key, state) {
      checkKey(key);
      const { failures, cooldownUntil } = checkState(state);
      // One statement: last writer wins, as with any get/set store.
      await db.query(`Writing breaker ${key}`, upsert, [key, failures, cooldownUntil], true, names.upsert);
    },
  };
}

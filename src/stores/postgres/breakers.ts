/**
 * The PostgreSQL BreakerStore: one `cairn_breakers` row per
 * `provider:modelId`, shared by every worker on the database. Unlike the
 * leases, the breaker's times are not on the database clock: `cooldownUntil`
 * is a time on the run's clock (`deps.clock`), stored as given and compared
 * by the breaker, never by SQL. `updated_at` (`now()`) is for operators only.
 */
import { InvalidOptionsError } from '../../errors/index.js';
import type { BreakerState, BreakerStore } from '../../models/breaker-store.js';
import type { OpsTables } from './migrations.js';
import { statementName, type Db } from './sql.js';

interface BreakerRow {
  failures: number;
  cooldown_until: number | null;
}

/** What the `failures` column (integer) holds. */
const MAX_FAILURES = 2_147_483_647;

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

function checkKey(key: unknown): void {
  if (typeof key !== 'string' || key === '') throw new InvalidOptionsError('breaker: key must be a non-empty string.');
}

/**
 * Checks a state and returns its columns. A fractional `cooldownUntil` is
 * rounded up to the next millisecond (the column is a bigint): the breaker
 * stays open a fraction of a millisecond longer, never shorter.
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

/**
 * The PostgreSQL LeaseProvider: one `cairn_leases` row per key, every time on
 * the database clock (`now()`), so executors on machines whose clocks differ
 * agree on who holds a run. A release empties the row's owner and keeps its
 * token (inspect then answers null, as for a key never taken), so the fencing
 * token keeps growing across holders and is never reused.
 */
import { InvalidOptionsError } from '../../errors/index.js';
import type { Lease, LeaseProvider, LeaseRenewal } from '../../agent/types.js';
import type { OpsTables } from './migrations.js';
import type { Db } from './sql.js';

interface LeaseRow {
  key: string;
  owner: string;
  token: number;
  expires_at: number;
  drain: boolean;
}

const toLease = (row: LeaseRow): Lease => ({ key: row.key, owner: row.owner, token: row.token, expiresAt: row.expires_at });

export function createPostgresLeaseProvider(db: Db, t: OpsTables): LeaseProvider {
  const returning = `RETURNING key, owner, token::float8 AS token,
    floor(extract(epoch FROM expires_at) * 1000)::float8 AS expires_at, drain`;
  // The row is still the same owner's holding (not expired, not released).
  const live = `l.owner = EXCLUDED.owner AND l.expires_at > now()`;
  const until = (n: number) => `now() + $${n}::float8 * interval '1 millisecond'`;

  return {
    async acquire(key, owner, ttlMs) {
      checkKey(key, 'key');
      checkKey(owner, 'owner');
      checkTtl(ttlMs);
      // Free, expired or already ours: take it. A new holder (or a new tenure
      // after expiry or release) gets the next token; a live holder keeps its own.
      const rows = await db.query<LeaseRow>(`Acquiring lease ${key}`, `
        INSERT INTO ${t.leases} AS l (key, owner, token, expires_at, drain)
        VALUES ($1, $2, 1, ${until(3)}, false)
        ON CONFLICT (key) DO UPDATE SET
          token = CASE WHEN ${live} THEN l.token ELSE l.token + 1 END,
          drain = CASE WHEN ${live} THEN l.drain ELSE false END,
          owner = EXCLUDED.owner,
          expires_at = EXCLUDED.expires_at
        WHERE l.expires_at <= now() OR l.owner = EXCLUDED.owner OR l.owner = ''
        ${returning}`, [key, owner, ttlMs]);
      return rows[0] ? toLease(rows[0]) : null;
    },

    async renew(lease, ttlMs): Promise<LeaseRenewal | null> {
      checkTtl(ttlMs);
      // A lease that lapsed is lost even if nobody took it: a save with it
      // was already refused, so the holder must acquire again.
      const rows = await db.query<LeaseRow>(`Renewing lease ${lease.key}`, `
        UPDATE ${t.leases} SET expires_at = ${until(4)}
        WHERE key = $1 AND owner = $2 AND token = $3::bigint AND expires_at > now()
        ${returning}`, [lease.key, lease.owner, lease.token, ttlMs]);
      const row = rows[0];
      return row ? { lease: toLease(row), drain: row.drain } : null;
    },

    async release(lease) {
      // Emptied, not deleted: the next holder's token goes on from this one.
      await db.query(`Releasing lease ${lease.key}`, `
        UPDATE ${t.leases} SET owner = '', expires_at = least(expires_at, now()), drain = false
        WHERE key = $1 AND owner = $2 AND token = $3::bigint AND expires_at > now()`, [lease.key, lease.owner, lease.token]);
    },

    async requestDrain(key) {
      checkKey(key, 'key');
      await db.query(`Requesting a drain of lease ${key}`, `
        UPDATE ${t.leases} SET drain = true WHERE key = $1 AND expires_at > now()`, [key]);
    },

    async inspect(key) {
      checkKey(key, 'key');
      const rows = await db.query<LeaseRow>(`Inspecting lease ${key}`, `
        SELECT key, owner, token::float8 AS token, floor(extract(epoch FROM expires_at) * 1000)::float8 AS expires_at, drain
        FROM ${t.leases} WHERE key = $1 AND owner <> ''`, [key]);
      return rows[0] ? toLease(rows[0]) : null;
    },
  };
}

function checkKey(value: unknown, name: string): void {
  if (typeof value !== 'string' || value === '') throw new InvalidOptionsError(`lease ${name} must be a non-empty string.`);
}

function checkTtl(ttlMs: unknown): void {
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new InvalidOptionsError(`lease ttlMs must be a positive number of milliseconds, got ${JSON.stringify(ttlMs)}.`);
  }
}

/**
 * Named budget ledgers in the PostgreSQL ops schema: a `cairn_budget_ledgers`
 * row per ledger and a `cairn_budget_entries` row per reservation, keyed
 * (ledger, entry_id), shared by every worker on the database.
 *
 * Every write (an admission, a settle, a restore) is one transaction that
 * first locks its ledger's row (an upsert, so the first admission creates
 * it). Under that lock an admission reads the ledger's totals, decides with
 * the shared rule (`decideAdmission`) and inserts the reservation, so
 * concurrent admissions on any number of workers are decided one after the
 * other and never together pass a ceiling. A transaction the server aborts
 * with a serialization failure or a deadlock (40001, 40P01) is tried again a
 * few times; one that keeps meeting it is the transient
 * `budget_admission_conflict`.
 */
import type { PoolClient } from 'pg';
import { BudgetError } from '../../errors/index.js';
import { decideAdmission, settled } from '../../policy/ledger.js';
import type { AdmitResult, BudgetLedger, LedgerEntry } from '../../policy/types.js';
import { checkLedgerName, groupedEntries, toEntry, type BudgetStore, type EntryRow, type LedgerGroup } from '../budgets-kit.js';
import type { OpsTables } from './migrations.js';
import type { Db } from './sql.js';

/** Tries of a transaction the server aborted with 40001 or 40P01. */
const TRIES = 4;
const CONFLICTS = new Set(['40001', '40P01']);

/** The SQLSTATE of a driver error, or of the driver error a store error wraps. */
function sqlState(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 3; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function createPostgresBudgets(db: Db, t: OpsTables): BudgetStore {
  const columns = `entry_id, scope, run_id, model, status, estimate_usd, estimate_tokens::float8 AS estimate_tokens, usd, tokens::float8 AS tokens, at`;
  const lock = `INSERT INTO ${t.budgetLedgers} (name, created_at, updated_at) VALUES ($1, now(), now())
ON CONFLICT (name) DO UPDATE SET updated_at = EXCLUDED.updated_at`;
  const one = `SELECT ${columns} FROM ${t.budgetEntries} WHERE ledger = $1 AND entry_id = $2`;
  const groups = `SELECT scope, status, usd IS NULL AS unpriced, sum(coalesce(usd, 0))::float8 AS usd, sum(tokens)::float8 AS tokens
FROM ${t.budgetEntries} WHERE ledger = $1 AND status <> 'released' GROUP BY scope, status, usd IS NULL`;
  const insert = `INSERT INTO ${t.budgetEntries} (ledger, entry_id, scope, run_id, model, status, estimate_usd, estimate_tokens, usd, tokens, at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (ledger, entry_id) DO NOTHING`;
  const update = `UPDATE ${t.budgetEntries} SET status = $3, usd = $4, tokens = $5 WHERE ledger = $1 AND entry_id = $2`;
  // Entries under a scope: the scope itself or any below it (starts_with: a scope may hold LIKE's wildcards).
  const all = `SELECT ${columns} FROM ${t.budgetEntries} WHERE ledger = $1 AND ($2::text IS NULL OR scope = $2 OR starts_with(scope, $2 || '/'))
ORDER BY at, entry_id`;

  const insertEntry = (client: PoolClient, ledger: string, e: LedgerEntry) => client.query(insert, [
    ledger, e.id, e.scope, e.runId, e.model, e.status, e.estimate.usd, e.estimate.tokens, e.usd, e.tokens, e.at,
  ]);

  /** One write transaction under the ledger's row lock, tried again on a serialization failure or deadlock. */
  async function locked<T>(ledger: string, what: string, body: (client: PoolClient) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await db.transaction(`${what} budget ledger ${ledger}`, 'BEGIN ISOLATION LEVEL READ COMMITTED', async (client) => {
          await client.query(lock, [ledger]);
          return body(client);
        });
      } catch (error) {
        const state = sqlState(error);
        if (state === undefined || !CONFLICTS.has(state)) throw error;
        if (attempt >= TRIES) {
          throw new BudgetError('budget_admission_conflict', `${what} budget ledger ${ledger} kept meeting a serialization conflict (${state}); try again.`, {
            cause: (error as { cause?: unknown }).cause ?? error,
          });
        }
        // A short, growing, jittered pause, so the transactions that collided do not collide again.
        await sleep(Math.random() * 10 * 2 ** attempt);
      }
    }
  }

  return {
    ledger(name) {
      checkLedgerName(name);
      const ledger: BudgetLedger = {
        name,
        // Each admission is committed to the store's own table before it returns.
        durable: true,
        admit(request) {
          return locked(name, 'Admitting to', async (client): Promise<AdmitResult> => {
            const held = (await client.query<EntryRow>(one, [name, request.id])).rows[0];
            if (held) return { admitted: true, entry: toEntry(held) };
            const decision = decideAdmission(groupedEntries((await client.query<LedgerGroup>(groups, [name])).rows), request);
            if (decision.admitted) await insertEntry(client, name, decision.entry);
            return decision;
          });
        },
        async settle(id, outcome) {
          await locked(name, 'Settling in', async (client) => {
            const row = (await client.query<EntryRow>(one, [name, id])).rows[0];
            if (!row) return;
            const before = toEntry(row);
            const after = settled(before, outcome);
            if (after !== before) await client.query(update, [name, id, after.status, after.usd, after.tokens]);
          });
        },
        async entries(scope) {
          const rows = await db.query<EntryRow>(`Reading budget ledger ${name}`, all, [name, scope ?? null]);
          return rows.map(toEntry);
        },
        async restore(entries) {
          if (entries.length === 0) return;
          await locked(name, 'Restoring', async (client) => {
            for (const entry of entries) await insertEntry(client, name, entry);
          });
        },
      };
      return ledger;
    },
  };
}

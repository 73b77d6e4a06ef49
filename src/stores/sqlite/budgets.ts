/**
 * Named budget ledgers in the SQLite ops file: one `cairn_budget_entries` row
 * per reservation, keyed (ledger, entry_id), for every process on the file.
 *
 * An admission is one IMMEDIATE transaction: the write lock is taken before
 * the ledger's totals are read, so reading them, deciding with the shared
 * rule (`decideAdmission`) and inserting the reservation is one step no other
 * connection can come between. Two workers can therefore never admit more
 * than a ceiling together. A settle, a restore and the resume's holds take the
 * same lock. A lock that stays busy past the busy timeout (and a few tries
 * more) is the transient `budget_admission_conflict`.
 */
import type Database from 'better-sqlite3';
import { BudgetError, CairnTypeError } from '../../errors/index.js';
import { decideAdmission, inScope, settled } from '../../policy/ledger.js';
import type { AdmitRequest, AdmitResult, BudgetLedger, LedgerEntry, SettleOutcome } from '../../policy/types.js';
import { checkLedgerName, groupedEntries, toEntry, type BudgetStore, type EntryRow, type LedgerGroup } from '../budgets-kit.js';

/** Tries of a transaction that met SQLITE_BUSY (each after the connection's own busy timeout). */
const TRIES = 3;

const busy = (error: unknown) => {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT' || code === 'SQLITE_LOCKED';
};

export interface SqliteBudgetOptions {
  /** A read-only connection: entries are read, writes are refused. */
  readonly: boolean;
  /** The file has no budget table (a read-only store older than its migration): every ledger is empty. */
  missing: boolean;
}

/** @internal Takes or gives a better-sqlite3 handle, whose types stay out of the published declarations (a user need not install @types/better-sqlite3). */
export function createSqliteBudgets(db: Database.Database, options: SqliteBudgetOptions): BudgetStore {
  const refuse = (what: string) => new CairnTypeError('invalid_options', `The ops store was opened read-only: it cannot ${what} a budget ledger.`);
  if (options.missing) {
    return {
      ledger(name) {
        checkLedgerName(name);
        return {
          name,
          admit: async () => { throw refuse('admit to'); },
          settle: async () => { throw refuse('settle'); },
          restore: async () => { throw refuse('restore'); },
          entries: async () => [],
        };
      },
    };
  }
  const statements = {
    one: db.prepare<[string, string], EntryRow>('SELECT * FROM cairn_budget_entries WHERE ledger = ? AND entry_id = ?'),
    all: db.prepare<[string], EntryRow>('SELECT * FROM cairn_budget_entries WHERE ledger = ? ORDER BY at, entry_id'),
    // The totals the rule needs, grouped: one row per scope, status and whether the amount is priced.
    groups: db.prepare<[string], LedgerGroup>(`SELECT scope, status, usd IS NULL AS unpriced, sum(coalesce(usd, 0)) AS usd, sum(tokens) AS tokens
FROM cairn_budget_entries WHERE ledger = ? AND status <> 'released' GROUP BY scope, status, usd IS NULL`),
    insert: db.prepare<[string, string, string, string | null, string, string, number | null, number, number | null, number, number]>(
      `INSERT INTO cairn_budget_entries (ledger, entry_id, scope, run_id, model, status, estimate_usd, estimate_tokens, usd, tokens, at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (ledger, entry_id) DO NOTHING`),
    update: db.prepare<[string, number | null, number, string, string]>(
      'UPDATE cairn_budget_entries SET status = ?, usd = ?, tokens = ? WHERE ledger = ? AND entry_id = ?'),
  };

  const insert = (ledger: string, e: LedgerEntry) => statements.insert.run(
    ledger, e.id, e.scope, e.runId, e.model, e.status, e.estimate.usd, e.estimate.tokens, e.usd, e.tokens, e.at);

  const admitTx = db.transaction((ledger: string, request: AdmitRequest): AdmitResult => {
    const held = statements.one.get(ledger, request.id);
    if (held) return { admitted: true, entry: toEntry(held) };
    const decision = decideAdmission(groupedEntries(statements.groups.all(ledger)), request);
    if (decision.admitted) insert(ledger, decision.entry);
    return decision;
  });
  const settleTx = db.transaction((ledger: string, id: string, outcome: SettleOutcome) => {
    const row = statements.one.get(ledger, id);
    if (!row) return;
    const before = toEntry(row);
    const after = settled(before, outcome);
    if (after !== before) statements.update.run(after.status, after.usd, after.tokens, ledger, id);
  });
  const restoreTx = db.transaction((ledger: string, entries: readonly LedgerEntry[]) => {
    for (const entry of entries) insert(ledger, entry);
  });

  /** Runs a write transaction under the write lock, trying again while the file stays busy. */
  function write<T>(what: string, run: () => T): T {
    if (options.readonly) throw refuse(what);
    for (let attempt = 1; ; attempt++) {
      try {
        return run();
      } catch (error) {
        if (!busy(error)) throw error;
        if (attempt >= TRIES) {
          throw new BudgetError('budget_admission_conflict', `The budget ledger stayed locked by another connection (${what}); try again.`, { cause: error });
        }
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
        async admit(request) {
          return write('admit to', () => admitTx.immediate(name, request));
        },
        async settle(id, outcome) {
          write('settle', () => settleTx.immediate(name, id, outcome));
        },
        async entries(scope) {
          const rows = statements.all.all(name).map(toEntry);
          return scope === undefined ? rows : rows.filter((e) => inScope(e.scope, scope));
        },
        async restore(entries) {
          write('restore', () => restoreTx.immediate(name, entries));
        },
      };
      return ledger;
    },
  };
}

/**
 * What the SQLite and PostgreSQL budget ledgers share: the `budgets` member's
 * interface, the check of a ledger's name, and the grouped totals a store
 * hands to `decideAdmission` instead of every row.
 */
import { InvalidOptionsError } from '../errors/index.js';
import type { BudgetLedger, EntryStatus, LedgerEntry } from '../policy/types.js';

/**
 * The named budget ledgers of an ops store. Every store object on the same
 * file or database, in any process, sees the same ledger under a name.
 *
 * @example
 * const execution = createExecutionContext({
 *   ledger: ops.budgets.ledger('team-a'),
 *   budget: { usd: 20 },
 *   prices: { 'openai:gpt-5.2': { input: 1.75, output: 14 } },
 * });
 */
export interface BudgetStore {
  /** The ledger of this name: pass it as `ledger` of createExecutionContext. Nothing is written until a run admits. */
  ledger(name: string): BudgetLedger;
}

const NAME_MAX = 200;

export function checkLedgerName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name === '' || name.length > NAME_MAX) {
    throw new InvalidOptionsError(`budgets.ledger: name must be a non-empty string of at most ${NAME_MAX} characters, got ${JSON.stringify(name)}.`);
  }
}

/** One row of a grouped read: the sum of the entries of one scope and status, priced or not. */
export interface LedgerGroup {
  scope: string;
  status: EntryStatus;
  unpriced: number | boolean;
  usd: number | string;
  tokens: number | string;
}

/**
 * Grouped totals as entries: `totalsOf` (and so `decideAdmission`) sums by
 * scope, status and whether an amount is priced, so one stand-in entry per
 * group decides exactly as the rows it sums would.
 */
export function groupedEntries(groups: readonly LedgerGroup[]): LedgerEntry[] {
  return groups.map((g, i) => {
    const unpriced = g.unpriced === true || g.unpriced === 1;
    const usd = unpriced ? null : Number(g.usd);
    const tokens = Number(g.tokens);
    return { id: `group-${i}`, scope: g.scope, runId: null, model: '', status: g.status, estimate: { usd, tokens }, usd, tokens, at: 0 };
  });
}

/** A row of `cairn_budget_entries`, as both stores read it. */
export interface EntryRow {
  entry_id: string;
  scope: string;
  run_id: string | null;
  model: string;
  status: EntryStatus;
  estimate_usd: number | null;
  estimate_tokens: number;
  usd: number | null;
  tokens: number;
  at: number;
}

/** The entry a row holds. */
export const toEntry = (row: EntryRow): LedgerEntry => ({
  id: row.entry_id,
  scope: row.scope,
  runId: row.run_id,
  model: row.model,
  status: row.status,
  estimate: { usd: row.estimate_usd, tokens: row.estimate_tokens },
  usd: row.usd,
  tokens: row.tokens,
  at: row.at,
});

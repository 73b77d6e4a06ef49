/**
 * The budget ledger: reservations of model attempts and the rule that admits
 * them. The rule (`decideAdmission`) is pure, so every ledger (in memory, the
 * SQLite and PostgreSQL stores) admits the same way; each ledger only makes
 * reading the entries and adding one a single atomic step.
 */
import type { AdmitRequest, AdmitResult, Amounts, BudgetLedger, LedgerEntry, LedgerTotals, SettleOutcome } from './types.js';

/** `scope` is `under` or a context below it. */
export function inScope(scope: string, under: string): boolean {
  return scope === under || scope.startsWith(`${under}/`);
}

const zero = (): Amounts => ({ usd: 0, tokens: 0 });

/** The totals of the entries under `scope` (all of them without one). */
export function totalsOf(entries: readonly LedgerEntry[], scope?: string): LedgerTotals {
  const out: LedgerTotals = { committed: zero(), reserved: zero(), unknown: zero() };
  for (const entry of entries) {
    if (scope !== undefined && !inScope(entry.scope, scope)) continue;
    if (entry.status === 'released') continue;
    const bucket = entry.status === 'committed' && entry.usd === null ? out.unknown : out[entry.status];
    bucket.usd += entry.usd ?? 0;
    bucket.tokens += entry.tokens;
  }
  return out;
}

/**
 * Whether `request` fits under every ceiling on its path, given the entries
 * the ledger holds now. A ceiling counts what every entry under its context
 * holds: committed usage, and the estimates of reserved and unknown ones.
 */
export function decideAdmission(entries: readonly LedgerEntry[], request: AdmitRequest): AdmitResult {
  for (const ceiling of request.ceilings) {
    const totals = totalsOf(entries, ceiling.scope);
    const spent = totals.committed;
    const held = { usd: totals.reserved.usd + totals.unknown.usd, tokens: totals.reserved.tokens + totals.unknown.tokens };
    const asked = { usd: request.usd ?? 0, tokens: request.tokens };
    const overUsd = ceiling.usd !== undefined && spent.usd + held.usd + asked.usd > ceiling.usd + 1e-12;
    const overTokens = ceiling.tokens !== undefined && spent.tokens + held.tokens + asked.tokens > ceiling.tokens;
    if (overUsd || overTokens) {
      return {
        admitted: false,
        scope: ceiling.scope,
        ceiling: { ...(ceiling.usd !== undefined ? { usd: ceiling.usd } : {}), ...(ceiling.tokens !== undefined ? { tokens: ceiling.tokens } : {}) },
        spent: round(spent),
        held: round(held),
        asked: round(asked),
      };
    }
  }
  return { admitted: true, entry: entryOf(request) };
}

/** USD to a billionth: sums of float prices come out the same however they were added. */
export const roundUsd = (usd: number): number => Math.round(usd * 1e9) / 1e9;
/** Amounts with their USD rounded (see {@link roundUsd}). */
export const roundAmounts = (a: Amounts): Amounts => ({ usd: roundUsd(a.usd), tokens: a.tokens });
const round = roundAmounts;

export function entryOf(request: AdmitRequest): LedgerEntry {
  return {
    id: request.id,
    scope: request.scope,
    runId: request.runId,
    model: request.model,
    status: 'reserved',
    estimate: { usd: request.usd, tokens: request.tokens },
    usd: request.usd,
    tokens: request.tokens,
    at: request.at,
  };
}

/** The entry an outcome leaves; an entry already settled (committed or released) does not move. */
export function settled(entry: LedgerEntry, outcome: SettleOutcome): LedgerEntry {
  if (entry.status === 'committed' || entry.status === 'released') return entry;
  if (outcome.status === 'committed') return { ...entry, status: 'committed', usd: outcome.usd, tokens: outcome.tokens };
  if (outcome.status === 'released') return { ...entry, status: 'released', usd: 0, tokens: 0 };
  return { ...entry, status: 'unknown' };
}

/** An entry the caller can change without changing the ledger's own. */
const copyOf = (entry: LedgerEntry): LedgerEntry => ({ ...entry, estimate: { ...entry.estimate } });

/**
 * A ledger in this process's memory: the default of a root context. It lives
 * as long as the context; a run that uses it checkpoints it with its record,
 * and a resume restores it from there.
 */
export function createInMemoryLedger(name = 'in-memory'): BudgetLedger {
  const entries = new Map<string, LedgerEntry>();
  return {
    name,
    // It lives as long as this process: the records of the runs that use it keep it.
    durable: false,
    // Synchronous between its awaits: no other admission can read the entries in between.
    async admit(request) {
      const held = entries.get(request.id);
      if (held) return { admitted: true, entry: copyOf(held) };
      const decision = decideAdmission([...entries.values()], request);
      if (decision.admitted) entries.set(request.id, decision.entry);
      return decision.admitted ? { admitted: true, entry: copyOf(decision.entry) } : decision;
    },
    async settle(id, outcome) {
      const entry = entries.get(id);
      if (entry) entries.set(id, settled(entry, outcome));
    },
    async entries(scope) {
      return [...entries.values()].filter((e) => scope === undefined || inScope(e.scope, scope)).map(copyOf);
    },
    async restore(list) {
      for (const entry of list) if (!entries.has(entry.id)) entries.set(entry.id, copyOf(entry));
    },
  };
}

/**
 * What the BudgetLedger conformance cases share: the fixture a backend hands
 * each case, and the requests, entries and checks the cases are written with.
 */
import assert from 'node:assert/strict';
import { decideAdmission, roundAmounts, totalsOf } from '../../policy/ledger.js';
import type { AdmitRequest, AdmitResult, Amounts, BudgetLedger, Ceiling, LedgerEntry, LedgerTotals } from '../../policy/types.js';

/** What `create()` hands one ledger case. */
export interface LedgerFixture {
  /** A ledger holding no entries. Every case gets its own (reset a shared database in `create`). */
  ledger: BudgetLedger;
  /**
   * Another ledger object over the same entries, as another process opens it
   * (`ops.budgets.ledger(name)` of a second store on the same file or
   * database), while `ledger` stays open. When given, the sharing case
   * admits through one and reads through the other, and the race cases admit
   * through several at once.
   */
  reopen?(): Promise<BudgetLedger>;
  /**
   * Closes every object the fixture opened and opens the ledger again on the
   * same data, as a restarted process does. Required when the initializer
   * says `durable: true`: the durability case reads through it.
   */
  restart?(): Promise<BudgetLedger>;
}

export interface LedgerInitializer {
  /** Names the describe block: `BudgetLedger conformance: <name>`. */
  name: string;
  /**
   * Whether the ledger's entries outlive the process (the ops stores' ledgers
   * do, the in-memory one does not). The ledger's `durable` must then be
   * `true`, else false or absent; and when true, the durability case runs.
   * @default false
   */
  durable?: boolean;
  /** Makes the ledger for one case. Called once per case. */
  create(): Promise<LedgerFixture>;
  /** Closes what `create`, `reopen` and `restart` opened. Called after each case, passed or failed. */
  destroy?(fixture: LedgerFixture): Promise<void>;
}

export type Register = (name: string, body: (fixture: LedgerFixture) => Promise<void>) => void;
export type Refusal = Extract<AdmitResult, { admitted: false }>;

export const MODEL = 'openai:gpt-4o';
/** Ledger time of the admissions: ms since the epoch, on the run's clock. */
export const AT = 1_700_000_000_000;

/** An admission request: 0.25 USD and 1000 tokens in `root`, without ceilings, unless told otherwise. */
export const ask = (id: string, over: Partial<AdmitRequest> = {}): AdmitRequest => ({
  id, scope: 'root', runId: 'run-1', model: MODEL, usd: 0.25, tokens: 1000, ceilings: [], at: AT, ...over });
export const rootCeiling = (limits: Omit<Ceiling, 'scope'>): Ceiling[] => [{ scope: 'root', ...limits }];

/** The entry an admission of `request` holds: reserved at its estimate. */
export const reservation = (r: AdmitRequest): LedgerEntry => ({
  id: r.id, scope: r.scope, runId: r.runId, model: r.model, status: 'reserved',
  estimate: { usd: r.usd, tokens: r.tokens }, usd: r.usd, tokens: r.tokens, at: r.at });

/** An entry as the contract sees it: its fields and nothing else. */
export const plain = (e: LedgerEntry): LedgerEntry => ({
  id: e.id, scope: e.scope, runId: e.runId, model: e.model, status: e.status,
  estimate: { usd: e.estimate?.usd, tokens: e.estimate?.tokens } as LedgerEntry['estimate'], usd: e.usd, tokens: e.tokens, at: e.at });
export const byId = (a: LedgerEntry, b: LedgerEntry) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The ledger's entries (under `scope`), as plain entries in id order: the contract says nothing of their order. */
export async function stored(ledger: BudgetLedger, scope?: string): Promise<LedgerEntry[]> {
  return (await ledger.entries(scope)).map(plain).sort(byId);
}

export const amounts = (a: Amounts): Amounts => ({ usd: a.usd, tokens: a.tokens });
/** A refusal as the contract sees it (an admission is handed back as it came, so that it shows in the diff). */
export function refusalOf(result: AdmitResult): AdmitResult {
  if (result.admitted) return result;
  const { usd, tokens } = result.ceiling;
  return {
    admitted: false, scope: result.scope,
    ceiling: { ...(usd !== undefined ? { usd } : {}), ...(tokens !== undefined ? { tokens } : {}) },
    spent: amounts(result.spent), held: amounts(result.held), asked: amounts(result.asked) };
}

/** Admits `request` and checks that it is admitted with the reservation it asked for. */
export async function admits(ledger: BudgetLedger, request: AdmitRequest, what = `admit ${request.id}`): Promise<void> {
  const result = await ledger.admit(request);
  assert.equal(result.admitted, true, `${what}: refused (${JSON.stringify(result)}), though it fits`);
  assert.deepStrictEqual(plain((result as { entry: LedgerEntry }).entry), reservation(request), `${what}: the entry it answered`);
}

/**
 * Admits `request` and checks that it is refused as `decideAdmission` refuses
 * it on the entries the ledger held (and as `expected` says, when given), and
 * that the refusal wrote nothing.
 */
export async function refuses(ledger: BudgetLedger, request: AdmitRequest, expected?: Omit<Refusal, 'admitted'>, what = `admit ${request.id}`): Promise<void> {
  const before = await stored(ledger);
  const rule = decideAdmission(before, request);
  if (expected) assert.deepStrictEqual(rule, { admitted: false, ...expected }, `${what}: the case disagrees with decideAdmission (a bug in the suite)`);
  assert.equal(rule.admitted, false, `${what}: the case expects a refusal decideAdmission does not make (a bug in the suite)`);
  assert.deepStrictEqual(refusalOf(await ledger.admit(request)), rule, `${what}: the refusal`);
  assert.deepStrictEqual(await stored(ledger), before, `${what}: a refused admission changed the entries`);
}

/** Settles `id` and checks the entry it leaves. */
export async function settles(ledger: BudgetLedger, id: string, outcome: Parameters<BudgetLedger['settle']>[1], expected: LedgerEntry): Promise<void> {
  await ledger.settle(id, outcome);
  const entry = (await stored(ledger)).find((e) => e.id === id);
  assert.deepStrictEqual(entry, expected, `settle ${id} ${JSON.stringify(outcome)}`);
}

export const rounded = (t: LedgerTotals): LedgerTotals => ({ committed: roundAmounts(t.committed), reserved: roundAmounts(t.reserved), unknown: roundAmounts(t.unknown) });
/** totalsOf the entries the ledger answers for `scope`, USD to a billionth. */
export async function totals(ledger: BudgetLedger, scope?: string): Promise<LedgerTotals> {
  return rounded(totalsOf(await ledger.entries(scope), scope));
}
export const sum = (committed: [number, number], reserved: [number, number], unknown: [number, number]): LedgerTotals => ({
  committed: { usd: committed[0], tokens: committed[1] }, reserved: { usd: reserved[0], tokens: reserved[1] }, unknown: { usd: unknown[0], tokens: unknown[1] } });

/** Ledger objects over the same data: reopened ones when the backend can, else the fixture's. */
export async function objects({ ledger, reopen }: LedgerFixture, n: number): Promise<BudgetLedger[]> {
  if (!reopen) return Array.from({ length: n }, () => ledger);
  return [ledger, ...(await Promise.all(Array.from({ length: n - 1 }, () => reopen())))];
}

/**
 * The BudgetLedger conformance suite: what an execution context relies on
 * when it admits every model attempt against a ledger (docs/policy.md, "The
 * ledger contract"). The same cases run against the in-memory ledger and the
 * SQLite and PostgreSQL ops stores' `budgets.ledger(name)`, and against yours.
 * A refusal is checked against `decideAdmission` on the entries the ledger
 * held, so a ledger that admits by the shared rule refuses exactly as it does.
 */
import assert from 'node:assert/strict';
import { decideAdmission, roundAmounts, totalsOf } from '../../policy/ledger.js';
import type { AdmitRequest, AdmitResult, Amounts, BudgetLedger, Ceiling, LedgerEntry, LedgerTotals } from '../../policy/types.js';
import { exactlyOneWins } from './assert.js';
import type { ConformanceTestApi } from './types.js';

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

type Register = (name: string, body: (fixture: LedgerFixture) => Promise<void>) => void;
type Refusal = Extract<AdmitResult, { admitted: false }>;

const MODEL = 'openai:gpt-4o';
/** Ledger time of the admissions: ms since the epoch, on the run's clock. */
const AT = 1_700_000_000_000;

/** An admission request: 0.25 USD and 1000 tokens in `root`, without ceilings, unless told otherwise. */
const ask = (id: string, over: Partial<AdmitRequest> = {}): AdmitRequest => ({
  id, scope: 'root', runId: 'run-1', model: MODEL, usd: 0.25, tokens: 1000, ceilings: [], at: AT, ...over,
});
const rootCeiling = (limits: Omit<Ceiling, 'scope'>): Ceiling[] => [{ scope: 'root', ...limits }];

/** The entry an admission of `request` holds: reserved at its estimate. */
const reservation = (r: AdmitRequest): LedgerEntry => ({
  id: r.id, scope: r.scope, runId: r.runId, model: r.model, status: 'reserved',
  estimate: { usd: r.usd, tokens: r.tokens }, usd: r.usd, tokens: r.tokens, at: r.at,
});

/** An entry as the contract sees it: its fields and nothing else. */
const plain = (e: LedgerEntry): LedgerEntry => ({
  id: e.id, scope: e.scope, runId: e.runId, model: e.model, status: e.status,
  estimate: { usd: e.estimate?.usd, tokens: e.estimate?.tokens } as LedgerEntry['estimate'], usd: e.usd, tokens: e.tokens, at: e.at,
});
const byId = (a: LedgerEntry, b: LedgerEntry) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The ledger's entries (under `scope`), as plain entries in id order: the contract says nothing of their order. */
async function stored(ledger: BudgetLedger, scope?: string): Promise<LedgerEntry[]> {
  return (await ledger.entries(scope)).map(plain).sort(byId);
}

const amounts = (a: Amounts): Amounts => ({ usd: a.usd, tokens: a.tokens });
/** A refusal as the contract sees it (an admission is handed back as it came, so that it shows in the diff). */
function refusalOf(result: AdmitResult): AdmitResult {
  if (result.admitted) return result;
  const { usd, tokens } = result.ceiling;
  return {
    admitted: false, scope: result.scope,
    ceiling: { ...(usd !== undefined ? { usd } : {}), ...(tokens !== undefined ? { tokens } : {}) },
    spent: amounts(result.spent), held: amounts(result.held), asked: amounts(result.asked),
  };
}

/** Admits `request` and checks that it is admitted with the reservation it asked for. */
async function admits(ledger: BudgetLedger, request: AdmitRequest, what = `admit ${request.id}`): Promise<void> {
  const result = await ledger.admit(request);
  assert.equal(result.admitted, true, `${what}: refused (${JSON.stringify(result)}), though it fits`);
  assert.deepStrictEqual(plain((result as { entry: LedgerEntry }).entry), reservation(request), `${what}: the entry it answered`);
}

/**
 * Admits `request` and checks that it is refused as `decideAdmission` refuses
 * it on the entries the ledger held (and as `expected` says, when given), and
 * that the refusal wrote nothing.
 */
async function refuses(ledger: BudgetLedger, request: AdmitRequest, expected?: Omit<Refusal, 'admitted'>, what = `admit ${request.id}`): Promise<void> {
  const before = await stored(ledger);
  const rule = decideAdmission(before, request);
  if (expected) assert.deepStrictEqual(rule, { admitted: false, ...expected }, `${what}: the case disagrees with decideAdmission (a bug in the suite)`);
  assert.equal(rule.admitted, false, `${what}: the case expects a refusal decideAdmission does not make (a bug in the suite)`);
  assert.deepStrictEqual(refusalOf(await ledger.admit(request)), rule, `${what}: the refusal`);
  assert.deepStrictEqual(await stored(ledger), before, `${what}: a refused admission changed the entries`);
}

/** Settles `id` and checks the entry it leaves. */
async function settles(ledger: BudgetLedger, id: string, outcome: Parameters<BudgetLedger['settle']>[1], expected: LedgerEntry): Promise<void> {
  await ledger.settle(id, outcome);
  const entry = (await stored(ledger)).find((e) => e.id === id);
  assert.deepStrictEqual(entry, expected, `settle ${id} ${JSON.stringify(outcome)}`);
}

const rounded = (t: LedgerTotals): LedgerTotals => ({ committed: roundAmounts(t.committed), reserved: roundAmounts(t.reserved), unknown: roundAmounts(t.unknown) });
/** totalsOf the entries the ledger answers for `scope`, USD to a billionth. */
async function totals(ledger: BudgetLedger, scope?: string): Promise<LedgerTotals> {
  return rounded(totalsOf(await ledger.entries(scope), scope));
}
const sum = (committed: [number, number], reserved: [number, number], unknown: [number, number]): LedgerTotals => ({
  committed: { usd: committed[0], tokens: committed[1] }, reserved: { usd: reserved[0], tokens: reserved[1] }, unknown: { usd: unknown[0], tokens: unknown[1] },
});

/**
 * Registers the BudgetLedger conformance cases with your test framework.
 * Each case gets a fresh ledger from `initializer.create()`.
 *
 * @example
 * ```ts
 * import { describe, it } from 'vitest';
 * import { createInMemoryLedger } from 'cairn/policy';
 * import { defineLedgerConformance } from 'cairn/testing';
 *
 * defineLedgerConformance({ name: 'in-memory', create: async () => ({ ledger: createInMemoryLedger() }) }, { describe, it });
 * ```
 */
export function defineLedgerConformance(initializer: LedgerInitializer, api: ConformanceTestApi): void {
  const register: Register = (name, body) => {
    api.it(name, async () => {
      const fixture = await initializer.create();
      try {
        await body(fixture);
      } finally {
        await initializer.destroy?.(fixture);
      }
    });
  };

  api.describe(`BudgetLedger conformance: ${initializer.name}`, () => {
    api.describe('admission', () => registerAdmissionCases(register));
    api.describe('replayed ids', () => registerReplayCases(register));
    api.describe('settle', () => registerSettleCases(register));
    api.describe('entries, totals and restore', () => registerEntryCases(register));
    api.describe('concurrency', () => registerRaceCases(register));
    api.describe('sharing and durability', () => registerSharingCases(register, initializer));
  });
}

function registerAdmissionCases(register: Register): void {
  register('admits under a USD ceiling up to it exactly; the refusal names the scope, the ceiling, spent, held and asked', async ({ ledger }) => {
    const ceilings = rootCeiling({ usd: 1 });
    for (const id of ['u1', 'u2', 'u3', 'u4']) await admits(ledger, ask(id, { ceilings }));
    await refuses(ledger, ask('u5', { ceilings }), {
      scope: 'root', ceiling: { usd: 1 }, spent: { usd: 0, tokens: 0 }, held: { usd: 1, tokens: 4000 }, asked: { usd: 0.25, tokens: 1000 },
    });
    await ledger.settle('u1', { status: 'committed', usd: 0.125, tokens: 600 });
    await refuses(ledger, ask('u5', { ceilings }), {
      scope: 'root', ceiling: { usd: 1 }, spent: { usd: 0.125, tokens: 600 }, held: { usd: 0.75, tokens: 3000 }, asked: { usd: 0.25, tokens: 1000 },
    });
    await admits(ledger, ask('u6', { usd: 0.125, ceilings }), 'an ask that fills what the commit gave back');
    await refuses(ledger, ask('u7', { usd: 0.001, tokens: 1, ceilings }));
  });

  register('admits under a token ceiling the same way, and decimal USD that fill a ceiling exactly', async ({ ledger }) => {
    const ceilings = rootCeiling({ tokens: 10_000 });
    for (const id of ['t1', 't2', 't3']) await admits(ledger, ask(id, { tokens: 3000, ceilings }));
    await refuses(ledger, ask('t4', { tokens: 3000, ceilings }), {
      scope: 'root', ceiling: { tokens: 10_000 }, spent: { usd: 0, tokens: 0 }, held: { usd: 0.75, tokens: 9000 }, asked: { usd: 0.25, tokens: 3000 },
    });
    await admits(ledger, ask('t5', { tokens: 1000, ceilings }), 'an ask that fills the token ceiling');
    await refuses(ledger, ask('t6', { usd: 0, tokens: 1, ceilings }));
    // 0.1 + 0.1 + 0.1 is 0.30000000000000004 in floating point: it still fills a ceiling of 0.3.
    const decimal = [{ scope: 'root/d', usd: 0.3 }];
    for (const id of ['d1', 'd2', 'd3']) await admits(ledger, ask(id, { scope: 'root/d', usd: 0.1, ceilings: decimal }));
    await refuses(ledger, ask('d4', { scope: 'root/d', usd: 0.000001, ceilings: decimal }));
  });

  register('a ceiling of both units refuses when either would be passed', async ({ ledger }) => {
    const ceilings = rootCeiling({ usd: 1, tokens: 5000 });
    await admits(ledger, ask('b1', { tokens: 4000, ceilings }));
    await refuses(ledger, ask('b2', { tokens: 2000, ceilings }), {
      scope: 'root', ceiling: { usd: 1, tokens: 5000 }, spent: { usd: 0, tokens: 0 }, held: { usd: 0.25, tokens: 4000 }, asked: { usd: 0.25, tokens: 2000 },
    }, 'an ask past the tokens only');
    await refuses(ledger, ask('b3', { usd: 0.875, tokens: 500, ceilings }), undefined, 'an ask past the USD only');
    await admits(ledger, ask('b4', { usd: 0.75, ceilings }), 'an ask that fills both');
  });

  register('nested ceilings: a child\'s refuses while its parent has room, the parent\'s refuses children together', async ({ ledger }) => {
    const pathA = [{ scope: 'root', usd: 1 }, { scope: 'root/a', usd: 0.5 }];
    const pathB = [{ scope: 'root', usd: 1 }, { scope: 'root/b', usd: 0.75 }];
    await admits(ledger, ask('a1', { scope: 'root/a', ceilings: pathA }));
    await admits(ledger, ask('a2', { scope: 'root/a', ceilings: pathA }));
    await refuses(ledger, ask('a3', { scope: 'root/a', ceilings: pathA }), {
      scope: 'root/a', ceiling: { usd: 0.5 }, spent: { usd: 0, tokens: 0 }, held: { usd: 0.5, tokens: 2000 }, asked: { usd: 0.25, tokens: 1000 },
    }, 'the child ceiling, with the root at half');
    await admits(ledger, ask('b1', { scope: 'root/b', ceilings: pathB }));
    await admits(ledger, ask('b2', { scope: 'root/b', ceilings: pathB }));
    await refuses(ledger, ask('b3', { scope: 'root/b', ceilings: pathB }), {
      scope: 'root', ceiling: { usd: 1 }, spent: { usd: 0, tokens: 0 }, held: { usd: 1, tokens: 4000 }, asked: { usd: 0.25, tokens: 1000 },
    }, 'the root ceiling, with root/b at two thirds');
    await refuses(ledger, ask('r1', { ceilings: rootCeiling({ usd: 1 }) }), undefined, 'an ask in the root itself');
    // A grandchild counts under both ceilings above it; when both are full the first on the path (the root) refuses.
    await ledger.settle('a1', { status: 'released' });
    const pathX = [...pathA, { scope: 'root/a/x', usd: 0.25 }];
    await admits(ledger, ask('x1', { scope: 'root/a/x', ceilings: pathX }));
    await refuses(ledger, ask('x2', { scope: 'root/a/x', usd: 0.001, ceilings: pathX }), {
      scope: 'root', ceiling: { usd: 1 }, spent: { usd: 0, tokens: 0 }, held: { usd: 1, tokens: 4000 }, asked: { usd: 0.001, tokens: 1000 },
    }, 'a grandchild under three full ceilings');
  });

  register('a ceiling counts its own scope and those below it, not its parent, siblings or scopes that only start alike', async ({ ledger }) => {
    for (const scope of ['root', 'root/a/deep', 'root/ab', 'root/a-b', 'other']) await admits(ledger, ask(scope, { scope, usd: scope === 'root/a/deep' ? 0.25 : 0.5 }));
    const childOnly = [{ scope: 'root/a', usd: 0.5 }];
    await admits(ledger, ask('a1', { scope: 'root/a', ceilings: childOnly }));
    await refuses(ledger, ask('a2', { scope: 'root/a', usd: 0.125, ceilings: childOnly }), {
      scope: 'root/a', ceiling: { usd: 0.5 }, spent: { usd: 0, tokens: 0 }, held: { usd: 0.5, tokens: 2000 }, asked: { usd: 0.125, tokens: 1000 },
    });
    const ceilings = rootCeiling({ usd: 2.5 });
    await admits(ledger, ask('r1', { usd: 0.5, ceilings }));
    await refuses(ledger, ask('r2', { usd: 0.125, ceilings }), {
      scope: 'root', ceiling: { usd: 2.5 }, spent: { usd: 0, tokens: 0 }, held: { usd: 2.5, tokens: 6000 }, asked: { usd: 0.125, tokens: 1000 },
    }, 'the root, which does not count `other`');
    await admits(ledger, ask('huge', { scope: 'other', usd: 1e6, tokens: 1e9 }), 'an ask without ceilings');
  });

  register('a refused admission holds nothing: its id is decided anew once there is room', async ({ ledger }) => {
    const ceilings = rootCeiling({ tokens: 2000 });
    await admits(ledger, ask('x1', { ceilings }));
    await admits(ledger, ask('x2', { ceilings }));
    await refuses(ledger, ask('late', { ceilings }));
    assert.equal((await stored(ledger)).some((e) => e.id === 'late'), false, 'a refused id is held');
    await ledger.settle('x1', { status: 'released' });
    await admits(ledger, ask('late', { usd: 0.125, ceilings }), 'the refused id, once x1 was released');
  });

  register('an unpriced ask (usd null) passes a USD ceiling and counts under a token ceiling', async ({ ledger }) => {
    const ceilings = rootCeiling({ usd: 0.5, tokens: 10_000 });
    await admits(ledger, ask('p1', { usd: 0.5, tokens: 2000, ceilings }));
    await admits(ledger, ask('n1', { usd: null, tokens: 3000, ceilings }), 'an unpriced ask under a full USD ceiling');
    await refuses(ledger, ask('p2', { usd: 0.125, tokens: 100, ceilings }), {
      scope: 'root', ceiling: { usd: 0.5, tokens: 10_000 }, spent: { usd: 0, tokens: 0 }, held: { usd: 0.5, tokens: 5000 }, asked: { usd: 0.125, tokens: 100 },
    });
    await refuses(ledger, ask('n2', { usd: null, tokens: 6000, ceilings }), {
      scope: 'root', ceiling: { usd: 0.5, tokens: 10_000 }, spent: { usd: 0, tokens: 0 }, held: { usd: 0.5, tokens: 5000 }, asked: { usd: 0, tokens: 6000 },
    }, 'an unpriced ask past the tokens');
    await admits(ledger, ask('n3', { usd: null, tokens: 5000, ceilings }));
    await settles(ledger, 'n1', { status: 'committed', usd: null, tokens: 2500 }, { ...reservation(ask('n1', { usd: null, tokens: 3000 })), status: 'committed', usd: null, tokens: 2500 });
    // A committed call without a price counts as unknown: its tokens, no USD.
    assert.deepStrictEqual(await totals(ledger), sum([0, 0], [0.5, 7000], [0, 2500]));
  });
}

function registerReplayCases(register: Register): void {
  register('an id the ledger holds answers its entry and reserves nothing more, even when it would no longer fit', async ({ ledger }) => {
    const ceilings = rootCeiling({ usd: 0.5 });
    const x = ask('x', { ceilings });
    await admits(ledger, x);
    await admits(ledger, x, 'the same admission again');
    const other = ask('x', { scope: 'root/other', runId: 'run-2', model: 'anthropic:claude', usd: 0.5, tokens: 9, at: AT + 5, ceilings });
    const replayed = await ledger.admit(other);
    assert.deepStrictEqual(replayed.admitted && plain(replayed.entry), reservation(x), 'a replay under other amounts must answer the held entry');
    assert.deepStrictEqual(await totals(ledger), sum([0, 0], [0.25, 1000], [0, 0]), 'a replay counted twice');
    await admits(ledger, ask('y', { ceilings }));
    await admits(ledger, x, 'a replay past the ceiling');
    await admits(ledger, { ...x, ceilings: rootCeiling({ usd: 0.01, tokens: 1 }) }, 'a replay under a ceiling it never fit');
    assert.deepStrictEqual((await stored(ledger)).map((e) => e.id), ['x', 'y']);
    assert.deepStrictEqual(await totals(ledger), sum([0, 0], [0.5, 2000], [0, 0]));
  });

  register('a settled id answers its settled entry: committed, unknown or released', async ({ ledger }) => {
    const ceilings = rootCeiling({ usd: 1 });
    for (const id of ['c', 'u', 'r']) await admits(ledger, ask(id, { ceilings }));
    await ledger.settle('c', { status: 'committed', usd: 0.125, tokens: 500 });
    await ledger.settle('u', { status: 'unknown' });
    await ledger.settle('r', { status: 'released' });
    const before = await stored(ledger);
    for (const entry of before) {
      const result = await ledger.admit(ask(entry.id, { ceilings }));
      assert.deepStrictEqual(result.admitted && plain(result.entry), entry, `a replay of the ${entry.status} ${entry.id}`);
    }
    assert.deepStrictEqual(await stored(ledger), before, 'a replay changed a settled entry');
  });
}

function registerSettleCases(register: Register): void {
  register('committed counts what the call used (above its estimate too), and keeps the estimate', async ({ ledger }) => {
    const ceilings = rootCeiling({ usd: 1 });
    await admits(ledger, ask('a', { usd: 0.5, tokens: 2000, ceilings }));
    const a = reservation(ask('a', { usd: 0.5, tokens: 2000 }));
    await settles(ledger, 'a', { status: 'committed', usd: 0.125, tokens: 800 }, { ...a, status: 'committed', usd: 0.125, tokens: 800 });
    await admits(ledger, ask('b', { usd: 0.875, ceilings }), 'what the commit gave back');
    await refuses(ledger, ask('c', { usd: 0.001, ceilings }));
    await admits(ledger, ask('o', { scope: 'elsewhere' }));
    await settles(ledger, 'o', { status: 'committed', usd: 0.75, tokens: 3000 }, { ...reservation(ask('o', { scope: 'elsewhere' })), status: 'committed', usd: 0.75, tokens: 3000 });
    assert.deepStrictEqual(await totals(ledger), sum([0.875, 3800], [0.875, 1000], [0, 0]));
  });

  register('unknown keeps the estimate held, and the entry stays open to a commit or a release', async ({ ledger }) => {
    const ceilings = rootCeiling({ usd: 1 });
    for (const id of ['a', 'b']) await admits(ledger, ask(id, { usd: 0.5, ceilings }));
    const held = (id: string) => ({ ...reservation(ask(id, { usd: 0.5 })), status: 'unknown' as const });
    await settles(ledger, 'a', { status: 'unknown' }, held('a'));
    await settles(ledger, 'a', { status: 'unknown' }, held('a'));
    await refuses(ledger, ask('c', { usd: 0.125, ceilings }), {
      scope: 'root', ceiling: { usd: 1 }, spent: { usd: 0, tokens: 0 }, held: { usd: 1, tokens: 2000 }, asked: { usd: 0.125, tokens: 1000 },
    }, 'under an unknown hold');
    assert.deepStrictEqual(await totals(ledger), sum([0, 0], [0.5, 1000], [0.5, 1000]));
    await settles(ledger, 'a', { status: 'committed', usd: 0.25, tokens: 700 }, { ...held('a'), status: 'committed', usd: 0.25, tokens: 700 });
    await settles(ledger, 'b', { status: 'unknown' }, held('b'));
    await settles(ledger, 'b', { status: 'released' }, { ...held('b'), status: 'released', usd: 0, tokens: 0 });
    await admits(ledger, ask('c', { usd: 0.75, ceilings }), 'what the commit and the release gave back');
  });

  register('released gives the hold back: the entry counts nothing and keeps its estimate', async ({ ledger }) => {
    const ceilings = rootCeiling({ usd: 1, tokens: 2000 });
    for (const id of ['a', 'b']) await admits(ledger, ask(id, { usd: 0.5, ceilings }));
    await refuses(ledger, ask('c', { usd: 0.5, ceilings }));
    await settles(ledger, 'a', { status: 'released' }, { ...reservation(ask('a', { usd: 0.5 })), status: 'released', usd: 0, tokens: 0 });
    assert.deepStrictEqual(await totals(ledger), sum([0, 0], [0.5, 1000], [0, 0]));
    await admits(ledger, ask('c', { usd: 0.5, ceilings }), 'into the released room');
  });

  register('a committed or a released entry does not move, whatever settles it again', async ({ ledger }) => {
    for (const id of ['c', 'r']) await admits(ledger, ask(id));
    const c = { ...reservation(ask('c')), status: 'committed' as const, usd: 0.125, tokens: 400 };
    const r = { ...reservation(ask('r')), status: 'released' as const, usd: 0, tokens: 0 };
    await settles(ledger, 'c', { status: 'committed', usd: 0.125, tokens: 400 }, c);
    await settles(ledger, 'r', { status: 'released' }, r);
    for (const outcome of [{ status: 'committed', usd: 0.5, tokens: 9999 }, { status: 'committed', usd: null, tokens: 1 }, { status: 'unknown' }, { status: 'released' }] as const) {
      await settles(ledger, 'c', outcome, c);
      await settles(ledger, 'r', outcome, r);
    }
  });

  register('settling an id the ledger does not hold changes nothing and does not throw', async ({ ledger }) => {
    await admits(ledger, ask('a'));
    for (const outcome of [{ status: 'committed', usd: 0.5, tokens: 10 }, { status: 'unknown' }, { status: 'released' }] as const) {
      for (const id of ['missing', 'A', 'a ', 'a/x']) await ledger.settle(id, outcome);
    }
    assert.deepStrictEqual(await stored(ledger), [reservation(ask('a'))]);
  });
}

function registerEntryCases(register: Register): void {
  register('entries(scope) are those of the scope and below it: root/a/b under root/a, never root/ab', async ({ ledger }) => {
    const scopes = ['root', 'root/a', 'root/a/b', 'root/a/b/c', 'root/ab', 'root/a-b', 'root/a_b', 'root/aXb', 'rootx', 'other'];
    const requests = scopes.map((scope, i) => ask(`e${i}`, { scope, runId: i % 2 ? null : `run-${i}`, at: AT + i, usd: i === 3 ? null : 0.25 }));
    for (const request of requests) await admits(ledger, request);
    const under = (...names: string[]) => requests.filter((r) => names.includes(r.scope)).map(reservation).sort(byId);
    assert.deepStrictEqual(await stored(ledger), requests.map(reservation).sort(byId), 'entries() must be every entry');
    assert.deepStrictEqual(await stored(ledger, 'root/a'), under('root/a', 'root/a/b', 'root/a/b/c'), 'entries(root/a)');
    assert.deepStrictEqual(await stored(ledger, 'root/a/b'), under('root/a/b', 'root/a/b/c'), 'entries(root/a/b)');
    assert.deepStrictEqual(await stored(ledger, 'root/a_b'), under('root/a_b'), 'entries(root/a_b): `_` is no wildcard');
    assert.deepStrictEqual(await stored(ledger, 'root'), under(...scopes.slice(0, 8)), 'entries(root)');
    for (const none of ['nope', 'roo', 'root/', 'root/a/b/c/d', 'ROOT']) assert.deepStrictEqual(await stored(ledger, none), [], `entries(${none})`);
  });

  register('totalsOf the entries adds up: committed, reserved, unknown with unpriced commits, released left out', async ({ ledger }) => {
    const entries: Array<[string, string, number | null, Parameters<BudgetLedger['settle']>[1] | null]> = [
      ['r1', 'root/a', 0.25, null], ['c1', 'root/a', 0.25, { status: 'committed', usd: 0.125, tokens: 400 }], ['u1', 'root/a', 0.25, { status: 'unknown' }],
      ['x1', 'root/a/x', 0.5, { status: 'released' }], ['n1', 'root/a/x', null, null], ['nc', 'root/a', null, { status: 'committed', usd: null, tokens: 300 }],
      ['c2', 'root/b', 0.5, { status: 'committed', usd: 0.5, tokens: 2000 }], ['r2', 'other', 0.25, null],
    ];
    for (const [id, scope, usd, outcome] of entries) {
      await admits(ledger, ask(id, { scope, usd, tokens: usd === null ? 500 : 1000 }));
      if (outcome) await ledger.settle(id, outcome);
    }
    assert.deepStrictEqual(await totals(ledger, 'root/a'), sum([0.125, 400], [0.25, 1500], [0.25, 1300]), 'totals under root/a');
    assert.deepStrictEqual(await totals(ledger, 'root/a/x'), sum([0, 0], [0, 500], [0, 0]), 'totals under root/a/x');
    assert.deepStrictEqual(await totals(ledger, 'root'), sum([0.625, 2400], [0.25, 1500], [0.25, 1300]), 'totals under root');
    assert.deepStrictEqual(await totals(ledger), sum([0.625, 2400], [0.5, 2500], [0.25, 1300]), 'totals of the ledger');
    // A ceiling sees the same totals: committed as spent, reserved and unknown as held.
    await refuses(ledger, ask('t', { scope: 'root/a', usd: 0, tokens: 1, ceilings: [{ scope: 'root/a', tokens: 3200 }] }), {
      scope: 'root/a', ceiling: { tokens: 3200 }, spent: { usd: 0.125, tokens: 400 }, held: { usd: 0.5, tokens: 2800 }, asked: { usd: 0, tokens: 1 },
    });
  });

  register('restore adds every entry it does not hold, as given, and keeps those it holds as they are', async ({ ledger }) => {
    const record: LedgerEntry[] = [
      { ...reservation(ask('k1', { scope: 'root/a', runId: null, at: AT - 5 })) },
      { ...reservation(ask('k2', { usd: 0.5, tokens: 2000 })), status: 'committed', usd: 0.375, tokens: 2500 },
      { ...reservation(ask('k3', { scope: 'root/a/b' })), status: 'unknown' },
      { ...reservation(ask('k4')), status: 'released', usd: 0, tokens: 0 },
      { ...reservation(ask('k5', { usd: null, model: 'local:llama' })), status: 'committed', usd: null, tokens: 300 },
    ];
    await ledger.restore([]);
    assert.deepStrictEqual(await stored(ledger), [], 'restore([]) added something');
    await ledger.restore(record.slice(0, 3));
    assert.deepStrictEqual(await stored(ledger), record.slice(0, 3).sort(byId), 'restore into an empty ledger');
    // The ledger moved on since the record was written: k1 was committed. Its older copy must not undo that.
    await ledger.settle('k1', { status: 'committed', usd: 0.125, tokens: 100 });
    const k1 = { ...record[0]!, status: 'committed' as const, usd: 0.125, tokens: 100 };
    await admits(ledger, ask('k6'));
    await ledger.restore([...record, { ...reservation(ask('k6', { usd: 0.75 })), status: 'unknown' }]);
    await ledger.restore(record);
    assert.deepStrictEqual(await stored(ledger), [k1, ...record.slice(1), reservation(ask('k6'))].sort(byId), 'restore over held entries');
  });

  register('restored entries count under the ceilings of later admissions, and their ids replay', async ({ ledger }) => {
    await ledger.restore([
      reservation(ask('h1', { scope: 'root/a', usd: 0.5 })),
      { ...reservation(ask('h2', { scope: 'root/a' })), status: 'unknown' },
      { ...reservation(ask('h3', { usd: 0.5 })), status: 'released', usd: 0, tokens: 0 },
      { ...reservation(ask('h4')), status: 'committed', usd: 0.125, tokens: 200 },
    ]);
    const ceilings = rootCeiling({ usd: 1 });
    await refuses(ledger, ask('n1', { ceilings }), {
      scope: 'root', ceiling: { usd: 1 }, spent: { usd: 0.125, tokens: 200 }, held: { usd: 0.75, tokens: 2000 }, asked: { usd: 0.25, tokens: 1000 },
    });
    await admits(ledger, ask('n2', { usd: 0.125, ceilings }), 'an ask that fills what the restored entries left');
    const replay = await ledger.admit(ask('h2', { ceilings }));
    assert.deepStrictEqual(replay.admitted && plain(replay.entry), { ...reservation(ask('h2', { scope: 'root/a' })), status: 'unknown' }, 'a replay of a restored id');
  });
}

/** Ledger objects over the same data: reopened ones when the backend can, else the fixture's. */
async function objects({ ledger, reopen }: LedgerFixture, n: number): Promise<BudgetLedger[]> {
  if (!reopen) return Array.from({ length: n }, () => ledger);
  return [ledger, ...(await Promise.all(Array.from({ length: n - 1 }, () => reopen())))];
}

function registerRaceCases(register: Register): void {
  register('concurrent admits never pass a ceiling: exactly floor(ceiling / ask) are admitted, in tokens and in USD', async (fixture) => {
    const ledgers = await objects(fixture, 4);
    for (const { unit, ceiling, each, n, scope } of [
      { unit: 'tokens', ceiling: 1000, each: 70, n: 24, scope: 'root/t' },
      { unit: 'usd', ceiling: 1, each: 0.15, n: 20, scope: 'root/u' },
    ] as const) {
      const ceilings = [{ scope, [unit]: ceiling }];
      const requests = Array.from({ length: n }, (_, i) => ask(`${unit}-${i}`, { scope, [unit]: each, ceilings }));
      const results = await Promise.all(requests.map((r, i) => ledgers[i % ledgers.length]!.admit(r)));
      const admitted = results.filter((r) => r.admitted).length;
      assert.equal(admitted, Math.floor(ceiling / each), `${n} concurrent asks of ${each} ${unit} under ${ceiling}: ${admitted} admitted`);
      assert.equal((await stored(fixture.ledger, scope)).length, admitted, `the ledger holds another number of ${unit} entries than it admitted`);
      const held = (await totals(fixture.ledger, scope)).reserved[unit];
      assert.ok(held <= ceiling + 1e-12, `${held} ${unit} held under a ceiling of ${ceiling}`);
      for (const r of results) if (!r.admitted) assert.equal(r.scope, scope);
    }
  });

  register('concurrent admits in two children: each child\'s ceiling and their parent\'s hold together', async (fixture) => {
    const ledgers = await objects(fixture, 4);
    const path = (child: string) => [{ scope: 'root', tokens: 1000 }, { scope: `root/${child}`, tokens: 600 }];
    const requests = Array.from({ length: 20 }, (_, i) => {
      const child = i % 2 ? 'a' : 'b';
      return ask(`n-${i}`, { scope: `root/${child}`, tokens: 100, ceilings: path(child) });
    });
    const results = await Promise.all(requests.map((r, i) => ledgers[(i >> 1) % ledgers.length]!.admit(r)));
    assert.equal(results.filter((r) => r.admitted).length, 10, 'the parent ceiling admits exactly 10 asks of 100 under 1000');
    for (const child of ['a', 'b']) {
      const tokens = (await totals(fixture.ledger, `root/${child}`)).reserved.tokens;
      assert.ok(tokens >= 400 && tokens <= 600, `root/${child} holds ${tokens} tokens under its ceiling of 600 (and its sibling at most 600)`);
    }
    assert.equal((await totals(fixture.ledger, 'root')).reserved.tokens, 1000);
  });

  register('of concurrent asks that each fill the ceiling alone, exactly one is admitted', async (fixture) => {
    const ledgers = await objects(fixture, 6);
    const ceilings = rootCeiling({ tokens: 500 });
    const { value, losers } = await exactlyOneWins(
      ledgers.map((l, i) => l.admit(ask(`w-${i}`, { tokens: 500, ceilings })).then((r) => (r.admitted ? r : Promise.reject(r)))),
      'asks of the whole ceiling',
    );
    assert.deepStrictEqual((await stored(fixture.ledger)).map((e) => e.id), [value.admitted && value.entry.id]);
    for (const loser of losers) {
      assert.deepStrictEqual(refusalOf(loser as AdmitResult), {
        admitted: false, scope: 'root', ceiling: { tokens: 500 }, spent: { usd: 0, tokens: 0 }, held: { usd: 0.25, tokens: 500 }, asked: { usd: 0.25, tokens: 500 },
      }, 'a loser must have been decided on the winner\'s hold');
    }
  });

  register('concurrent admits of one id reserve it once, and all answer its entry', async (fixture) => {
    const ledgers = await objects(fixture, 4);
    const same = ask('same', { tokens: 500, ceilings: rootCeiling({ tokens: 500 }) });
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => ledgers[i % ledgers.length]!.admit(same)));
    for (const [i, result] of results.entries()) {
      assert.deepStrictEqual(result.admitted && plain(result.entry), reservation(same), `admission ${i} of one id`);
    }
    assert.deepStrictEqual(await stored(fixture.ledger), [reservation(same)]);
  });
}

function registerSharingCases(register: Register, initializer: LedgerInitializer): void {
  register(`names itself, and says it is ${initializer.durable ? '' : 'not '}durable`, async (fixture) => {
    const all = [fixture.ledger, ...(fixture.reopen ? [await fixture.reopen()] : [])];
    for (const ledger of all) {
      assert.equal(typeof ledger.name, 'string', 'name must be a string');
      assert.ok(ledger.name.length > 0, 'name must not be empty');
      assert.equal(ledger.name, fixture.ledger.name, 'another object over the same ledger has another name');
      if (initializer.durable) assert.equal(ledger.durable, true, 'the initializer says durable: the ledger must say durable: true');
      else assert.ok(ledger.durable === false || ledger.durable === undefined, `a ledger that is not durable says durable: ${String(ledger.durable)}`);
    }
  });

  register('two objects on the same data see each other\'s admissions, settles and restores at once', async (fixture) => {
    const [a, b] = (await objects(fixture, 2)) as [BudgetLedger, BudgetLedger];
    const ceilings = rootCeiling({ usd: 1 });
    await admits(a, ask('a1', { usd: 0.5, ceilings }));
    assert.deepStrictEqual(await stored(b), [reservation(ask('a1', { usd: 0.5 }))], 'the other object did not see the admission');
    await refuses(b, ask('b1', { usd: 0.75, ceilings }), undefined, 'an ask through the other object, past what the first holds');
    await admits(b, ask('a1', { usd: 0.5, ceilings }), 'a replay through the other object');
    await b.settle('a1', { status: 'committed', usd: 0.25, tokens: 900 });
    assert.deepStrictEqual((await stored(a))[0]?.status, 'committed', 'the first object did not see the settle');
    await admits(a, ask('a2', { usd: 0.75, ceilings }), 'what the other object\'s commit gave back');
    await b.restore([{ ...reservation(ask('r1', { scope: 'root/x' })), status: 'unknown' }]);
    assert.deepStrictEqual(await stored(a, 'root/x'), [{ ...reservation(ask('r1', { scope: 'root/x' })), status: 'unknown' }], 'the first object did not see the restore');
  });

  register('shares no object with its caller: changing what it returned or was given changes nothing held', async (fixture) => {
    const ceilings = rootCeiling({ usd: 1 });
    const request = ask('s1', { usd: 0.5, ceilings });
    const admitted = await fixture.ledger.admit(request);
    assert.ok(admitted.admitted, 'the ask was refused');
    const before = await stored(fixture.ledger);
    admitted.entry.estimate.usd = 0;
    admitted.entry.usd = 0;
    request.usd = 0;
    const replayed = await fixture.ledger.admit(ask('s1', { usd: 0.5, ceilings }));
    assert.ok(replayed.admitted);
    replayed.entry.estimate.tokens = 0;
    const listed = await fixture.ledger.entries();
    listed[0]!.estimate.usd = 0;
    const restored = { ...reservation(ask('s2', { scope: 'root/x' })), status: 'unknown' as const };
    await fixture.ledger.restore([restored]);
    restored.estimate.usd = 0;
    assert.deepStrictEqual(await stored(fixture.ledger, 'root'), [...before, { ...reservation(ask('s2', { scope: 'root/x' })), status: 'unknown' }],
      'a change to an entry the ledger returned or was given reached what it holds');
  });

  if (!initializer.durable) return;
  register('entries, their statuses and their holds survive a restart', async (fixture) => {
    if (!fixture.restart) throw new TypeError(`defineLedgerConformance(${initializer.name}): durable is true, so create() must return restart().`);
    const ceilings = rootCeiling({ usd: 2 });
    for (const [id, scope] of [['k1', 'root'], ['k2', 'root/a'], ['k3', 'root'], ['k4', 'root/a'], ['k5', 'root/a/b']] as const) {
      await admits(fixture.ledger, ask(id, { scope, runId: `run-${id}`, ceilings }));
    }
    await fixture.ledger.settle('k1', { status: 'committed', usd: 0.125, tokens: 300 });
    await fixture.ledger.settle('k2', { status: 'unknown' });
    await fixture.ledger.settle('k3', { status: 'released' });
    // k4 and k5 stay reserved: the worker that admitted them died mid-call.
    const before = await stored(fixture.ledger);
    const after = await fixture.restart();
    assert.deepStrictEqual(await stored(after), before, 'the entries changed across a restart');
    assert.deepStrictEqual(await stored(after, 'root/a'), before.filter((e) => e.scope.startsWith('root/a')));
    await refuses(after, ask('n1', { usd: 1.25, ceilings }), {
      scope: 'root', ceiling: { usd: 2 }, spent: { usd: 0.125, tokens: 300 }, held: { usd: 0.75, tokens: 3000 }, asked: { usd: 1.25, tokens: 1000 },
    }, 'an ask after the restart, past what was held before it');
    await admits(after, ask('n2', { usd: 1.125, ceilings }), 'an ask that fills what was left before the restart');
    const replay = await after.admit(ask('k4', { ceilings }));
    assert.deepStrictEqual(replay.admitted && plain(replay.entry), before.find((e) => e.id === 'k4'), 'a replay after the restart');
    await after.settle('k4', { status: 'unknown' });
    const again = await fixture.restart();
    assert.equal((await stored(again)).find((e) => e.id === 'k4')?.status, 'unknown', 'a settle after a restart was lost by the next');
    assert.equal((await stored(again)).length, 6);
  });
}

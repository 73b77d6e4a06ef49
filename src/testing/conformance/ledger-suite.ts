/**
 * The BudgetLedger conformance suite: what an execution context relies on
 * when it admits every model attempt against a ledger (docs/policy.md, "The
 * ledger contract"). The same cases run against the in-memory ledger and the
 * SQLite and PostgreSQL ops stores' `budgets.ledger(name)`, and against yours.
 * A refusal is checked against `decideAdmission` on the entries the ledger
 * held, so a ledger that admits by the shared rule refuses exactly as it does.
 */
import assert from 'node:assert/strict';
import { describeConformance } from './suite.js';
import type { ConformanceTestApi } from './types.js';
import {
  admits, ask, AT, type LedgerInitializer, plain, refuses, type Register, reservation, rootCeiling, settles, stored, sum, totals,
} from './ledger-fixture.js';
import { registerRaceCases, registerSharingCases } from './ledger-race-cases.js';
import { registerEntryCases, registerSettleCases } from './ledger-settle-cases.js';

export type { LedgerFixture, LedgerInitializer } from './ledger-fixture.js';

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
  describeConformance('BudgetLedger', initializer, api, (register: Register) => {
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
      scope: 'root', ceiling: { usd: 1 }, spent: { usd: 0, tokens: 0 }, held: { usd: 1, tokens: 4000 }, asked: { usd: 0.25, tokens: 1000 } });
    await ledger.settle('u1', { status: 'committed', usd: 0.125, tokens: 600 });
    await refuses(ledger, ask('u5', { ceilings }), {
      scope: 'root', ceiling: { usd: 1 }, spent: { usd: 0.125, tokens: 600 }, held: { usd: 0.75, tokens: 3000 }, asked: { usd: 0.25, tokens: 1000 } });
    await admits(ledger, ask('u6', { usd: 0.125, ceilings }), 'an ask that fills what the commit gave back');
    await refuses(ledger, ask('u7', { usd: 0.001, tokens: 1, ceilings }));
  });

  register('admits under a token ceiling the same way, and decimal USD that fill a ceiling exactly', async ({ ledger }) => {
    const ceilings = rootCeiling({ tokens: 10_000 });
    for (const id of ['t1', 't2', 't3']) await admits(ledger, ask(id, { tokens: 3000, ceilings }));
    await refuses(ledger, ask('t4', { tokens: 3000, ceilings }), {
      scope: 'root', ceiling: { tokens: 10_000 }, spent: { usd: 0, tokens: 0 }, held: { usd: 0.75, tokens: 9000 }, asked: { usd: 0.25, tokens: 3000 } });
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
      scope: 'root', ceiling: { usd: 1, tokens: 5000 }, spent: { usd: 0, tokens: 0 }, held: { usd: 0.25, tokens: 4000 }, asked: { usd: 0.25, tokens: 2000 } }, 'an ask past the tokens only');
    await refuses(ledger, ask('b3', { usd: 0.875, tokens: 500, ceilings }), undefined, 'an ask past the USD only');
    await admits(ledger, ask('b4', { usd: 0.75, ceilings }), 'an ask that fills both');
  });

  register('nested ceilings: a child\'s refuses while its parent has room, the parent\'s refuses children together', async ({ ledger }) => {
    const pathA = [{ scope: 'root', usd: 1 }, { scope: 'root/a', usd: 0.5 }];
    const pathB = [{ scope: 'root', usd: 1 }, { scope: 'root/b', usd: 0.75 }];
    await admits(ledger, ask('a1', { scope: 'root/a', ceilings: pathA }));
    await admits(ledger, ask('a2', { scope: 'root/a', ceilings: pathA }));
    await refuses(ledger, ask('a3', { scope: 'root/a', ceilings: pathA }), {
      scope: 'root/a', ceiling: { usd: 0.5 }, spent: { usd: 0, tokens: 0 }, held: { usd: 0.5, tokens: 2000 }, asked: { usd: 0.25, tokens: 1000 } }, 'the child ceiling, with the root at half');
    await admits(ledger, ask('b1', { scope: 'root/b', ceilings: pathB }));
    await admits(ledger, ask('b2', { scope: 'root/b', ceilings: pathB }));
    await refuses(ledger, ask('b3', { scope: 'root/b', ceilings: pathB }), {
      scope: 'root', ceiling: { usd: 1 }, spent: { usd: 0, tokens: 0 }, held: { usd: 1, tokens: 4000 }, asked: { usd: 0.25, tokens: 1000 } }, 'the root ceiling, with root/b at two thirds');
    await refuses(ledger, ask('r1', { ceilings: rootCeiling({ usd: 1 }) }), undefined, 'an ask in the root itself');
    // A grandchild counts under both ceilings above it; when both are full the first on the path (the root) refuses.
    await ledger.settle('a1', { status: 'released' });
    const pathX = [...pathA, { scope: 'root/a/x', usd: 0.25 }];
    await admits(ledger, ask('x1', { scope: 'root/a/x', ceilings: pathX }));
    await refuses(ledger, ask('x2', { scope: 'root/a/x', usd: 0.001, ceilings: pathX }), {
      scope: 'root', ceiling: { usd: 1 }, spent: { usd: 0, tokens: 0 }, held: { usd: 1, tokens: 4000 }, asked: { usd: 0.001, tokens: 1000 } }, 'a grandchild under three full ceilings');
  });

  register('a ceiling counts its own scope and those below it, not its parent, siblings or scopes that only start alike', async ({ ledger }) => {
    for (const scope of ['root', 'root/a/deep', 'root/ab', 'root/a-b', 'other']) await admits(ledger, ask(scope, { scope, usd: scope === 'root/a/deep' ? 0.25 : 0.5 }));
    const childOnly = [{ scope: 'root/a', usd: 0.5 }];
    await admits(ledger, ask('a1', { scope: 'root/a', ceilings: childOnly }));
    await refuses(ledger, ask('a2', { scope: 'root/a', usd: 0.125, ceilings: childOnly }), {
      scope: 'root/a', ceiling: { usd: 0.5 }, spent: { usd: 0, tokens: 0 }, held: { usd: 0.5, tokens: 2000 }, asked: { usd: 0.125, tokens: 1000 } });
    const ceilings = rootCeiling({ usd: 2.5 });
    await admits(ledger, ask('r1', { usd: 0.5, ceilings }));
    await refuses(ledger, ask('r2', { usd: 0.125, ceilings }), {
      scope: 'root', ceiling: { usd: 2.5 }, spent: { usd: 0, tokens: 0 }, held: { usd: 2.5, tokens: 6000 }, asked: { usd: 0.125, tokens: 1000 } }, 'the root, which does not count `other`');
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
      scope: 'root', ceiling: { usd: 0.5, tokens: 10_000 }, spent: { usd: 0, tokens: 0 }, held: { usd: 0.5, tokens: 5000 }, asked: { usd: 0.125, tokens: 100 } });
    await refuses(ledger, ask('n2', { usd: null, tokens: 6000, ceilings }), {
      scope: 'root', ceiling: { usd: 0.5, tokens: 10_000 }, spent: { usd: 0, tokens: 0 }, held: { usd: 0.5, tokens: 5000 }, asked: { usd: 0, tokens: 6000 } }, 'an unpriced ask past the tokens');
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

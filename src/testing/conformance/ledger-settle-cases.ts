/**
 * BudgetLedger conformance: settling an admission, and what the ledger's
 * entries, totals and restore say afterwards (see ledger-suite.ts).
 */
import assert from 'node:assert/strict';
import type { BudgetLedger, LedgerEntry } from '../../policy/types.js';
import { admits, ask, AT, byId, plain, refuses, type Register, reservation, rootCeiling, settles, stored, sum, totals } from './ledger-fixture.js';

export function registerSettleCases(register: Register): void {
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
      scope: 'root', ceiling: { usd: 1 }, spent: { usd: 0, tokens: 0 }, held: { usd: 1, tokens: 2000 }, asked: { usd: 0.125, tokens: 1000 } }, 'under an unknown hold');
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

export function registerEntryCases(register: Register): void {
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
      scope: 'root/a', ceiling: { tokens: 3200 }, spent: { usd: 0.125, tokens: 400 }, held: { usd: 0.5, tokens: 2800 }, asked: { usd: 0, tokens: 1 } });
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
      scope: 'root', ceiling: { usd: 1 }, spent: { usd: 0.125, tokens: 200 }, held: { usd: 0.75, tokens: 2000 }, asked: { usd: 0.25, tokens: 1000 } });
    await admits(ledger, ask('n2', { usd: 0.125, ceilings }), 'an ask that fills what the restored entries left');
    const replay = await ledger.admit(ask('h2', { ceilings }));
    assert.deepStrictEqual(replay.admitted && plain(replay.entry), { ...reservation(ask('h2', { scope: 'root/a' })), status: 'unknown' }, 'a replay of a restored id');
  });
}

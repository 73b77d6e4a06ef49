/**
 * BudgetLedger conformance: admissions that race, through one ledger object
 * or several over the same data, and a ledger shared by processes and kept
 * across a restart (see ledger-suite.ts).
 */
import assert from 'node:assert/strict';
import type { AdmitResult, BudgetLedger } from '../../policy/types.js';
import { exactlyOneWins } from './assert.js';
import {
  admits, ask, type LedgerInitializer, objects, plain, refusalOf, refuses, type Register, reservation, rootCeiling, stored, totals,
} from './ledger-fixture.js';

export function registerRaceCases(register: Register): void {
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
        admitted: false, scope: 'root', ceiling: { tokens: 500 }, spent: { usd: 0, tokens: 0 }, held: { usd: 0.25, tokens: 500 }, asked: { usd: 0.25, tokens: 500 } }, 'a loser must have been decided on the winner\'s hold');
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

export function registerSharingCases(register: Register, initializer: LedgerInitializer): void {
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
      scope: 'root', ceiling: { usd: 2 }, spent: { usd: 0.125, tokens: 300 }, held: { usd: 0.75, tokens: 3000 }, asked: { usd: 1.25, tokens: 1000 } }, 'an ask after the restart, past what was held before it');
    await admits(after, ask('n2', { usd: 1.125, ceilings }), 'an ask that fills what was left before the restart');
    const replay = await after.admit(ask('k4', { ceilings }));
    assert.deepStrictEqual(replay.admitted && plain(replay.entry), before.find((e) => e.id === 'k4'), 'a replay after the restart');
    await after.settle('k4', { status: 'unknown' });
    const again = await fixture.restart();
    assert.equal((await stored(again)).find((e) => e.id === 'k4')?.status, 'unknown', 'a settle after a restart was lost by the next');
    assert.equal((await stored(again)).length, 6);
  });
}

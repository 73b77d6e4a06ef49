/**
 * The AgentRunStore conformance suite: one spec every backend runs, so the
 * in-memory, SQLite and Postgres stores (and yours) keep the same contract.
 */
import assert from 'node:assert/strict';
import type { AgentRunEnvelope, AgentRunStore } from '../../agent/types.js';
import { exactlyOneWins, rejectsWith } from './assert.js';
import { awkwardJson, buildEnvelope, jsonCopy, recordEngineRun, type EnvelopeSpec } from './envelopes.js';
import { registerListCases, registerPruneCases } from './store-list-cases.js';
import { describeConformance } from './suite.js';
import type { AgentRunStoreFixture, AgentRunStoreInitializer, ConformanceTestApi, StoreCaseRegistrar } from './types.js';

const REVISION_CONFLICT = { name: 'RevisionConflictError', code: 'revision_conflict' };
const SCOPE_MISMATCH = { name: 'RunIdentityError', code: 'scope_mismatch' };
const LEASE_LOST = { name: 'AgentRunLeaseError', code: 'lease_lost' };

/**
 * Registers the AgentRunStore conformance cases with your test framework.
 * Each case gets a fresh, empty store from `initializer.create()`.
 *
 * @example
 * ```ts
 * import { describe, it } from 'vitest';
 * import { validateAgentRunStore } from 'cairn/testing';
 *
 * validateAgentRunStore({
 *   name: 'my store',
 *   create: async () => ({ store: await openMyStore() }),
 *   destroy: async ({ store }) => closeMyStore(store),
 * }, { describe, it });
 * ```
 */
export function validateAgentRunStore(initializer: AgentRunStoreInitializer, api: ConformanceTestApi): void {
  const features = { list: true, prune: true, leases: false, ...initializer.features };
  describeConformance('AgentRunStore', initializer, api, (register: StoreCaseRegistrar) => {
    api.describe('save and load', () => registerRoundTripCases(register));
    api.describe('revision fence', () => registerRevisionCases(register));
    api.describe('scope', () => registerScopeCases(register));
    api.describe('growth and durability', () => registerGrowthCases(register));
    if (features.list) api.describe('list', () => registerListCases(register));
    if (features.prune) api.describe('prune', () => registerPruneCases(register));
    if (features.leases) api.describe('lease-fenced save', () => registerLeaseCases(register));
  });
}

/** Loads `runId` and checks it equals `expected` as JSON would carry it. */
async function expectStored(store: AgentRunStore, expected: AgentRunEnvelope, what: string): Promise<void> {
  const loaded = await store.load(expected.runId);
  assert.ok(loaded !== undefined, `${what}: load(${expected.runId}) found nothing`);
  assert.deepStrictEqual(loaded, jsonCopy(expected), `${what}: the loaded envelope differs from the saved one`);
}

/** The store objects a case reads through: the fixture's, and a reopened one when the backend can reopen. */
async function readers(fixture: AgentRunStoreFixture): Promise<AgentRunStore[]> {
  return fixture.reopen ? [fixture.store, await fixture.reopen()] : [fixture.store];
}

/** Successive saves of one run: the transcript grows by a turn or by its answers each time. */
function growingRun(runId: string, saves: number, overrides: Partial<EnvelopeSpec> = {}): AgentRunEnvelope[] {
  return Array.from({ length: saves }, (_, i) => {
    const revision = i + 1;
    const last = revision === saves;
    return buildEnvelope({
      runId,
      revision,
      steps: Math.ceil(revision / 2),
      openCalls: revision % 2 === 1 && !last,
      status: last ? 'completed' : 'running',
      createdAt: 1000,
      updatedAt: 1000 + revision,
      ...overrides,
    });
  });
}

function registerRoundTripCases(register: StoreCaseRegistrar): void {
  register('round-trips an envelope exactly: transcript, receipts of several steps, pending requests, result', async (fx) => {
    const envelopes = [
      buildEnvelope({ runId: 'rt-running', steps: 3, openCalls: true }),
      buildEnvelope({ runId: 'rt-suspended', steps: 3, status: 'suspended', pendingApprovals: 2, pendingClientCalls: 1 }),
      buildEnvelope({ runId: 'rt-completed', steps: 4, status: 'completed' }),
      buildEnvelope({ runId: 'rt-failed', steps: 3, status: 'failed' }),
      buildEnvelope({ runId: 'rt-stopped', steps: 5, status: 'stopped', bindingId: null }),
      buildEnvelope({ runId: 'rt-drained', steps: 2, status: 'drained' }),
    ];
    for (const envelope of envelopes) await fx.store.save(envelope);
    for (const store of await readers(fx)) {
      for (const envelope of envelopes) await expectStored(store, envelope, `${envelope.runId} (${envelope.status})`);
    }
  });

  register('stores what a real run saves, each save readable as soon as it resolves', async (fx) => {
    const [, reader = fx.store] = await readers(fx);
    const saved = await recordEngineRun(fx.store, {
      runId: 'engine-run',
      scope: 'tenant-a',
      afterSave: async (envelope) => {
        await expectStored(fx.store, envelope, `engine save at revision ${envelope.revision}`);
        if (reader !== fx.store) await expectStored(reader, envelope, `engine save at revision ${envelope.revision}, reopened`);
      },
    });
    const last = saved[saved.length - 1]!;
    assert.equal(last.status, 'completed');
    assert.ok(new Set(Object.values(last.receipts).map((r) => r.modelStep)).size >= 3, 'the run left receipts of three steps');
    for (const store of await readers(fx)) await expectStored(store, last, 'the finished run');
  });

  register('keeps JSON a model may send exactly (__proto__ and constructor keys, control characters, extreme numbers)', async (fx) => {
    const envelope = buildEnvelope({ runId: 'awkward', steps: 2, status: 'completed' });
    const awkward = awkwardJson();
    const transcript = (envelope.snapshot as { context: { messages: unknown[] } }).context.messages;
    transcript.push(
      { role: 'assistant', content: '', toolCalls: [{ toolCallId: 'odd_1', toolName: 'search', args: awkward }] },
      { role: 'tool', toolCallId: 'odd_1', toolName: 'search', content: awkward },
    );
    envelope.receipts['2:odd_1'] = {
      key: '2:odd_1', toolCallId: 'odd_1', toolName: 'search', modelStep: 2, status: 'completed', idempotent: false,
      rawResult: awkward, modelOutput: awkward,
    };
    envelope.result!.messages = jsonCopy(transcript) as never;
    await fx.store.save(envelope);
    for (const store of await readers(fx)) {
      const loaded = await store.load('awkward');
      // JSON text too: deep equality alone does not see every way a key can be lost.
      assert.equal(JSON.stringify(loaded), JSON.stringify(envelope), 'the awkward JSON came back changed');
      assert.deepStrictEqual(loaded, jsonCopy(envelope));
      const args = (loaded!.receipts['2:odd_1']!.rawResult as Record<string, unknown>);
      assert.ok(Object.hasOwn(args, '__proto__'), 'the __proto__ key was dropped or renamed');
      assert.equal(Object.getPrototypeOf(args), Object.prototype, 'a __proto__ key became the prototype');
    }
  });

  register('loads an unknown run as undefined, with or without a scope', async (fx) => {
    assert.equal(await fx.store.load('no-such-run'), undefined);
    assert.equal(await fx.store.load('no-such-run', { scope: 'tenant-a' }), undefined);
    await fx.store.save(buildEnvelope({ runId: 'known' }));
    assert.equal(await fx.store.load('Known'), undefined, 'run ids are case-sensitive');
    assert.equal(await fx.store.load('know'), undefined, 'a prefix is not a run id');
  });

  register('shares no object with the caller: changing what was saved or loaded changes nothing stored', async (fx) => {
    const envelope = buildEnvelope({ runId: 'alias', steps: 2, status: 'suspended', pendingApprovals: 1 });
    const original = jsonCopy(envelope);
    await fx.store.save(envelope);
    const context = (envelope.snapshot as { context: { messages: unknown[]; step: number } }).context;
    context.messages.push({ role: 'user', content: 'added after the save' });
    context.step = 99;
    envelope.receipts['0:call_0_0']!.status = 'failed';
    (envelope.pendingApprovals[0]!.args as Record<string, unknown>).slug = 'changed';
    envelope.status = 'completed';
    await expectStored(fx.store, original, 'after the saved object was changed');

    const first = await fx.store.load('alias');
    const second = await fx.store.load('alias');
    assert.notEqual(first, second, 'two loads returned the same object');
    (first!.snapshot as { context: { messages: unknown[] } }).context.messages.length = 0;
    first!.receipts = {};
    first!.pendingApprovals[0]!.token = 'forged';
    assert.deepStrictEqual(second, original, 'changing one loaded envelope changed another');
    await expectStored(fx.store, original, 'after a loaded object was changed');
  });
}

function registerRevisionCases(register: StoreCaseRegistrar): void {
  register('takes revision 1 only, for a new run', async (fx) => {
    for (const revision of [2, 0]) {
      const error = await rejectsWith(fx.store.save(buildEnvelope({ runId: 'fresh', revision })), REVISION_CONFLICT,
        `a new run saved at revision ${revision}`);
      assert.equal(error.runId, 'fresh');
      assert.equal(error.expectedRevision, revision - 1);
      assert.equal(error.storedRevision, null);
    }
    assert.equal(await fx.store.load('fresh'), undefined, 'a refused first save stored something');
    await fx.store.save(buildEnvelope({ runId: 'fresh', revision: 1 }));
    assert.equal((await fx.store.load('fresh'))?.revision, 1);
  });

  register('refuses a stale or skipped revision with the expected and stored revision, and keeps the stored run', async (fx) => {
    const [one, two] = growingRun('fenced', 3);
    await fx.store.save(one!);
    await fx.store.save(two!);
    for (const revision of [1, 2, 4, 10]) {
      const stale = buildEnvelope({ runId: 'fenced', revision, steps: 7, marker: 'stale' });
      const error = await rejectsWith(fx.store.save(stale), REVISION_CONFLICT, `a save at revision ${revision} over revision 2`);
      assert.equal(error.runId, 'fenced');
      assert.equal(error.expectedRevision, revision - 1);
      assert.equal(error.storedRevision, 2);
    }
    for (const store of await readers(fx)) await expectStored(store, two!, 'after refused saves');
  });

  register('lets exactly one of concurrent first saves of a run win', async (fx) => {
    const stores = await racers(fx, 8);
    const candidates = stores.map((_, i) => buildEnvelope({ runId: 'race-new', marker: `writer-${i}`, steps: 1 + (i % 3) }));
    const { winner, losers } = await exactlyOneWins(stores.map((s, i) => s.save(candidates[i]!)), 'concurrent first saves');
    for (const loser of losers) assertRevisionConflict(loser, 0);
    for (const store of await readers(fx)) await expectStored(store, candidates[winner]!, 'the winning first save');
  });

  register('lets exactly one of concurrent saves of the same revision win', async (fx) => {
    const [one] = growingRun('race', 1);
    await fx.store.save(one!);
    const stores = await racers(fx, 8);
    const candidates = stores.map((_, i) => buildEnvelope({ runId: 'race', revision: 2, marker: `writer-${i}`, steps: 2 + i }));
    const { winner, losers } = await exactlyOneWins(stores.map((s, i) => s.save(candidates[i]!)), 'concurrent saves of revision 2');
    for (const loser of losers) assertRevisionConflict(loser, 1);
    for (const store of await readers(fx)) await expectStored(store, candidates[winner]!, 'the winning save');
    // The fence goes on from the winner.
    await fx.store.save(buildEnvelope({ runId: 'race', revision: 3, steps: 12 }));
  });
}

/** `n` store objects over the same data: reopened ones when the backend can, else the fixture's store n times. */
async function racers(fx: AgentRunStoreFixture, n: number): Promise<AgentRunStore[]> {
  const reopen = fx.reopen;
  if (!reopen) return Array.from({ length: n }, () => fx.store);
  return [fx.store, ...(await Promise.all(Array.from({ length: n - 1 }, () => reopen())))];
}

function assertRevisionConflict(error: unknown, expectedRevision: number): void {
  const e = error as Record<string, unknown>;
  assert.equal(e?.name, 'RevisionConflictError', `a losing save failed with ${String(error)}, not a RevisionConflictError`);
  assert.equal(e.code, 'revision_conflict');
  assert.equal(e.expectedRevision, expectedRevision);
}

function registerScopeCases(register: StoreCaseRegistrar): void {
  register('loads a run for its own scope, and for a caller that gives none', async (fx) => {
    const envelope = buildEnvelope({ runId: 'scoped', scope: 'tenant-a', steps: 2 });
    await fx.store.save(envelope);
    assert.deepStrictEqual(await fx.store.load('scoped', { scope: 'tenant-a' }), jsonCopy(envelope));
    assert.deepStrictEqual(await fx.store.load('scoped', {}), jsonCopy(envelope));
    assert.deepStrictEqual(await fx.store.load('scoped'), jsonCopy(envelope));
  });

  register("refuses another scope's run with scope_mismatch and returns none of it", async (fx) => {
    const secretScope = 'tenant-secret-7f3a';
    const marker = 'SECRET-CONTENT-51c9';
    await fx.store.save(buildEnvelope({ runId: 'private', scope: secretScope, marker, steps: 2, status: 'completed' }));
    for (const scope of ['tenant-b', '', 'TENANT-SECRET-7F3A', `${secretScope} `]) {
      const error = await rejectsWith(fx.store.load('private', { scope }), SCOPE_MISMATCH, `load for scope ${JSON.stringify(scope)}`);
      assert.equal(error.runId, 'private');
      const seen = [error.message, error.stack ?? '', safeJson(error), safeJson(Object.getOwnPropertyNames(error)
        .map((k) => (error as Record<string, unknown>)[k])), String(error.cause ?? '')].join('\n');
      assert.ok(!seen.includes(marker), 'the refusal carries the run\'s content');
      assert.ok(!seen.includes(secretScope), 'the refusal names the other scope');
    }
  });
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return String(value);
  }
}

function registerGrowthCases(register: StoreCaseRegistrar): void {
  register('keeps the exact latest envelope over 50 saves that each add to the transcript', async (fx) => {
    const saves = growingRun('growing', 50);
    for (const envelope of saves) {
      await fx.store.save(envelope);
      await expectStored(fx.store, envelope, `revision ${envelope.revision}`);
    }
    const last = saves[saves.length - 1]!;
    assert.equal((last.snapshot as { context: { messages: unknown[] } }).context.messages.length, 2 + 25 * 3);
    for (const store of await readers(fx)) await expectStored(store, last, 'revision 50');
  });

  register('keeps receipts of earlier steps as later saves add and settle their own', async (fx) => {
    const saves = growingRun('receipts', 12);
    for (const envelope of saves) {
      await fx.store.save(envelope);
      const loaded = await fx.store.load('receipts');
      assert.deepStrictEqual(loaded?.receipts, jsonCopy(envelope.receipts), `receipts at revision ${envelope.revision}`);
    }
    const last = saves[saves.length - 1]!;
    assert.equal(Object.keys(last.receipts).length, 12, 'two receipts for each of six steps');
    assert.ok(Object.values(last.receipts).every((r) => r.status === 'completed'));
    for (const store of await readers(fx)) await expectStored(store, last, 'the last save');
  });

  register('goes on from revisions another store object wrote', async (fx) => {
    const saves = growingRun('handover', 16);
    const stores = await readers(fx);
    // Several saves through one object, then through the other: what a restart between steps does.
    for (const [i, envelope] of saves.entries()) {
      const store = stores[Math.floor(i / 3) % stores.length]!;
      await store.save(envelope);
      for (const reader of stores) await expectStored(reader, envelope, `revision ${envelope.revision}`);
    }
  });

  register('resolves a save only once a fresh load returns it', async (fx) => {
    const reader = fx.reopen ? await fx.reopen() : fx.store;
    for (const envelope of growingRun('visible', 10)) {
      await fx.store.save(envelope);
      // No waiting in between: the save's promise is the promise of durability.
      await expectStored(reader, envelope, `revision ${envelope.revision} right after its save`);
    }
  });
}

function registerLeaseCases(register: StoreCaseRegistrar): void {
  const leasesOf = (fx: AgentRunStoreFixture) => {
    if (!fx.leases || !fx.advance) {
      assert.fail('features.leases is set, so create() must return `leases` (the provider the store checks) and `advance`.');
    }
    return { leases: fx.leases, advance: fx.advance, ttl: fx.ttlMs ?? 10_000 };
  };

  register('saves with a held lease, refuses one that expired, was taken over, forged or released, and writes nothing then', async (fx) => {
    const { leases, advance, ttl } = leasesOf(fx);
    const key = 'lease:fenced-run';
    const saves = growingRun('fenced-run', 6);
    const a = await leases.acquire(key, 'executor-a', ttl);
    assert.ok(a, 'acquire of a free key');
    await fx.store.save(saves[0]!, { lease: a });
    await advance(ttl / 2);
    await fx.store.save(saves[1]!, { lease: a });

    await advance(ttl);
    const expired = await rejectsWith(fx.store.save(saves[2]!, { lease: a }), LEASE_LOST, 'a save with an expired lease');
    assert.equal(expired.key, key);

    const b = await leases.acquire(key, 'executor-b', ttl);
    assert.ok(b, 'acquire of an expired lease');
    await rejectsWith(fx.store.save(saves[2]!, { lease: a }), LEASE_LOST, 'a save with a lease taken over');
    await rejectsWith(fx.store.save(saves[2]!, { lease: { ...b, token: b.token + 1 } }), LEASE_LOST, 'a save with a forged token');
    await rejectsWith(fx.store.save(saves[2]!, { lease: { ...b, owner: 'executor-a' } }), LEASE_LOST, 'a save with a forged owner');
    await rejectsWith(fx.store.save(saves[2]!, { lease: { ...b, key: 'lease:other-run' } }), LEASE_LOST, 'a save with a lease on another key');
    await expectStored(fx.store, saves[1]!, 'after the refused saves');

    await fx.store.save(saves[2]!, { lease: b });
    await leases.release(b);
    await rejectsWith(fx.store.save(saves[3]!, { lease: b }), LEASE_LOST, 'a save with a released lease');
    for (const store of await readers(fx)) await expectStored(store, saves[2]!, 'after the released lease was refused');
  });

  register('keeps the revision fence for a save with a held lease', async (fx) => {
    const { leases, ttl } = leasesOf(fx);
    const lease = await leases.acquire('lease:fence-and-lease', 'executor-a', ttl);
    assert.ok(lease);
    const [one, two] = growingRun('fence-and-lease', 2);
    await fx.store.save(one!, { lease });
    const error = await rejectsWith(fx.store.save(one!, { lease }), REVISION_CONFLICT, 'a stale save with a held lease');
    assert.equal(error.storedRevision, 1);
    await fx.store.save(two!, { lease });
    await expectStored(fx.store, two!, 'the fenced save');
  });
}

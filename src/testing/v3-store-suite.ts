/**
 * The AgentRunStoreV3 conformance suite (docs/v3.md, "The store"): the same
 * cases run against the in-memory, SQLite and PostgreSQL V3 stores, and
 * against yours.
 */
import assert from 'node:assert/strict';
import type { JsonValue } from '../agent/json.js';
import type { AgentRunEnvelopeV3 } from '../v3/envelope.js';
import { contextBlobDigest } from '../v3/store-blob.js';
import type { AgentRunStoreV3, ContextBlobInput } from '../v3/store-types.js';
import { describeConformance, type CaseRegister } from './conformance/suite.js';
import type { ConformanceTestApi } from './conformance/types.js';
import { registerForgetCases } from './v3-forget-cases.js';

/** What `create()` hands one case. */
export interface AgentRunStoreV3Fixture {
  /** A store holding no runs and no packages. */
  store: AgentRunStoreV3;
  /** Another store object over the same data, as a second process opens it (durable stores). */
  reopen?(): Promise<AgentRunStoreV3>;
  /** Moves the store's clock on by at least `ms` (a database clock: wait). */
  advance(ms: number): Promise<void>;
  /** How many packages the store holds (its blob rows). */
  blobCount(): Promise<number>;
}

export interface AgentRunStoreV3Initializer {
  /** Names the describe block: `AgentRunStoreV3 conformance: <name>`. */
  name: string;
  create(): Promise<AgentRunStoreV3Fixture>;
  destroy?(fixture: AgentRunStoreV3Fixture): Promise<void>;
}

const isCode = (code: string, extra: Record<string, unknown> = {}) => (error: unknown) => {
  assert.equal((error as { code?: unknown }).code, code, `expected code ${code}, got ${String((error as Error)?.message ?? error)}`);
  for (const [k, v] of Object.entries(extra)) assert.deepEqual((error as Record<string, unknown>)[k], v, k);
  return true;
};

/** A package of one text block. */
export function v3TestBlob(text: string, records: { recordId: string; revision: number }[] = []): ContextBlobInput {
  const blocks: JsonValue[] = [{ type: 'retrieval', text }];
  return { digest: contextBlobDigest(blocks), content: { blocks }, records };
}

/** A minimal V3 envelope: enough for a store, not for a resume. */
export function v3TestEnvelope(runId: string, revision: number, extra: Partial<AgentRunEnvelopeV3> = {}): AgentRunEnvelopeV3 {
  return {
    kind: 'cairn-agent-run', version: 3, runId, scope: 'tenant-a', revision, bindingId: 'v3-suite',
    binding: { bindingId: 'v3-suite', model: 'mock:m', tools: 't', output: null, limits: 'l' },
    machine: { id: 'run', version: 3 }, snapshot: { value: 'running', context: { step: revision, messages: [] } },
    receipts: {}, approvalRequestCounts: {}, approvals: {}, status: 'running', pendingApprovals: [], pendingClientCalls: [],
    createdAt: 0, updatedAt: 0, ...extra,
  };
}

const withContext = (digests: string[]): Partial<AgentRunEnvelopeV3> => ({
  context: { steps: digests.map((digest, step) => ({ step, phase: 'loop' as const, blob: { digest }, manifest: { refresh: step === 0 ? 'initial' : 'reused' } })), compiler: { pass: 1 } },
});

/**
 * Registers the AgentRunStoreV3 conformance cases. Each case gets a fresh store from `initializer.create()`.
 *
 * @example
 * ```ts
 * import { describe, it } from 'vitest';
 * import { createInMemoryAgentRunStoreV3 } from 'cairn/agent';
 * import { createManualClock, defineAgentRunStoreV3Conformance } from 'cairn/testing';
 *
 * defineAgentRunStoreV3Conformance({
 *   name: 'in-memory',
 *   async create() {
 *     const clock = createManualClock();
 *     const store = createInMemoryAgentRunStoreV3({ clock });
 *     return { store, advance: async (ms) => clock.advance(ms), blobCount: async () => store.blobDigests().length };
 *   },
 * }, { describe, it });
 * ```
 */
export function defineAgentRunStoreV3Conformance(initializer: AgentRunStoreV3Initializer, api: ConformanceTestApi): void {
  describeConformance('AgentRunStoreV3', initializer, api, (register) => {
    api.describe('records and revisions', () => registerRecordCases(register));
    api.describe('packages', () => registerBlobCases(register));
    api.describe('list and prune', () => registerListCases(register));
    api.describe('bad input', () => registerBadInputCases(register));
    api.describe('forget', () => registerForgetCases(register, v3TestEnvelope));
  });
}

function registerRecordCases(register: CaseRegister<AgentRunStoreV3Fixture>): void {
  register('marks itself a V3 store', async ({ store }) => {
    assert.equal(store.checkpointVersion, 3);
  });

  register('keeps a version 3 record with its V3 fields, on the store clock', async ({ store, advance, reopen }) => {
    const blob = v3TestBlob('Deploys need a green CI run.');
    const envelope = v3TestEnvelope('r-1', 1, {
      ...withContext([blob.digest]),
      workingMemory: { revision: 2, snapshot: { goal: 'Deploy.' } },
      memoryIntents: [{ operationId: 'op-1', status: 'intended' }],
    });
    const before = await store.now();
    await store.save(envelope, { blobs: [blob] });
    const loaded = await store.load('r-1');
    assert.ok(loaded);
    assert.equal(loaded.version, 3);
    assert.deepEqual(loaded.context, envelope.context);
    assert.deepEqual(loaded.workingMemory, envelope.workingMemory);
    assert.deepEqual(loaded.memoryIntents, envelope.memoryIntents);
    assert.deepEqual(loaded.snapshot, envelope.snapshot);
    assert.equal(loaded.forgotten, undefined);
    assert.ok(loaded.createdAt >= before && loaded.updatedAt === loaded.createdAt, 'times are the store clock\'s, not the envelope\'s 0');
    await advance(5);
    await store.save({ ...envelope, revision: 2, status: 'completed' });
    const second = (await store.load('r-1'))!;
    assert.equal(second.createdAt, loaded.createdAt, 'createdAt is the first save\'s');
    assert.ok(second.updatedAt > loaded.updatedAt, 'updatedAt moves with each save');
    if (reopen) assert.deepEqual(await (await reopen()).load('r-1'), second);
  });

  register('a save changes nothing the caller holds, and a later change of the caller\'s object changes nothing stored', async ({ store }) => {
    const envelope = v3TestEnvelope('r-1', 1, { workingMemory: { revision: 1, snapshot: { n: 1 } } });
    await store.save(envelope);
    assert.equal(envelope.createdAt, 0);
    (envelope.workingMemory!.snapshot as { n: number }).n = 2;
    assert.deepEqual((await store.load('r-1'))!.workingMemory, { revision: 1, snapshot: { n: 1 } });
  });

  register('a save must carry the stored revision plus one: RevisionConflictError, and nothing written', async ({ store }) => {
    await assert.rejects(store.save(v3TestEnvelope('r-1', 2)),
      isCode('revision_conflict', { name: 'RevisionConflictError', subsystem: 'run', expectedRevision: 1, storedRevision: null }));
    assert.equal(await store.load('r-1'), undefined);
    await store.save(v3TestEnvelope('r-1', 1));
    await store.save(v3TestEnvelope('r-1', 2));
    for (const stale of [2, 1, 4]) {
      await assert.rejects(store.save(v3TestEnvelope('r-1', stale, { status: 'failed' })),
        isCode('revision_conflict', { subsystem: 'run', expectedRevision: stale - 1, storedRevision: 2 }));
    }
    assert.equal((await store.load('r-1'))!.status, 'running');
  });

  register('two store objects saving the same revision: one wins, the other is a revision conflict', async ({ store, reopen }) => {
    const other = reopen ? await reopen() : store;
    await store.save(v3TestEnvelope('r-1', 1));
    const results = await Promise.allSettled([
      store.save(v3TestEnvelope('r-1', 2, { status: 'completed' })),
      other.save(v3TestEnvelope('r-1', 2, { status: 'failed' })),
    ]);
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    isCode('revision_conflict')(lost.reason);
  });

  register('keeps the context steps as saved: appended, replaced from a changed one on, or fewer', async ({ store, reopen }) => {
    const [a, b, c] = [v3TestBlob('a'), v3TestBlob('b'), v3TestBlob('c')];
    await store.save(v3TestEnvelope('r-1', 1, withContext([a.digest, b.digest])), { blobs: [a, b] });
    await store.save(v3TestEnvelope('r-1', 2, withContext([a.digest, b.digest, a.digest])));
    assert.deepEqual((await store.load('r-1'))!.context, withContext([a.digest, b.digest, a.digest]).context);
    // A reopened step compiled again: its entry is replaced, and what follows it goes.
    await store.save(v3TestEnvelope('r-1', 3, withContext([a.digest, c.digest])), { blobs: [c] });
    assert.deepEqual((await store.load('r-1'))!.context, withContext([a.digest, c.digest]).context);
    const other = reopen ? await reopen() : store;
    await other.save(v3TestEnvelope('r-1', 4, withContext([a.digest, c.digest, b.digest])));
    assert.deepEqual((await store.load('r-1'))!.context, withContext([a.digest, c.digest, b.digest]).context);
    await store.save(v3TestEnvelope('r-1', 5));
    assert.equal((await store.load('r-1'))!.context, undefined);
  });

  register('another scope: load and save refuse with scope_mismatch and read or write nothing', async ({ store }) => {
    await store.save(v3TestEnvelope('r-1', 1));
    await assert.rejects(store.load('r-1', { scope: 'tenant-b' }), isCode('scope_mismatch', { name: 'RunIdentityError' }));
    await assert.rejects(store.save(v3TestEnvelope('r-1', 2, { scope: 'tenant-b' })), isCode('scope_mismatch'));
    assert.equal((await store.load('r-1', { scope: 'tenant-a' }))!.revision, 1);
  });
}

function registerBlobCases(register: CaseRegister<AgentRunStoreV3Fixture>): void {
  register('a package is stored once by digest: the same content again stores nothing', async ({ store, blobCount }) => {
    const blob = v3TestBlob('one');
    assert.deepEqual(await store.putBlob(blob), { digest: blob.digest, stored: true });
    assert.deepEqual(await store.putBlob(v3TestBlob('one')), { digest: blob.digest, stored: false });
    assert.equal(await blobCount(), 1);
    // Each step's save carrying the same package, as an unchanged context does.
    await store.save(v3TestEnvelope('r-1', 1, withContext([blob.digest])), { blobs: [blob] });
    await store.save(v3TestEnvelope('r-1', 2, withContext([blob.digest, blob.digest])), { blobs: [blob] });
    await store.save(v3TestEnvelope('r-2', 1, withContext([blob.digest])), { blobs: [blob] });
    assert.equal(await blobCount(), 1);
    const other = v3TestBlob('two');
    await store.save(v3TestEnvelope('r-1', 3, withContext([blob.digest, blob.digest, other.digest])), { blobs: [other] });
    assert.equal(await blobCount(), 2);
    assert.deepEqual(await store.getBlob(blob.digest), { status: 'found', content: blob.content });
  });

  register('getBlob answers missing for a digest it does not hold', async ({ store }) => {
    assert.deepEqual(await store.getBlob(v3TestBlob('never').digest), { status: 'missing' });
  });

  register('a forget redacts the packages that hold a forgotten revision, and those stored later; the run keeps its revision and time', async ({ store }) => {
    const held = v3TestBlob('Ada prefers tea.', [{ recordId: 'm-1', revision: 1 }]);
    const clean = v3TestBlob('Deploys need CI.', [{ recordId: 'm-2', revision: 1 }]);
    await store.save(v3TestEnvelope('r-1', 1, withContext([held.digest, clean.digest])), { blobs: [held, clean] });
    const before = (await store.load('r-1'))!;
    assert.equal(await store.redactForgotten({ records: [{ recordId: 'm-1', revision: 1 }, { recordId: 'm-9', revision: 4 }] }), 1);
    assert.deepEqual(await store.getBlob(held.digest), { status: 'redacted' });
    assert.equal((await store.getBlob(clean.digest)).status, 'found');
    const after = (await store.load('r-1'))!;
    assert.equal(after.revision, before.revision);
    assert.equal(after.updatedAt, before.updatedAt);
    assert.deepEqual(after.forgotten, { digests: [held.digest] });
    assert.equal(after.context!.steps[0]!.redacted, true);
    assert.equal(after.context!.steps[0]!.manifest.redacted, true);
    assert.equal(after.context!.steps[1]!.redacted, undefined);
    // A later save of the run keeps the redaction (the flags are the store's, not the record's).
    await store.save({ ...after, revision: 2 });
    assert.deepEqual((await store.load('r-1'))!.forgotten, { digests: [held.digest] });
    // A package holding the forgotten revision that arrives later is redacted as it arrives.
    const later = v3TestBlob('Ada still prefers tea.', [{ recordId: 'm-9', revision: 4 }]);
    await store.putBlob(later);
    assert.deepEqual(await store.getBlob(later.digest), { status: 'redacted' });
    assert.equal(await store.redactForgotten({ records: [{ recordId: 'm-1', revision: 1 }] }), 0, 'already redacted');
  });
}

function registerListCases(register: CaseRegister<AgentRunStoreV3Fixture>): void {
  register('list pages newest first with a cursor, and filters by status and scope', async ({ store, advance }) => {
    for (const [i, status] of (['running', 'completed', 'suspended', 'completed', 'failed'] as const).entries()) {
      await store.save(v3TestEnvelope(`r-${i}`, 1, { status, scope: i === 4 ? 'tenant-b' : 'tenant-a' }));
      await advance(2);
    }
    const first = await store.list({ limit: 2 });
    assert.deepEqual(first.runs.map((r) => r.runId), ['r-4', 'r-3']);
    assert.ok(first.nextCursor);
    const second = await store.list({ limit: 2, cursor: first.nextCursor });
    assert.deepEqual(second.runs.map((r) => r.runId), ['r-2', 'r-1']);
    const third = await store.list({ limit: 2, cursor: second.nextCursor });
    assert.deepEqual(third.runs.map((r) => r.runId), ['r-0']);
    assert.equal(third.nextCursor, undefined);
    assert.deepEqual((await store.list({ status: 'completed' })).runs.map((r) => r.runId), ['r-3', 'r-1']);
    assert.deepEqual((await store.list({ scope: 'tenant-b' })).runs.map((r) => r.runId), ['r-4']);
    const [summary] = (await store.list({ status: 'suspended' })).runs;
    const loaded = (await store.load('r-2'))!;
    assert.deepEqual(summary, {
      runId: 'r-2', scope: 'tenant-a', status: 'suspended', revision: 1, bindingId: 'v3-suite',
      createdAt: loaded.createdAt, updatedAt: loaded.updatedAt, pendingApprovals: 0, pendingClientCalls: 0,
    });
  });

  register('prune deletes terminal runs saved before the time, then the packages no remaining run points to', async ({ store, advance, blobCount }) => {
    const shared = v3TestBlob('shared');
    const own = v3TestBlob('only the old run');
    const kept = v3TestBlob('the running run');
    await store.save(v3TestEnvelope('old-done', 1, { status: 'completed', ...withContext([shared.digest, own.digest]) }), { blobs: [shared, own] });
    await store.save(v3TestEnvelope('old-running', 1, withContext([shared.digest, kept.digest])), { blobs: [kept] });
    await store.save(v3TestEnvelope('old-failed', 1, { status: 'failed' }));
    await advance(5);
    const cut = await store.now();
    await advance(5);
    await store.save(v3TestEnvelope('new-done', 1, { status: 'stopped' }));
    const orphan = v3TestBlob('put, never pointed to');
    await store.putBlob(orphan);
    assert.equal(await blobCount(), 4);
    assert.equal(await store.prune({ terminalBefore: cut }), 2);
    assert.equal(await store.load('old-done'), undefined);
    assert.equal(await store.load('old-failed'), undefined);
    assert.ok(await store.load('old-running'));
    assert.ok(await store.load('new-done'));
    assert.equal((await store.getBlob(own.digest)).status, 'missing');
    assert.equal((await store.getBlob(orphan.digest)).status, 'missing');
    assert.equal((await store.getBlob(shared.digest)).status, 'found');
    assert.equal((await store.getBlob(kept.digest)).status, 'found');
    assert.equal(await blobCount(), 2);
    assert.equal(await store.prune({ terminalBefore: cut }), 0);
  });
}

function registerBadInputCases(register: CaseRegister<AgentRunStoreV3Fixture>): void {
  register('a package whose content does not match its digest is refused, and nothing is stored', async ({ store, blobCount }) => {
    const real = v3TestBlob('real');
    const forged = { ...real, content: { blocks: [{ type: 'retrieval', text: 'forged' }] } };
    await assert.rejects(store.putBlob(forged), isCode('blob_digest_mismatch', { name: 'ContextBlobError', digest: real.digest }));
    await assert.rejects(store.save(v3TestEnvelope('r-1', 1, withContext([real.digest])), { blobs: [forged] }), isCode('blob_digest_mismatch'));
    await assert.rejects(store.putBlob({ ...real, digest: 'sha256:abc' }), isCode('blob_digest_mismatch'));
    await assert.rejects(store.getBlob('md5:0'), isCode('blob_digest_mismatch'));
    assert.equal(await blobCount(), 0);
    assert.equal(await store.load('r-1'), undefined);
  });

  register('a record pointing to a package that is neither stored nor in the save is refused (blob_missing)', async ({ store }) => {
    const absent = v3TestBlob('absent');
    await assert.rejects(store.save(v3TestEnvelope('r-1', 1, withContext([absent.digest]))),
      isCode('blob_missing', { name: 'ContextBlobError', digest: absent.digest }));
    assert.equal(await store.load('r-1'), undefined);
  });

  register('only version 3 envelopes go in: a version 2 or a future version is refused, nothing written', async ({ store }) => {
    await store.save(v3TestEnvelope('r-1', 1));
    for (const version of [2, 1, 4]) {
      const envelope = { ...v3TestEnvelope('r-1', 2), version } as unknown as AgentRunEnvelopeV3;
      await assert.rejects(store.save(envelope), isCode('checkpoint_version_unsupported', { name: 'CheckpointVersionError' }));
    }
    await assert.rejects(store.save({ ...v3TestEnvelope('r-2', 1), kind: 'other' } as unknown as AgentRunEnvelopeV3), isCode('invalid_envelope'));
    assert.equal((await store.load('r-1'))!.revision, 1);
    assert.equal(await store.load('r-2'), undefined);
  });

  register('prune and list refuse malformed options', async ({ store }) => {
    await assert.rejects(store.prune({ terminalBefore: 'soon' as unknown as number }), isCode('invalid_options'));
    await assert.rejects(store.list({ status: 'nope' as never }), isCode('invalid_options'));
    await assert.rejects(store.list({ cursor: 'not-a-cursor' }), isCode('invalid_options'));
    await assert.rejects(store.redactForgotten({ records: [{ recordId: '', revision: 1 }] }), isCode('invalid_options'));
  });
}

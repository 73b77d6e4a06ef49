/**
 * reconcileAgentRun: the lease protocol (claimed before the read, renewed,
 * lost → reject and write nothing, released at the end) and its refusals,
 * which reject with typed errors and write nothing. Today it has nothing to
 * settle, so every call leaves the stored run byte for byte as it was.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import {
  agentRunLeaseKey, createInMemoryAgentRunStore, createInMemoryLeaseProvider, reconcileAgentRun, resumeAgent, runAgent,
  type AgentOptions, type AgentRunEnvelope, type AgentRunStore, type LeaseProvider, type LeaseRenewal,
} from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel } from 'cairn/testing';

function manualClock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

/** A store handle that counts saves and lets a test look at (or hold up) each load. */
function watched(inner: AgentRunStore, onLoad: () => unknown | Promise<unknown> = () => undefined) {
  const handle = {
    loads: 0,
    saves: 0,
    load: async (runId: string, options?: { scope?: string }) => {
      handle.loads += 1;
      await onLoad();
      return inner.load(runId, options);
    },
    save: async (envelope: AgentRunEnvelope, options?: Parameters<AgentRunStore['save']>[1]) => {
      handle.saves += 1;
      return inner.save(envelope, options);
    },
  };
  return handle;
}

/** The provider with `renew` replaced; everything else goes to the original. */
function withRenew(
  provider: LeaseProvider,
  renew: (original: LeaseProvider['renew'], ...args: Parameters<LeaseProvider['renew']>) => Promise<LeaseRenewal | null>,
): LeaseProvider & { renewals: number } {
  const wrapped = {
    renewals: 0,
    acquire: provider.acquire.bind(provider),
    release: provider.release.bind(provider),
    inspect: provider.inspect.bind(provider),
    requestDrain: provider.requestDrain.bind(provider),
    renew: (lease: Parameters<LeaseProvider['renew']>[0], ttlMs: number) => {
      wrapped.renewals += 1;
      return renew(provider.renew.bind(provider), lease, ttlMs);
    },
  };
  return wrapped;
}

const SCOPE = 'tenant-a';
const RUN_ID = 'r1';
const key = agentRunLeaseKey({ runId: RUN_ID, scope: SCOPE });
const params = { type: 'object' as const };

/** A runAgent leg on the run that stops inside its tool until `finish()`; `inTool` resolves once it is there. */
function legInTool(store: AgentRunStore, extra: Partial<AgentOptions<string>> = {}) {
  let entered!: () => void;
  const inTool = new Promise<void>((resolve) => (entered = resolve));
  let finish!: () => void;
  const paused = new Promise<void>((resolve) => (finish = resolve));
  const leg = runAgent({
    model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'slow', args: {} }] }, { text: 'done' }] }),
    prompt: 'x',
    session: { store, runId: RUN_ID, scope: SCOPE },
    tools: { slow: { parameters: params, execute: async () => (entered(), await paused, 'ok') } },
    ...extra,
  });
  return { leg, inTool, finish };
}

/** A run that suspends on one approval and completes once it is approved. */
function approvalRun(store: AgentRunStore, clock: { now(): number }) {
  const published: string[] = [];
  const options = {
    model: createMockModel({
      responses: [{ toolCalls: [{ toolName: 'publish', toolCallId: 'c1', args: { slug: 'notes' } }] }, { text: 'Published.' }],
    }),
    prompt: 'Publish the notes.',
    bindingId: 'publisher-v1',
    session: { store, runId: RUN_ID, scope: SCOPE },
    tools: {
      publish: {
        parameters: params,
        needsApproval: true,
        execute: async ({ slug }: { slug: string }) => (published.push(slug), 'published'),
      },
    },
    deps: { clock },
  } satisfies AgentOptions;
  return { options, published };
}

async function completedRun(store: AgentRunStore, clock: { now(): number }) {
  const result = await runAgent({
    model: createMockModel({ responses: [{ text: 'done' }] }),
    prompt: 'x',
    session: { store, runId: RUN_ID, scope: SCOPE },
    deps: { clock },
  });
  expect(result.status).toBe('completed');
}

const stored = async (store: AgentRunStore) => JSON.stringify(await store.load(RUN_ID, { scope: SCOPE }));

/** Where the runs and the leases live: the in-memory pair, or one SQLite file. */
interface Backend {
  store: AgentRunStore;
  leases: LeaseProvider;
  clock: ReturnType<typeof manualClock>;
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

const backends: [string, () => Backend][] = [
  ['in memory', () => {
    const clock = manualClock();
    const leases = createInMemoryLeaseProvider({ clock });
    return { store: createInMemoryAgentRunStore([], { clock, leases }), leases, clock };
  }],
  ['SQLite', () => {
    const clock = manualClock();
    const dir = mkdtempSync(join(tmpdir(), 'cairn-reconcile-'));
    const ops = createSqliteOpsStore({ path: join(dir, 'ops.sqlite'), clock });
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => ops.close());
    return { store: ops.agentRuns, leases: ops.leases, clock };
  }],
];

describe.each(backends)('reconcileAgentRun with leases (%s)', (_name, open) => {
  it('claims the lease before it reads the run, and gives it back at the end', async () => {
    const { store, leases, clock } = open();
    await completedRun(store, clock);
    const before = await stored(store);
    let heldAtLoad: string | undefined | null = undefined;
    const handle = watched(store, async () => (heldAtLoad = (await leases.inspect(key))?.owner ?? null));
    const result = await reconcileAgentRun({ session: { store: handle, runId: RUN_ID, scope: SCOPE }, lease: { provider: leases, owner: 'reconciler' } });
    expect(result).toEqual({ runId: RUN_ID });
    expect(result.status).toBe('completed');
    expect(heldAtLoad).toBe('reconciler');
    expect(handle.saves).toBe(0);
    expect(await stored(store)).toBe(before);
    expect(await leases.inspect(key)).toBeNull();
    expect(await leases.acquire(key, 'next-worker', 10_000)).not.toBeNull();
  });

  it('takes its owner from deps.generateId when lease.owner is not given', async () => {
    const { store, leases, clock } = open();
    await completedRun(store, clock);
    let heldAtLoad: string | undefined;
    const handle = watched(store, async () => (heldAtLoad = (await leases.inspect(key))?.owner));
    await reconcileAgentRun({ session: { store: handle, runId: RUN_ID, scope: SCOPE }, lease: { provider: leases }, deps: { generateId: () => 'generated-7' } });
    expect(heldAtLoad).toBe('generated-7');
  });

  it('rejects with lease_held while another owner holds the lease, before it reads anything', async () => {
    const { store, leases, clock } = open();
    await completedRun(store, clock);
    const other = await leases.acquire(key, 'someone-else', 60_000);
    const handle = watched(store);
    const call = reconcileAgentRun({ session: { store: handle, runId: RUN_ID, scope: SCOPE }, lease: { provider: leases, owner: 'reconciler' } });
    await expect(call).rejects.toMatchObject({ name: 'AgentRunLeaseError', code: 'lease_held', key });
    expect(handle.loads).toBe(0);
    expect(handle.saves).toBe(0);
    // The holder keeps its lease.
    expect(await leases.inspect(key)).toMatchObject({ owner: 'someone-else', token: other!.token });
  });

  it('rejects with lease_held while a runAgent leg works on the run, and the leg goes on undisturbed', async () => {
    const { store, leases, clock } = open();
    const { leg, inTool, finish } = legInTool(store, { lease: { provider: leases, owner: 'worker-1', ttlMs: 60_000 }, deps: { clock } });
    await inTool;
    // Another process: its own store handle, so only the lease keeps it out.
    const elsewhere = watched(store);
    const before = await stored(store);
    await expect(reconcileAgentRun({ session: { store: elsewhere, runId: RUN_ID, scope: SCOPE }, lease: { provider: leases, owner: 'reconciler' } }))
      .rejects.toMatchObject({ name: 'AgentRunLeaseError', code: 'lease_held' });
    expect(elsewhere.loads).toBe(0);
    expect(await stored(store)).toBe(before);
    finish();
    expect((await leg).status).toBe('completed');
    expect((await reconcileAgentRun({ session: { store, runId: RUN_ID, scope: SCOPE }, lease: { provider: leases } })).status).toBe('completed');
  });

  it('gives the lease back after a refusal too', async () => {
    const { store, leases, clock } = open();
    await expect(reconcileAgentRun({ session: { store, runId: RUN_ID, scope: SCOPE }, lease: { provider: leases, owner: 'reconciler' } }))
      .rejects.toMatchObject({ name: 'RunIdentityError', code: 'run_not_found' });
    expect(await leases.inspect(key)).toBeNull();
    await completedRun(store, clock);
    const otherKey = agentRunLeaseKey({ runId: RUN_ID, scope: 'tenant-b' });
    await expect(reconcileAgentRun({ session: { store, runId: RUN_ID, scope: 'tenant-b' }, lease: { provider: leases, owner: 'reconciler' } }))
      .rejects.toMatchObject({ name: 'RunIdentityError', code: 'scope_mismatch' });
    expect(await leases.inspect(otherKey)).toBeNull();
    expect(await leases.acquire(otherKey, 'next-worker', 10_000)).not.toBeNull();
  });

  it('renews the lease every ttlMs / 3 while it works', async () => {
    const { store, leases, clock } = open();
    await completedRun(store, clock);
    let renewed!: () => void;
    const twice = new Promise<void>((resolve) => (renewed = resolve));
    const provider = withRenew(leases, async (renew, lease, ttlMs) => {
      const renewal = await renew(lease, ttlMs);
      if (provider.renewals >= 2) renewed();
      return renewal;
    });
    let ttlSeen: number | undefined;
    const handle = watched(store, async () => {
      await twice;
      const lease = await leases.inspect(key);
      ttlSeen = lease ? lease.expiresAt - clock.now() : undefined;
    });
    const result = await reconcileAgentRun({ session: { store: handle, runId: RUN_ID, scope: SCOPE }, lease: { provider, owner: 'reconciler', ttlMs: 60 } });
    expect(result.status).toBe('completed');
    expect(provider.renewals).toBeGreaterThanOrEqual(2);
    expect(ttlSeen).toBe(60);
    expect(await leases.inspect(key)).toBeNull();
  });

  const failingRenewals: [string, () => Promise<LeaseRenewal | null>][] = [
    ['returns null', async () => null],
    ['throws', async () => { throw new Error('lease backend unreachable'); }],
  ];
  it.each(failingRenewals)('rejects with lease_lost and writes nothing when a renewal %s', async (_how, renewal) => {
    const { store, leases, clock } = open();
    const { options } = approvalRun(store, clock);
    expect((await runAgent(options)).status).toBe('suspended');
    const before = await stored(store);
    let renewFailed!: () => void;
    const failed = new Promise<void>((resolve) => (renewFailed = resolve));
    const provider = withRenew(leases, async () => {
      setTimeout(renewFailed, 5);
      return renewal();
    });
    const handle = watched(store, () => failed);
    await expect(reconcileAgentRun({ session: { store: handle, runId: RUN_ID, scope: SCOPE }, lease: { provider, owner: 'reconciler', ttlMs: 30 } }))
      .rejects.toMatchObject({ name: 'AgentRunLeaseError', code: 'lease_lost', key });
    expect(handle.saves).toBe(0);
    expect(await stored(store)).toBe(before);
    // It still gives back what it may hold.
    expect(await leases.inspect(key)).toBeNull();
  });

  it('reconciles a run suspended on approval (nothing written), which then resumes normally', async () => {
    const { store, leases, clock } = open();
    const { options, published } = approvalRun(store, clock);
    const lease = { provider: leases, ttlMs: 10_000 };
    const first = await runAgent({ ...options, lease: { ...lease, owner: 'worker-1' } });
    if (first.status !== 'suspended') throw new Error(`expected a suspension, got ${first.status}`);
    const before = await store.load(RUN_ID, { scope: SCOPE });
    const handle = watched(store);
    const result = await reconcileAgentRun({ session: { store: handle, runId: RUN_ID, scope: SCOPE }, lease: { ...lease, owner: 'reconciler' } });
    expect(result).toEqual({ runId: RUN_ID });
    expect(result.status).toBe('suspended');
    expect(handle.saves).toBe(0);
    const after = await store.load(RUN_ID, { scope: SCOPE });
    expect(after?.revision).toBe(before?.revision);
    expect(JSON.stringify(after)).toBe(JSON.stringify(before));
    expect(published).toEqual([]);
    const approvalResponses = first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));
    const done = await resumeAgent({ ...options, approvalResponses, lease: { ...lease, owner: 'worker-2' } });
    expect(done.status).toBe('completed');
    expect(published).toEqual(['notes']);
    expect((await reconcileAgentRun({ session: { store, runId: RUN_ID, scope: SCOPE }, lease })).status).toBe('completed');
  });
});

describe('reconcileAgentRun refusals', () => {
  const clock = manualClock();

  async function refusedWithNothingWritten(store: AgentRunStore, options: Partial<Parameters<typeof reconcileAgentRun>[0]>, expected: object) {
    const before = await stored(store);
    const handle = watched(store);
    await expect(reconcileAgentRun({ session: { store: handle, runId: RUN_ID, scope: SCOPE }, ...options } as never)).rejects.toMatchObject(expected);
    expect(handle.saves).toBe(0);
    expect(await stored(store)).toBe(before);
    return handle;
  }

  type Patch = (provider: LeaseProvider) => object | null;
  const badOptions: [string, Patch][] = [
    ['options that are not an object', () => null],
    ['no session', () => ({ session: undefined })],
    ['a session without a store', () => ({ session: { runId: RUN_ID, scope: SCOPE } })],
    ['a store without save', () => ({ session: { store: { load: async () => undefined }, runId: RUN_ID, scope: SCOPE } })],
    ['an empty runId', () => ({ session: { store: createInMemoryAgentRunStore(), runId: '', scope: SCOPE } })],
    ['a scope that is not a string', () => ({ session: { store: createInMemoryAgentRunStore(), runId: RUN_ID, scope: 7 } })],
    ['a lease without a provider', () => ({ lease: {} })],
    ['a provider without renew', (provider) => ({ lease: { provider: { acquire: provider.acquire, release: provider.release } } })],
    ['a ttlMs under 30', (provider) => ({ lease: { provider, ttlMs: 29 } })],
    ['an empty owner', (provider) => ({ lease: { provider, owner: '' } })],
    ['a generateId that is not a function', (provider) => ({ lease: { provider }, deps: { generateId: 'id-1' } })],
    ['a memory option without seams', (provider) => ({ lease: { provider }, memory: {} })],
    ['a chat option without a store', (provider) => ({ lease: { provider }, chat: {} })],
  ];
  it.each(badOptions)('rejects %s with InvalidOptionsError, before it claims or reads anything', async (_label, patch) => {
    const store = createInMemoryAgentRunStore();
    await completedRun(store, clock);
    const provider = withRenew(createInMemoryLeaseProvider({ clock }), (renew, ...args) => renew(...args));
    let acquired = 0;
    const acquire = provider.acquire;
    provider.acquire = (...args) => (acquired += 1, acquire(...args));
    const handle = watched(store);
    const patched = patch(provider);
    const options = patched === null ? null : { session: { store: handle, runId: RUN_ID, scope: SCOPE }, ...patched };
    await expect(reconcileAgentRun(options as never)).rejects.toMatchObject({ name: 'InvalidOptionsError', code: 'invalid_options' });
    expect(handle.loads + handle.saves).toBe(0);
    expect(acquired).toBe(0);
  });

  it('rejects a run the store does not have with run_not_found', async () => {
    const store = createInMemoryAgentRunStore();
    await refusedWithNothingWritten(store, {}, { name: 'RunIdentityError', code: 'run_not_found', runId: RUN_ID });
    expect(store.runIds()).toEqual([]);
  });

  it('refuses another scope\'s run exactly as resumeAgent does, whether or not the store checks the scope', async () => {
    const store = createInMemoryAgentRunStore();
    await completedRun(store, clock);
    const resumed = await resumeAgent({ model: createMockModel({ responses: [] }), session: { store, runId: RUN_ID, scope: 'tenant-b' } });
    if (resumed.status !== 'failed') throw new Error('expected a refusal');
    const expected = { name: resumed.error.name, code: resumed.error.code, message: resumed.error.message };
    expect(expected).toEqual({ name: 'RunIdentityError', code: 'scope_mismatch', message: 'Native checkpoint version, identity, or scope mismatch.' });
    await refusedWithNothingWritten(store, { session: { store, runId: RUN_ID, scope: 'tenant-b' } }, expected);
    // A store that ignores the load's scope: the envelope check refuses the same way.
    const blind: AgentRunStore = { load: (runId) => store.load(runId), save: (e, o) => store.save(e, o) };
    await refusedWithNothingWritten(store, { session: { store: blind, runId: RUN_ID, scope: 'tenant-b' } }, expected);
  });

  const tampered: [string, (e: AgentRunEnvelope) => unknown, object][] = [
    ['a record of another kind', (e) => ({ ...e, kind: 'someone-elses-run' }), { name: 'RunIdentityError', code: 'scope_mismatch' }],
    ['a record of a future version', (e) => ({ ...e, version: 99 }), { name: 'CheckpointVersionError', code: 'checkpoint_version_unsupported' }],
    ['a record of another run machine version', (e) => ({ ...e, machine: { id: 'run', version: 999 } }), { name: 'CheckpointVersionError', code: 'checkpoint_version_unsupported' }],
    ['an incomplete record', (e) => ({ ...e, snapshot: null }), { name: 'InvalidOptionsError', code: 'invalid_envelope' }],
    ['a record with an unknown status', (e) => ({ ...e, status: 'paused' }), { name: 'InvalidOptionsError', code: 'invalid_envelope' }],
    ['a record that is not an object', () => 'cairn-agent-run', { name: 'InvalidOptionsError', code: 'invalid_envelope' }],
  ];
  it.each(tampered)('rejects %s with the envelope check\'s error', async (_label, tamper, expected) => {
    const store = createInMemoryAgentRunStore();
    await completedRun(store, clock);
    const foreign: AgentRunStore = { load: async (runId, o) => tamper((await store.load(runId, o))!) as AgentRunEnvelope, save: (e, o) => store.save(e, o) };
    await refusedWithNothingWritten(store, { session: { store: foreign, runId: RUN_ID, scope: SCOPE } }, expected);
  });

  it('rejects with run_busy while this process executes the run through the same store object', async () => {
    const store = createInMemoryAgentRunStore();
    const { leg, inTool, finish } = legInTool(store);
    await inTool;
    await expect(reconcileAgentRun({ session: { store, runId: RUN_ID, scope: SCOPE } })).rejects.toMatchObject({ name: 'RunBusyError', code: 'run_busy' });
    finish();
    expect((await leg).status).toBe('completed');
    // The claim is given back: neither the leg nor the refusal keeps it.
    expect((await reconcileAgentRun({ session: { store, runId: RUN_ID, scope: SCOPE } })).status).toBe('completed');
    expect((await reconcileAgentRun({ session: { store, runId: RUN_ID, scope: SCOPE } })).status).toBe('completed');
  });

  it('works without a lease: reads the run, reports its status, writes nothing', async () => {
    const store = createInMemoryAgentRunStore();
    const { options } = approvalRun(store, clock);
    expect((await runAgent(options)).status).toBe('suspended');
    const before = await stored(store);
    const handle = watched(store);
    const settled = await reconcileAgentRun({ session: { store: handle, runId: RUN_ID, scope: SCOPE } });
    expect(settled).toEqual({ runId: RUN_ID });
    expect(settled.status).toBe('suspended');
    expect(handle).toMatchObject({ loads: 1, saves: 0 });
    expect(await stored(store)).toBe(before);
  });

  describe('a record the SQLite store cannot read', () => {
    it.each([
      ['a missing transcript row', 'record_corrupt', (db: Database.Database) => db.prepare('DELETE FROM cairn_run_messages WHERE idx = 0').run()],
      ['a head of a future format', 'record_version_unsupported', (db: Database.Database) => {
        const head = Buffer.from(db.prepare('SELECT head FROM cairn_runs').pluck().get() as Buffer);
        head[3] = 9;
        db.prepare('UPDATE cairn_runs SET head = ?').run(head);
      }],
    ] as const)('rejects %s with the store\'s StoredRecordError and releases the lease', async (_label, code, damage) => {
      const dir = mkdtempSync(join(tmpdir(), 'cairn-reconcile-'));
      const file = join(dir, 'ops.sqlite');
      const ops = createSqliteOpsStore({ path: file, clock });
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }), () => ops.close());
      await completedRun(ops.agentRuns, clock);
      const db = new Database(file);
      damage(db);
      db.close();
      const handle = watched(ops.agentRuns);
      await expect(reconcileAgentRun({ session: { store: handle, runId: RUN_ID, scope: SCOPE }, lease: { provider: ops.leases, owner: 'reconciler' } }))
        .rejects.toMatchObject({ name: 'StoredRecordError', code, runId: RUN_ID });
      expect(handle.saves).toBe(0);
      expect(await ops.leases.inspect(key)).toBeNull();
    });
  });
});

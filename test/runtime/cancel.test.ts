/**
 * Queued cancel (cancelAgentRun): a bookkeeping save of a run no executor
 * drives, honoured by the next executor that takes the run up (it ends
 * stopped, reason `aborted`, with no model call and no tool), dropped by
 * reconcileAgentRun from a run that ended and kept on one that did not;
 * typed refusals that write nothing.
 */
import { describe, expect, it } from 'vitest';
import {
  AgentRunLeaseError, cancelAgentRun, createInMemoryAgentRunStore, createInMemoryLeaseProvider, InvalidOptionsError, reconcileAgentRun,
  resumeAgent, RunBusyError, RunIdentityError, runAgent, type AgentRunEnvelope, type AgentRunStore,
} from 'cairn/agent';
import { createInMemoryChatStore } from 'cairn/chat';
import { createManualClock, createMockModel } from 'cairn/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';

const T = 1_767_225_600_000;
const clock = { now: () => T };

function world(store: AgentRunStore = createInMemoryAgentRunStore()) {
  let sent = 0;
  const publish = { parameters: { type: 'object' as const }, needsApproval: true, execute: () => `published ${++sent}` };
  const session = { store, runId: 'r1', scope: 't' };
  const options = {
    prompt: 'Publish.', tools: { publish }, session, deps: { clock },
    model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'publish', toolCallId: 'p1', args: {} }] }, { text: 'Published.' }] }),
  };
  return { session, options, sent: () => sent };
}

/** A model that fails the test if it is asked anything. */
const silent = () => createMockModel({ responses: [] });

describe('cancelAgentRun on a suspended run', () => {
  it('saves the request at the next revision and changes nothing else; the next resume ends the run cancelled, with no model call and no tool', async () => {
    const w = world();
    const first = await runAgent(w.options);
    expect(first.status).toBe('suspended');
    const before = (await w.session.store.load('r1'))!;
    const answer = await cancelAgentRun({ session: w.session, reason: 'The customer withdrew.', deps: { clock: { now: () => T + 5 } } });
    expect(answer).toEqual({ runId: 'r1', outcome: 'queued', status: 'suspended', request: { requestedAt: T + 5, reason: 'The customer withdrew.' } });
    const queued = (await w.session.store.load('r1'))!;
    expect(queued.revision).toBe(before.revision + 1);
    expect(queued.cancel).toEqual({ requestedAt: T + 5, reason: 'The customer withdrew.' });
    expect(queued.status).toBe('suspended');
    expect(queued.snapshot).toEqual(before.snapshot);
    // The resume brings no verdict (and the model has nothing to say): the cancel ends the run all the same.
    const model = silent();
    const ended = await resumeAgent({ ...w.options, model });
    expect(ended).toMatchObject({ status: 'stopped', reason: 'aborted', stopDetails: { cancel: { requestedAt: T + 5, reason: 'The customer withdrew.' } } });
    expect(model.calls).toHaveLength(0);
    expect(w.sent()).toBe(0);
    const stored = (await w.session.store.load('r1'))!;
    expect(stored).toMatchObject({ status: 'stopped', result: { status: 'stopped', reason: 'aborted' } });
    expect(stored.cancel).toBeUndefined();
    // A later resume answers from the stored result.
    expect(await resumeAgent({ ...w.options, model: silent() })).toMatchObject({ status: 'stopped', reason: 'aborted' });
  });

  it('wins over a verdict sent with the resume: the approved tool never runs', async () => {
    const w = world();
    const first = await runAgent(w.options);
    await cancelAgentRun({ session: w.session, deps: { clock } });
    const approvalResponses = first.status === 'suspended' ? first.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true })) : [];
    const ended = await resumeAgent({ ...w.options, approvalResponses });
    expect(ended).toMatchObject({ status: 'stopped', reason: 'aborted', stopDetails: { cancel: { requestedAt: T } } });
    expect(w.sent()).toBe(0);
  });

  it('ends a run with a chat through the chart\'s end: terminal commit, then the chat write', async () => {
    const w = world();
    const chats = createInMemoryChatStore();
    const chat = { store: chats, chatId: 'chat-1', scope: { userId: 'ada' } };
    await runAgent({ ...w.options, chat });
    await cancelAgentRun({ session: w.session, deps: { clock } });
    const ended = await resumeAgent({ ...w.options, chat, model: silent() });
    expect(ended.status).toBe('stopped');
    expect((await chats.loadChat('chat-1'))?.messages).toEqual(ended.messages);
    expect((await w.session.store.load('r1'))?.chat).toMatchObject({ status: 'written', cursor: 2 });
  });

  it('is kept by reconcileAgentRun on a run that did not end, for its next executor', async () => {
    const w = world();
    await runAgent(w.options);
    await cancelAgentRun({ session: w.session, deps: { clock } });
    const revision = (await w.session.store.load('r1'))!.revision;
    const settled = await reconcileAgentRun({ session: w.session });
    expect(settled).toEqual({ runId: 'r1', cancel: 'queued' });
    expect(settled.status).toBe('suspended');
    const kept = (await w.session.store.load('r1'))!;
    expect(kept.revision).toBe(revision);
    expect(kept.cancel).toEqual({ requestedAt: T });
    expect(await resumeAgent({ ...w.options, model: silent() })).toMatchObject({ status: 'stopped', reason: 'aborted' });
  });

  it('a second request keeps the first one and writes nothing', async () => {
    const w = world();
    await runAgent(w.options);
    await cancelAgentRun({ session: w.session, reason: 'first', deps: { clock } });
    const revision = (await w.session.store.load('r1'))!.revision;
    expect(await cancelAgentRun({ session: w.session, reason: 'second', deps: { clock: { now: () => T + 9 } } }))
      .toEqual({ runId: 'r1', outcome: 'already-queued', status: 'suspended', request: { requestedAt: T, reason: 'first' } });
    expect((await w.session.store.load('r1'))!.revision).toBe(revision);
  });

  it('survives the SQLite store: the request is in the record it reads back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-cancel-'));
    const ops = createSqliteOpsStore({ path: join(dir, 'ops.sqlite') });
    try {
      const w = world(ops.agentRuns);
      await runAgent(w.options);
      await cancelAgentRun({ session: w.session, reason: 'stop', lease: { provider: ops.leases }, deps: { clock } });
      expect((await ops.agentRuns.load('r1'))?.cancel).toEqual({ requestedAt: T, reason: 'stop' });
      expect(await resumeAgent({ ...w.options, model: silent(), lease: { provider: ops.leases } })).toMatchObject({ status: 'stopped', reason: 'aborted' });
      expect((await ops.agentRuns.load('r1'))?.cancel).toBeUndefined();
    } finally {
      ops.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('cancelAgentRun on other runs', () => {
  it('a drained run ends cancelled at its next resume, without a model call', async () => {
    const inner = createInMemoryLeaseProvider({ clock: createManualClock(0) });
    const leases = { ...inner, renew: async (lease: Parameters<typeof inner.renew>[0], ttl: number) => {
      const renewal = await inner.renew(lease, ttl);
      return renewal && { ...renewal, drain: true };
    } };
    const store = createInMemoryAgentRunStore();
    const session = { store, runId: 'd1', scope: 't' };
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const lookup = { parameters: { type: 'object' as const }, execute: async () => (await gate, 'found') };
    setTimeout(release, 40);
    const first = await runAgent({
      prompt: 'Look it up.', tools: { lookup }, session, lease: { provider: leases, owner: 'w1', ttlMs: 30 },
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'lookup', toolCallId: 'l1', args: {} }] }], strict: false }),
    });
    expect(first).toMatchObject({ status: 'stopped', reason: 'drained' });
    expect(await cancelAgentRun({ session, lease: { provider: inner } })).toMatchObject({ outcome: 'queued', status: 'drained' });
    const model = silent();
    expect(await resumeAgent({ model, tools: { lookup }, session })).toMatchObject({ status: 'stopped', reason: 'aborted' });
    expect(model.calls).toHaveLength(0);
  });

  it('a run whose process died in its tool: the restore runs nothing, an idempotent tool included', async () => {
    let runs = 0;
    const never = new Promise<never>(() => undefined);
    const sync = { parameters: { type: 'object' as const }, replay: 'idempotent' as const, execute: () => (++runs, never) };
    const inner = createInMemoryAgentRunStore();
    let executing!: AgentRunEnvelope;
    let died!: () => void;
    const dead = new Promise<void>((resolve) => (died = resolve));
    const store: AgentRunStore = {
      load: (id, o) => inner.load(id, o),
      save: async (e, o) => {
        await inner.save(e, o);
        if (e.receipts['0:s1']?.status === 'executing') {
          executing = structuredClone(e);
          died();
        }
      },
    };
    const abort = new AbortController();
    const dying = runAgent({
      prompt: 'Sync.', tools: { sync }, session: { store, runId: 'x1', scope: 't' }, abortSignal: abort.signal,
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'sync', toolCallId: 's1', args: {} }] }] }),
    });
    await dead;
    abort.abort();
    void dying;
    // A new process finds the record the dead one left: the call's receipt `executing`.
    const fresh = createInMemoryAgentRunStore();
    for (let revision = 1; revision <= executing.revision; revision += 1) await fresh.save({ ...structuredClone(executing), revision });
    const session = { store: fresh, runId: 'x1', scope: 't' };
    expect(await cancelAgentRun({ session })).toMatchObject({ outcome: 'queued', status: 'running' });
    const model = silent();
    expect(await resumeAgent({ model, tools: { sync }, session })).toMatchObject({ status: 'stopped', reason: 'aborted' });
    expect(runs).toBe(1);
    expect(model.calls).toHaveLength(0);
    expect((await fresh.load('x1'))?.status).toBe('stopped');
  });

  it('an executor driving the run without a lease finds out at its next save; the next resume ends the run', async () => {
    const inner = createInMemoryAgentRunStore();
    // Another process's view of the same runs: a store object of its own, so this process's run_busy check does not see it.
    const elsewhere: AgentRunStore = { load: (id, o) => inner.load(id, o), save: (e, o) => inner.save(e, o) };
    let queued: Promise<unknown> | undefined;
    let ran = 0;
    const slow = { parameters: { type: 'object' as const }, execute: async () => {
      ran++;
      queued = cancelAgentRun({ session: { store: elsewhere, runId: 'l1', scope: 't' }, deps: { clock } });
      await queued;
      return 'done';
    } };
    const session = { store: inner, runId: 'l1', scope: 't' };
    const first = await runAgent({
      prompt: 'Go.', tools: { slow }, session,
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'slow', toolCallId: 's1', args: {} }] }, { text: 'Done.' }] }),
    });
    expect(await queued).toMatchObject({ outcome: 'queued', status: 'running' });
    // Its save after the tool met the request's revision: it stops writing.
    expect(first).toMatchObject({ status: 'failed', error: { code: 'persistence_failed' } });
    expect((await inner.load('l1'))?.cancel).toEqual({ requestedAt: T });
    const model = silent();
    expect(await resumeAgent({ model, tools: { slow }, session })).toMatchObject({ status: 'stopped', reason: 'aborted' });
    expect(model.calls).toHaveLength(0);
    expect(ran).toBe(1);
  });

  it('a run that ended: nothing to cancel, nothing written', async () => {
    const store = createInMemoryAgentRunStore();
    const session = { store, runId: 'e1', scope: 't' };
    await runAgent({ prompt: 'Hi.', session, model: createMockModel({ responses: [{ text: 'Hello.' }] }) });
    const revision = (await store.load('e1'))!.revision;
    expect(await cancelAgentRun({ session })).toEqual({ runId: 'e1', outcome: 'ended', status: 'completed', request: null });
    expect((await store.load('e1'))!.revision).toBe(revision);
  });

  it('reconcileAgentRun drops a request a run that ended still carries', async () => {
    const store = createInMemoryAgentRunStore();
    const session = { store, runId: 'e2', scope: 't' };
    await runAgent({ prompt: 'Hi.', session, model: createMockModel({ responses: [{ text: 'Hello.' }] }) });
    // A record that ended with a request on it (written by another tool, or by hand).
    const ended = (await store.load('e2'))!;
    await store.save({ ...ended, cancel: { requestedAt: T }, revision: ended.revision + 1 });
    expect(await reconcileAgentRun({ session })).toEqual({ runId: 'e2', cancel: 'dropped' });
    const after = (await store.load('e2'))!;
    expect(after.revision).toBe(ended.revision + 2);
    expect(after.cancel).toBeUndefined();
    expect(after.result).toEqual(ended.result);
    expect(await reconcileAgentRun({ session })).toEqual({ runId: 'e2' });
  });
});

describe('cancelAgentRun refuses bad input with a typed error and writes nothing', () => {
  it('an unknown run, another scope, bad options, a held lease, a run this process drives', async () => {
    const w = world();
    await runAgent(w.options);
    const revision = (await w.session.store.load('r1'))!.revision;
    await expect(cancelAgentRun({ session: { ...w.session, runId: 'nope' } })).rejects.toSatisfy(
      (e: unknown) => RunIdentityError.isInstance(e) && e.code === 'run_not_found',
    );
    await expect(cancelAgentRun({ session: { ...w.session, scope: 'other' } })).rejects.toSatisfy(
      (e: unknown) => RunIdentityError.isInstance(e) && e.code === 'scope_mismatch',
    );
    await expect(cancelAgentRun({ session: w.session, reason: 7 as never })).rejects.toSatisfy((e: unknown) => InvalidOptionsError.isInstance(e));
    await expect(cancelAgentRun(null as never)).rejects.toSatisfy((e: unknown) => InvalidOptionsError.isInstance(e));
    await expect(cancelAgentRun({ session: { runId: 'r1' } as never })).rejects.toSatisfy((e: unknown) => InvalidOptionsError.isInstance(e));
    const leases = createInMemoryLeaseProvider({ clock: createManualClock(0) });
    const { agentRunLeaseKey } = await import('cairn/agent');
    await leases.acquire(agentRunLeaseKey(w.session), 'executor', 60_000);
    await expect(cancelAgentRun({ session: w.session, lease: { provider: leases } })).rejects.toSatisfy(
      (e: unknown) => AgentRunLeaseError.isInstance(e) && e.code === 'lease_held',
    );
    // This process is driving the run through the same store object.
    let cancelled: Promise<unknown> | undefined;
    const busy = { parameters: { type: 'object' as const }, execute: () => {
      cancelled = cancelAgentRun({ session: { ...w.session, runId: 'b1' } }).catch((e: unknown) => e);
      return 'ok';
    } };
    await runAgent({
      prompt: 'Go.', tools: { busy }, session: { ...w.session, runId: 'b1' },
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'busy', toolCallId: 'b', args: {} }] }, { text: 'Done.' }] }),
    });
    expect(RunBusyError.isInstance(await cancelled)).toBe(true);
    const after = (await w.session.store.load('r1'))!;
    expect(after.revision).toBe(revision);
    expect(after.cancel).toBeUndefined();
  });
});

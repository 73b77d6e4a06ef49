/**
 * agentRunLogic on its own and under a parent machine: each event it takes,
 * what it tells its parent and its listeners, what its persisted snapshot
 * holds, and a restore over each kind of stored run.
 */
import { describe, expect, it } from 'vitest';
import { createActor, setup, type AnyActorRef } from 'xstate';
import {
  CairnError, createInMemoryAgentRunStore, createInMemoryLeaseProvider, resumeAgent, runAgent,
  type AgentRunEnvelope, type AgentTools, type InMemoryAgentRunStore,
} from 'cairn/agent';
import { agentRunLogic, AgentRunFailedError, type AgentRunEmitted, type AgentRunLogicConfig } from 'cairn/embed';
import { createMockModel } from 'cairn/testing';
import { refundModel, refundTools, waitFor } from './helpers.js';

type Logic = ReturnType<typeof agentRunLogic<string>>;
type RunActor = ReturnType<typeof createActor<Logic>>;

const PROMPT = 'Refund order A-17, the mug arrived broken.';

function start(config: Partial<AgentRunLogicConfig> & { store: InMemoryAgentRunStore }, runId = 'r-1') {
  const effects: string[] = [];
  const logic = agentRunLogic({ model: refundModel(), tools: refundTools(effects), scope: 'support', ...config });
  const actor = createActor(logic, { input: { runId, prompt: PROMPT } });
  const events: AgentRunEmitted[] = [];
  actor.on('*', (e) => events.push(e));
  return { actor, effects, events, logic };
}

const approveFirst = (actor: RunActor) => {
  const [a] = actor.getSnapshot().context.pendingApprovals;
  actor.send({ type: 'cairn.verdict', approvalId: a!.approvalId, token: a!.token, approved: true });
};

/** A parent that records every event its child sends it. */
function parentOf(logic: Logic, input: { runId: string; prompt: string }) {
  const received: { type: string }[] = [];
  const machine = setup({ actors: { run: logic } }).createMachine({
    initial: 'running',
    states: {
      running: {
        invoke: { id: 'run', src: 'run', input, onDone: 'done', onError: 'failed' },
        on: { '*': { actions: ({ event }) => received.push(event) } },
      },
      done: { type: 'final' },
      failed: { type: 'final' },
    },
  });
  return { machine, received };
}

describe('agentRunLogic: events', () => {
  it('waits for the approval, takes the verdict, and ends with the run result as output; every run event is emitted', async () => {
    const store = createInMemoryAgentRunStore();
    const { actor, effects, events } = start({ store });
    actor.start();
    const waiting = await waitFor(actor, (s) => s.context.phase === 'waiting');
    expect(waiting.context.pendingApprovals).toMatchObject([{ toolName: 'refund', args: { orderId: 'A-17', amount: 20 } }]);
    expect(effects).toEqual([]);
    approveFirst(actor);
    const done = await waitFor(actor, (s) => s.status === 'done');
    expect(done.output).toMatchObject({ status: 'completed', output: 'Refunded 20 EUR on order A-17.', runId: 'r-1' });
    expect(effects).toEqual(['refund A-17 20']);
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t === 'run-start')).toHaveLength(2);
    expect(types).toContain('approval-request');
    expect(types).toContain('cairn.waiting');
    expect(types.at(-1)).toBe('result');
    expect((await store.load('r-1'))?.status).toBe('completed');
  });

  it('tells its parent when it waits (with what it waits for), and the parent gets the result as done output', async () => {
    const store = createInMemoryAgentRunStore();
    const { logic } = start({ store });
    const { machine, received } = parentOf(logic, { runId: 'r-p', prompt: PROMPT });
    const host = createActor(machine).start();
    await waitFor(host, () => received.some((e) => e.type === 'cairn.waiting'));
    const waiting = received.find((e) => e.type === 'cairn.waiting') as unknown as { runId: string; scope: string; actorId: string; pendingApprovals: { approvalId: string; token: string }[] };
    expect(waiting).toMatchObject({ runId: 'r-p', scope: 'support', actorId: 'run' });
    const [a] = waiting.pendingApprovals;
    (host.getSnapshot().children as Record<string, AnyActorRef>).run!.send({ type: 'cairn.verdict', approvalId: a!.approvalId, token: a!.token, approved: true });
    const end = await waitFor(host, (s) => s.status === 'done');
    expect(end.value).toBe('done');
  });

  it('queues a verdict that arrives while the leg still runs, and delivers it once the run is at rest', async () => {
    const store = createInMemoryAgentRunStore();
    const { actor, effects, events } = start({ store });
    // Answer from the approval request itself, while the leg that issued it has not ended yet.
    // (XState reports a listener's throw asynchronously: what it saw is asserted after the run.)
    const seen: { phase: string; queued: number }[] = [];
    actor.on('approval-request', (e) => {
      const phase = actor.getSnapshot().context.phase;
      actor.send({ type: 'cairn.verdict', approvalId: e.approval.approvalId, token: e.approval.token, approved: true });
      seen.push({ phase, queued: actor.getSnapshot().context.queued.approvalResponses.length });
    });
    actor.start();
    const done = await waitFor(actor, (s) => s.status === 'done');
    expect(seen).toEqual([{ phase: 'running', queued: 1 }]);
    expect(done.output?.status).toBe('completed');
    expect(effects).toEqual(['refund A-17 20']);
    expect(events.filter((e) => e.type === 'run-start')).toHaveLength(2);
  });

  it('holds a verdict until every pending approval has one, and persists the held verdict', async () => {
    const store = createInMemoryAgentRunStore();
    const paid: string[] = [];
    const tools: AgentTools = {
      refund: {
        parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
        needsApproval: true,
        execute: ({ orderId }: { orderId: string }) => void paid.push(orderId),
      },
    };
    const model = createMockModel({
      responses: [
        { toolCalls: [{ toolName: 'refund', args: { orderId: 'A' }, toolCallId: 'a' }, { toolName: 'refund', args: { orderId: 'B' }, toolCallId: 'b' }] },
        { text: 'Both refunded.' },
      ],
    });
    const actor = createActor(agentRunLogic({ model, tools, store, scope: 's' }), { input: { runId: 'two', prompt: 'x' } }).start();
    const waiting = await waitFor(actor, (s) => s.context.phase === 'waiting');
    const [first, second] = waiting.context.pendingApprovals;
    actor.send({ type: 'cairn.verdict', approvalId: first!.approvalId, token: first!.token, approved: true });
    expect(actor.getSnapshot().context.phase).toBe('waiting');
    const persisted = actor.getPersistedSnapshot() as unknown as { context: { queued: { approvalResponses: unknown[] } } };
    expect(persisted.context.queued.approvalResponses).toEqual([{ approvalId: first!.approvalId, token: first!.token, approved: true }]);
    actor.send({ type: 'cairn.verdict', approvalId: second!.approvalId, token: second!.token, approved: false, reason: 'Not B.' });
    const done = await waitFor(actor, (s) => s.status === 'done');
    expect(done.output?.text).toBe('Both refunded.');
    expect(paid).toEqual(['A']);
  });

  it('takes a client tool result', async () => {
    const store = createInMemoryAgentRunStore();
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'pickColor', args: {}, toolCallId: 'c' }] }, { text: 'Teal.' }] });
    const tools: AgentTools = { pickColor: { parameters: { type: 'object' } } };
    const actor = createActor(agentRunLogic({ model, tools, store, scope: 's' }), { input: { runId: 'c-1', prompt: 'x' } }).start();
    const waiting = await waitFor(actor, (s) => s.context.phase === 'waiting');
    expect(waiting.context.pendingClientCalls).toMatchObject([{ toolCallId: 'c', toolName: 'pickColor' }]);
    actor.send({ type: 'cairn.client-result', toolCallId: 'c', output: { color: 'teal' } });
    const done = await waitFor(actor, (s) => s.status === 'done');
    expect(done.output?.status).toBe('completed');
    const tool = done.output!.messages.find((m) => m.role === 'tool');
    expect(JSON.stringify(tool)).toContain('teal');
  });

  it('ignores a malformed verdict with a warning, and keeps waiting', async () => {
    const store = createInMemoryAgentRunStore();
    const { actor, events } = start({ store });
    actor.start();
    await waitFor(actor, (s) => s.context.phase === 'waiting');
    actor.send({ type: 'cairn.verdict', approvalId: 'x', approved: 'yes' as unknown as boolean });
    expect(events.at(-1)).toMatchObject({ type: 'warning', setting: 'cairn.verdict' });
    expect(actor.getSnapshot()).toMatchObject({ status: 'active', context: { phase: 'waiting', queued: { approvalResponses: [] } } });
  });

  it('cancel aborts the leg in flight: the run stops as aborted and the actor ends with that result', async () => {
    const store = createInMemoryAgentRunStore();
    let began!: () => void;
    const running = new Promise<void>((r) => (began = r));
    const tools: AgentTools = {
      slow: {
        parameters: { type: 'object' },
        execute: (_args: unknown, { signal }) => new Promise((_resolve, reject) => {
          began();
          signal.addEventListener('abort', () => reject(new Error('aborted')));
        }),
      },
    };
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'slow', args: {} }] }, { text: 'never' }] });
    const actor = createActor(agentRunLogic({ model, tools, store, scope: 's' }), { input: { runId: 'k', prompt: 'x' } }).start();
    await running;
    actor.send({ type: 'cairn.cancel' });
    const done = await waitFor(actor, (s) => s.status === 'done');
    expect(done.output).toMatchObject({ status: 'stopped', reason: 'aborted' });
    expect((await store.load('k'))?.status).toBe('stopped');
  });

  it('cancel while the run waits ends the actor with the suspension, and leaves the stored run as it was', async () => {
    const store = createInMemoryAgentRunStore();
    const { actor } = start({ store });
    actor.start();
    await waitFor(actor, (s) => s.context.phase === 'waiting');
    const before = await store.load('r-1');
    actor.send({ type: 'cairn.cancel' });
    const done = await waitFor(actor, (s) => s.status === 'done');
    expect(done.output?.status).toBe('suspended');
    expect(await store.load('r-1')).toEqual(before);
  });

  it('drain stops the leg at the next step boundary through the lease; cairn.resume goes on in this process', async () => {
    const leases = createInMemoryLeaseProvider();
    const store = createInMemoryAgentRunStore([], { leases });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const effects: string[] = [];
    const tools = refundTools(effects, { lookup: () => gate });
    const logic = agentRunLogic({ model: refundModel(), tools, store, scope: 'support', lease: { provider: leases, ttlMs: 300 } });
    const { machine, received } = parentOf(logic, { runId: 'd-1', prompt: PROMPT });
    const host = createActor(machine).start();
    const run = (host.getSnapshot().children as Record<string, RunActor>).run!;
    await waitFor(run, (s) => s.context.phase === 'running' && s.context.start === null);
    run.send({ type: 'cairn.drain' });
    // Give a renewal (every ttlMs / 3) the time to carry the request, then let the tool finish.
    await new Promise((r) => setTimeout(r, 250));
    release();
    const drained = await waitFor(run, (s) => s.context.phase === 'drained' || s.status !== 'active');
    expect(drained.status, JSON.stringify(drained.error ?? null)).toBe('active');
    expect(received.map((e) => e.type)).toContain('cairn.drained');
    expect((await store.load('d-1'))?.status).toBe('drained');
    expect(run.getPersistedSnapshot()).toMatchObject({ status: 'active', context: { phase: 'drained' } });
    run.send({ type: 'cairn.resume' });
    await waitFor(run, (s) => s.context.phase === 'waiting');
    expect(effects).toEqual([]);
  });

  it('a failed run fails the actor with AgentRunFailedError, a CairnError with the run result', async () => {
    const store = createInMemoryAgentRunStore();
    const model = createMockModel({ responses: [{ error: { status: 400, message: 'bad request' } }] });
    const actor = createActor(agentRunLogic({ model, store, scope: 's' }), { input: { runId: 'f', prompt: 'x' } });
    const errors: unknown[] = [];
    actor.subscribe({ error: (e) => errors.push(e) });
    actor.start();
    await waitFor(actor, (s) => s.status === 'error');
    const error = errors[0];
    expect(AgentRunFailedError.isInstance(error)).toBe(true);
    expect(CairnError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'model_call_failed', runId: 'f', result: { status: 'failed' } });
  });

  it('refuses input without a scope or a prompt', () => {
    const store = createInMemoryAgentRunStore();
    const logic = agentRunLogic({ model: refundModel(), store });
    const noScope = createActor(logic, { input: { prompt: 'x' } });
    noScope.subscribe({ error: () => undefined });
    expect(noScope.getSnapshot().status).toBe('error');
    expect(noScope.getSnapshot().error).toMatchObject({ code: 'invalid_options' });
    const noPrompt = createActor(agentRunLogic({ model: refundModel(), store, scope: 's' }), { input: {} });
    noPrompt.subscribe({ error: () => undefined });
    expect(noPrompt.getSnapshot().error).toMatchObject({ code: 'invalid_options' });
  });
});

describe('agentRunLogic: the persisted snapshot', () => {
  it('holds the identity, the phase and held answers: no transcript, no receipts, no result; the prompt only until the first save', async () => {
    const store = createInMemoryAgentRunStore();
    const { actor } = start({ store, system: 'SYSTEM-MARKER' });
    expect(actor.getPersistedSnapshot()).toMatchObject({ context: { start: { prompt: PROMPT } } });
    actor.start();
    await waitFor(actor, (s) => s.context.phase === 'waiting');
    expect(actor.getPersistedSnapshot()).toEqual({
      status: 'active', output: undefined, error: undefined,
      context: {
        runId: 'r-1', scope: 'support', phase: 'waiting', start: null, inFlight: null, cancelled: false,
        queued: { approvalResponses: [], clientToolResults: [], retryToolCallIds: [], reconciledToolResults: [] },
      },
    });
    approveFirst(actor);
    await waitFor(actor, (s) => s.status === 'done');
    const done = JSON.stringify(actor.getPersistedSnapshot());
    for (const marker of ['SYSTEM-MARKER', 'LOOKUP-SECRET', 'REFUND-RECEIPT', 'Refunded', PROMPT]) expect(done).not.toContain(marker);
    expect(JSON.parse(done)).toMatchObject({ status: 'done', context: { phase: 'ended' } });
  });
});

describe('agentRunLogic: restore', () => {
  const restore = (logic: Logic, persisted: unknown) => {
    const actor = createActor(logic, { snapshot: JSON.parse(JSON.stringify(persisted)) as never });
    const events: AgentRunEmitted[] = [];
    actor.on('*', (e) => events.push(e));
    return { actor, events };
  };

  it('a run that was running when its process died is resumed from its store', async () => {
    const store = createInMemoryAgentRunStore();
    const effects: string[] = [];
    let began!: () => void;
    const inLookup = new Promise<void>((r) => (began = r));
    // The first process: the lookup never returns.
    const hanging = agentRunLogic({
      model: refundModel(), scope: 'support', store,
      tools: refundTools(effects, { lookup: () => (began(), new Promise(() => undefined)) }),
    });
    const dying = createActor(hanging, { input: { runId: 'crash', prompt: PROMPT } }).start();
    await inLookup;
    const persisted = dying.getPersistedSnapshot();
    expect(persisted).toMatchObject({ context: { phase: 'running', start: null } });
    // The next process: a store holding what the first one wrote, a fresh logic.
    const copy = createInMemoryAgentRunStore([(await store.load('crash')) as AgentRunEnvelope]);
    const { actor, events } = restore(agentRunLogic({ model: refundModel(), tools: refundTools(effects), store: copy, scope: 'support' }), persisted);
    actor.start();
    await waitFor(actor, (s) => s.context.phase === 'waiting');
    expect(events.find((e) => e.type === 'run-start')).toMatchObject({ resumed: true });
    approveFirst(actor);
    await waitFor(actor, (s) => s.status === 'done');
    expect(effects).toEqual(['refund A-17 20']);
  });

  it('a suspended run says again what it waits for, to its parent too', async () => {
    const store = createInMemoryAgentRunStore();
    const { actor } = start({ store });
    actor.start();
    await waitFor(actor, (s) => s.context.phase === 'waiting');
    const persisted = actor.getPersistedSnapshot();
    actor.stop();
    const { machine, received } = parentOf(start({ store }).logic, { runId: 'r-1', prompt: PROMPT });
    const host = createActor(machine);
    const hostSnapshot = JSON.parse(JSON.stringify(host.getPersistedSnapshot()));
    hostSnapshot.children = { run: { src: 'run', snapshot: persisted } };
    const restored = createActor(machine, { snapshot: hostSnapshot }).start();
    await waitFor(restored, () => received.some((e) => e.type === 'cairn.waiting'));
    const child = (restored.getSnapshot().children as Record<string, RunActor>).run!;
    expect(child.getSnapshot().context.pendingApprovals).toHaveLength(1);
    approveFirst(child);
    await waitFor(restored, (s) => s.status === 'done');
  });

  it('a run that completed meanwhile completes the actor with its stored result', async () => {
    const store = createInMemoryAgentRunStore();
    const { actor } = start({ store });
    actor.start();
    const waiting = await waitFor(actor, (s) => s.context.phase === 'waiting');
    const persisted = actor.getPersistedSnapshot();
    actor.stop();
    // Someone else answered it, outside the host.
    const [a] = waiting.context.pendingApprovals;
    const other = await resumeAgent({
      model: refundModel(), tools: refundTools([]), session: { store, runId: 'r-1', scope: 'support' },
      approvalResponses: [{ approvalId: a!.approvalId, token: a!.token, approved: true }],
    });
    expect(other.status).toBe('completed');
    const effects: string[] = [];
    const { actor: again } = restore(agentRunLogic({ model: createMockModel({ responses: [] }), tools: refundTools(effects), store, scope: 'support' }), persisted);
    again.start();
    const done = await waitFor(again, (s) => s.status === 'done');
    expect(done.output).toEqual(other);
    expect(effects).toEqual([]);
  });

  it('a done actor restores by reading its result from the store again', async () => {
    const store = createInMemoryAgentRunStore();
    const { actor } = start({ store });
    actor.start();
    await waitFor(actor, (s) => s.context.phase === 'waiting');
    approveFirst(actor);
    const done = await waitFor(actor, (s) => s.status === 'done');
    const { actor: again } = restore(agentRunLogic({ model: createMockModel({ responses: [] }), store, tools: refundTools([]), scope: 'support' }), actor.getPersistedSnapshot());
    again.start();
    expect((await waitFor(again, (s) => s.status === 'done')).output).toEqual(done.output);
  });

  it('a failed run fails the restored actor', async () => {
    const store = createInMemoryAgentRunStore();
    const model = createMockModel({ responses: [{ error: { status: 400, message: 'bad request' } }] });
    const stored = await runAgent({ model, prompt: 'x', session: { store, runId: 'gone', scope: 's' } });
    expect(stored.status).toBe('failed');
    const persisted = { status: 'active', output: undefined, error: undefined, context: { runId: 'gone', scope: 's', phase: 'running', start: null, queued: null, inFlight: null, cancelled: false } };
    const { actor } = restore(agentRunLogic({ model: createMockModel({ responses: [] }), store, scope: 's' }), persisted);
    actor.subscribe({ error: () => undefined });
    actor.start();
    const failed = await waitFor(actor, (s) => s.status === 'error');
    expect(failed.error).toMatchObject({ name: 'AgentRunFailedError', code: 'model_call_failed', runId: 'gone' });
  });

  it('a restore cut off before the first save starts the run from the start input it kept', async () => {
    const store = createInMemoryAgentRunStore();
    const { logic } = start({ store });
    const never = createActor(logic, { input: { runId: 'fresh', prompt: PROMPT } });
    const persisted = never.getPersistedSnapshot();
    expect(await store.load('fresh')).toBeUndefined();
    const { actor } = restore(logic, persisted);
    actor.start();
    await waitFor(actor, (s) => s.context.phase === 'waiting');
    expect((await store.load('fresh'))?.status).toBe('suspended');
  });

  it('refuses a persisted snapshot that is not one of an embedded run', () => {
    const store = createInMemoryAgentRunStore();
    const actor = createActor(agentRunLogic({ model: refundModel(), store, scope: 's' }), { snapshot: { status: 'active', context: {} } as never });
    actor.subscribe({ error: () => undefined });
    expect(actor.getSnapshot().status).toBe('error');
    expect(actor.getSnapshot().error).toMatchObject({ code: 'invalid_envelope' });
  });
});

/**
 * The run's persisted snapshot is made in one walk (src/runtime/persisted-json.ts) instead of XState's
 * getPersistedSnapshot followed by a JSON copy. The two must give the same JSON: at every save of real runs
 * (approvals, client calls, a failing tool, a batch of calls, a resume), and for machines with what a run's do not
 * hold yet (history states, an actor in the context, spawned and promise children, a final state's output, an error),
 * and refuses a child given inline, which no restore could read.
 */
import { createActor, createMachine, fromPromise, assign, setup, spawnChild, type AnyActorRef } from 'xstate';
import { describe, expect, it, vi } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentOptions, type AgentRunStore } from '../../src/agent/index.js';
import { toJson } from '../../src/agent/json.js';
import { createMockModel } from '../../src/testing/index.js';
import { machineJson } from '../../src/runtime/persisted-json.js';

/** Every save's pair: the one-walk snapshot the engine saved, and XState's persisted form copied through JSON. */
const pairs: { ours: unknown; xstate: unknown }[] = [];

vi.mock('../../src/runtime/host-record.js', async (importOriginal) => {
  const mod = await importOriginal<typeof import('../../src/runtime/host-record.js')>();
  return {
    ...mod,
    persistedOf(actor: Parameters<typeof mod.persistedOf>[0]) {
      const ours = mod.persistedOf(actor);
      const snapshot = actor.getSnapshot();
      const xstate = JSON.parse(JSON.stringify(actor.logic.getPersistedSnapshot(
        { ...snapshot, context: { ...snapshot.context, messages: [], receipts: [] } } as typeof snapshot)));
      // Compared as JSON text: same keys, same order, same values.
      pairs.push({ ours: JSON.stringify({ ...ours, context: { ...ours.context, messages: [], receipts: [] } }), xstate: JSON.stringify(xstate) });
      return ours;
    },
  };
});

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
const turn = (calls: { id: string; name: string }[]) => ({
  text: '', toolCalls: calls.map((c) => ({ toolCallId: c.id, toolName: c.name, args: { n: 1 } })), finishReason: 'tool-calls' as const, usage,
});
const answer = { text: 'done', toolCalls: [], finishReason: 'stop' as const, usage };

function options(store: AgentRunStore, responses: unknown[]): AgentOptions {
  return {
    model: createMockModel({ responses: responses as never }),
    prompt: 'Go.',
    bindingId: 'persisted-json',
    session: { store, runId: 'pj-1', scope: 's' },
    tools: {
      lookup: { parameters: { type: 'object' }, execute: () => ({ found: true, at: undefined, list: [1, undefined, 'x'] }) },
      broken: { parameters: { type: 'object' }, execute: () => { throw new Error('no luck'); } },
      pay: { parameters: { type: 'object' }, needsApproval: true, execute: () => 'paid' },
      ask: { parameters: { type: 'object' } },
    },
  };
}

describe('the one-walk persisted snapshot', () => {
  it('equals XState\'s persisted form copied through JSON at every save of a run that suspends and resumes', async () => {
    pairs.length = 0;
    const store = createInMemoryAgentRunStore();
    const first = await runAgent(options(store, [
      turn([{ id: 'a', name: 'lookup' }, { id: 'b', name: 'broken' }]),
      turn([{ id: 'p', name: 'pay' }, { id: 'q', name: 'ask' }]),
    ]));
    if (first.status !== 'suspended') throw new Error(`the run ended ${first.status}`);
    const [approval] = first.pendingApprovals;
    const second = await resumeAgent({
      ...options(store, [answer]),
      approvalResponses: [{ approvalId: approval!.approvalId, token: approval!.token, approved: true }],
      clientToolResults: [{ toolCallId: 'q', result: 'answered' }],
    } as never);
    expect(second.status).toBe('completed');
    expect(pairs.length).toBeGreaterThan(6);
    for (const { ours, xstate } of pairs) expect(ours).toBe(xstate);
  });

  it('equals it for history states, an actor in the context, spawned and promise children, a system id, output and error', async () => {
    const child = createMachine({ id: 'child', initial: 'waiting', context: { n: 1, gone: undefined }, states: { waiting: {} } });
    const machine = setup({
      actors: { child, later: fromPromise(async () => new Promise<never>(() => undefined)) },
    }).createMachine({
      id: 'parent',
      initial: 'a',
      context: { ref: null as AnyActorRef | null, list: [1, undefined, () => 1], nested: { when: new Date(5), skip: undefined } },
      invoke: [{ id: 'kid', src: 'child', systemId: 'kid-system' }, { id: 'promise', src: 'later' }],
      states: {
        a: {
          initial: 'a1',
          states: { a1: { on: { NEXT: 'a2' } }, a2: {}, hist: { type: 'history', history: 'deep' } },
          on: { LEAVE: 'b' },
        },
        b: {
          entry: [assign({ ref: ({ spawn }) => spawn('child', { id: 'spawned' }) }), spawnChild('child', { id: 'second' })],
          on: { BACK: 'a.hist', END: 'done' },
        },
        done: { type: 'final', output: { answer: 42, none: undefined } },
      },
    });
    const actor = createActor(machine).start();
    const check = () => {
      const expected = JSON.stringify(toJson(actor.getPersistedSnapshot()));
      expect(JSON.stringify(machineJson(actor.getSnapshot() as never))).toBe(expected);
    };
    check();
    actor.send({ type: 'NEXT' });
    check();
    actor.send({ type: 'LEAVE' });
    check();
    actor.send({ type: 'BACK' });
    check();
    actor.send({ type: 'LEAVE' });
    actor.send({ type: 'END' });
    check();
    actor.stop();

    // A child given inline has no src to restore it from: refused, as XState's development build refuses it.
    const inline = createActor(createMachine({ entry: spawnChild(createMachine({}), { id: 'inline' }) })).start();
    expect(() => machineJson(inline.getSnapshot() as never)).toThrow('An inline child actor cannot be persisted.');
    inline.stop();

    const failing = createActor(setup({ actors: { fails: fromPromise(async () => { throw new Error('x'); }) } }).createMachine({ invoke: { src: 'fails' } }));
    failing.subscribe({ error: () => undefined });
    failing.start();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(failing.getSnapshot().status).toBe('error');
    expect(JSON.stringify(machineJson(failing.getSnapshot() as never))).toBe(JSON.stringify(toJson(failing.getPersistedSnapshot())));
  });

  it('leaves the snapshot it copies as it was, and shares nothing with it', () => {
    const actor = createActor(createMachine({ context: { deep: { list: [{ a: 1 }] } }, initial: 'x', states: { x: {} } })).start();
    const snapshot = actor.getSnapshot();
    const copy = machineJson(snapshot as never) as { context: { deep: { list: { a: number }[] } } };
    expect(copy.context).toEqual(snapshot.context);
    expect(copy.context.deep).not.toBe(snapshot.context.deep);
    copy.context.deep.list[0]!.a = 2;
    expect(snapshot.context.deep.list[0]!.a).toBe(1);
  });
});

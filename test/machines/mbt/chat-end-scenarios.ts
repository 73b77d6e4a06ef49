/**
 * The run machine's chat projection at the ends that are not a completion
 * (machines/run-chat.ts): a stop and a failure make their terminal commit,
 * then write the chat; a run without a store writes it without a commit; a
 * lost lease during that write leaves the result as it was; a drain writes
 * the chat after its checkpoint and saves where the write left it; a cancel
 * queued for a suspended run ends it at its next resume. Joined to
 * RUN_SCENARIOS, so they count toward the run chart's coverage.
 */
import { expect } from 'vitest';
import { createMockModel } from 'cairn/testing';
import { cancelAgentRun, type AgentTool, type LeaseProvider } from 'cairn/agent';
import { createInMemoryChatStore } from '../../../src/chat/in-memory.js';
import type { RunInput } from '../../../machines/index.js';
import type { RunScenario } from './run-scenarios.js';
import { chatInput, losingLease, slowChats } from './chat-seams.js';
import { signal, T0 } from './harness.js';
import { ev, RESTORE, type RunModelEvent } from './run-model.js';

const S = ev.saved;
const scope = { userId: 'ada' };
const chatDone = (cursor: number): RunModelEvent => ({ type: 'xstate.done.actor.writeChat', output: { status: 'written', cursor } });
const call = { toolCallId: 'c1', toolName: 'lookup', args: {} };
const lookup: AgentTool = { description: 'Look a fact up.', parameters: { type: 'object', properties: {} }, execute: () => ({ answer: 42 }) };
const noStore: Partial<RunInput> = { plan: { durable: false, policy: false, calls: {} } };

/** A lease whose renewals all carry a drain request; `seen` settles once the leg had the time to hand DRAIN to the run. */
function drainingLease() {
  const renewed = signal();
  const provider: LeaseProvider = {
    acquire: async (key, owner, ttlMs) => ({ key, owner, token: 1, expiresAt: T0 + ttlMs }),
    renew: async (lease) => {
      renewed.resolve();
      return { lease, drain: true };
    },
    release: async () => undefined,
    requestDrain: async () => undefined,
    inspect: async () => null,
  };
  const seen = renewed.promise.then(() => new Promise((r) => setTimeout(r, 0)));
  return { seen, lease: { provider, ttlMs: 30 } };
}

const publish = { toolCallId: 'c1', toolName: 'publish', args: {} };
const suspendOnPublish: RunModelEvent[] = [
  S('saveStart'), ev.turn(0, { toolCalls: [publish] }),
  ev.toCall('call-0-0', { type: 'xstate.done.actor.guardCall', output: { kind: 'allow' } }),
  ev.toCall('call-0-0', { type: 'xstate.done.actor.checkArguments', output: { kind: 'valid' } }),
  ev.toCall('call-0-0', { type: 'xstate.done.actor.decideApproval', output: { kind: 'wait' } }),
  ev.toCall('call-0-0', { type: 'xstate.done.actor.issueApproval', output: { approvalId: 'c1@approval', token: 'token-1', client: false } }),
  S('saveSuspension'),
];
const cancelDetails = { cancel: { requestedAt: T0, reason: 'withdrawn' } };

const stopAtMaxSteps = [S('saveStart'), ev.turn(0, { toolCalls: [call] }), ev.callEnded('call-0-0'), S('saveStep')];

export const CHAT_END_SCENARIOS: RunScenario[] = [
  {
    name: 'chat: max-steps → stopping: the terminal commit, then the chat write → stopped',
    input: { ...chatInput, toolNames: ['lookup'], maxSteps: 1 },
    path: [...stopAtMaxSteps, S('saveEnd'), chatDone(3)],
    drive: async (h) => {
      const chats = createInMemoryChatStore();
      await h.start({
        ...h.base(), prompt: 'Look it up.', tools: { lookup }, maxSteps: 1, chat: { store: chats, chatId: 'c1', scope },
        model: createMockModel({ responses: [{ toolCalls: [call] }] }),
      });
      expect((await chats.loadChat('c1'))?.messageIds).toEqual(['mbt-run:0', 'mbt-run:1', 'mbt-run:2']);
    },
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'stopped', reason: 'max-steps' });
      // The commit stored the result before the chat was written; the last save records the write.
      const commit = run.store.saved.find((e) => e.status === 'stopped');
      expect(commit).toMatchObject({ result: { status: 'stopped' }, chat: { status: 'pending', cursor: 0 } });
      expect(run.store.last()).toMatchObject({ status: 'stopped', chat: { status: 'written', cursor: 3 } });
    },
  },
  {
    name: 'chat: model error → failing: the terminal commit, then the chat write → failed',
    input: chatInput,
    path: [S('saveStart'), ev.modelThrew(), S('saveEnd'), chatDone(1)],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'Hi.', chat: { store: createInMemoryChatStore(), chatId: 'c1', scope },
      model: createMockModel({ responses: [{ error: { status: 400, message: 'bad request' } }] }),
    })),
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'failed', error: { code: 'model_call_failed' } });
      expect(run.store.last()).toMatchObject({ status: 'failed', chat: { status: 'written', cursor: 1 } });
    },
  },
  {
    name: 'chat without a session: max-steps → stopping writes the chat (nothing to commit) → stopped',
    input: { ...chatInput, ...noStore, toolNames: ['lookup'], maxSteps: 1 },
    path: [S('saveStart'), ev.turn(0, { toolCalls: [call] }), ev.callEnded('call-0-0'), chatDone(3)],
    drive: async (h) => {
      const { session: _session, ...rest } = h.base();
      const chats = createInMemoryChatStore();
      const leg = await h.start({
        ...rest, prompt: 'Look it up.', tools: { lookup }, maxSteps: 1, chat: { store: chats, chatId: 'c1', scope },
        model: createMockModel({ responses: [{ toolCalls: [call] }] }),
      });
      expect((await chats.loadChat('c1'))?.messages).toEqual(leg.result.messages);
      expect(h.store.saved).toHaveLength(0);
    },
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'max-steps' }),
  },
  {
    name: 'chat without a session: model error → failing writes the chat (nothing to commit) → failed',
    input: { ...chatInput, ...noStore },
    path: [S('saveStart'), ev.modelThrew(), chatDone(1)],
    drive: async (h) => {
      const { session: _session, ...rest } = h.base();
      const chats = createInMemoryChatStore();
      const leg = await h.start({ ...rest, prompt: 'Hi.', chat: { store: chats, chatId: 'c1', scope }, model: createMockModel({ responses: [{ error: { status: 400 } }] }) });
      // A run without a session gets an id of its own.
      expect((await chats.loadChat('c1'))?.messageIds).toEqual([`${leg.result.runId}:0`]);
    },
    check: (run) => expect(run.last).toMatchObject({ status: 'failed' }),
  },
  {
    name: 'chat: the lease is lost during a stop\'s chat write → still stopped, nothing more is saved',
    input: { ...chatInput, toolNames: ['lookup'], maxSteps: 1 },
    path: [...stopAtMaxSteps, S('saveEnd'), ev.storeFailed(), chatDone(3)],
    drive: async (h) => void (await h.start({
      ...h.base(), lease: { provider: losingLease, ttlMs: 30 }, chat: { store: slowChats(), chatId: 'c1', scope },
      prompt: 'Look it up.', tools: { lookup }, maxSteps: 1, model: createMockModel({ responses: [{ toolCalls: [call] }] }),
    })),
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'stopped', reason: 'max-steps' });
      expect(run.store.last()).toMatchObject({ status: 'stopped', chat: { status: 'pending' } });
    },
  },
  {
    name: 'chat: the lease is lost during a failure\'s chat write → still failed with the model\'s error',
    input: chatInput,
    path: [S('saveStart'), ev.modelThrew(), S('saveEnd'), ev.storeFailed(), chatDone(1)],
    drive: async (h) => void (await h.start({
      ...h.base(), lease: { provider: losingLease, ttlMs: 30 }, chat: { store: slowChats(), chatId: 'c1', scope },
      prompt: 'Hi.', model: createMockModel({ responses: [{ error: { status: 400, message: 'bad request' } }] }),
    })),
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'failed', error: { code: 'model_call_failed' } });
      expect(run.store.last()).toMatchObject({ status: 'failed', chat: { status: 'pending' } });
    },
  },
  {
    name: 'chat: drained at a model-step boundary → the drain\'s checkpoint, the chat write, its record → drained',
    input: { ...chatInput, toolNames: ['lookup'] },
    path: [S('saveStart'), ev.drain(), ev.turn(0, { toolCalls: [call] }), ev.callEnded('call-0-0'), S('saveStep'), S('saveDrain'), chatDone(3), S('saveChat')],
    drive: async (h) => {
      const lease = drainingLease();
      const chats = createInMemoryChatStore();
      const model = createMockModel({ responses: [async () => (await lease.seen, { toolCalls: [call] })] });
      const leg = await h.start({ ...h.base(), prompt: 'Look it up.', tools: { lookup }, model, lease: lease.lease, chat: { store: chats, chatId: 'c1', scope } });
      expect(leg.result).toMatchObject({ status: 'stopped', reason: 'drained' });
      expect((await chats.loadChat('c1'))?.messageIds).toEqual(['mbt-run:0', 'mbt-run:1', 'mbt-run:2']);
    },
    check: (run) => expect(run.store.last()).toMatchObject({ status: 'drained', chat: { status: 'written', cursor: 3 } }),
  },
  {
    name: 'a cancel queued for a suspended run: the next resume restores it and hands it CANCEL → stopped (aborted), no model call, no tool',
    input: { toolNames: ['publish'] },
    path: [...suspendOnPublish, RESTORE, ev.restored(), { type: 'CANCEL', details: cancelDetails }],
    drive: async (h) => {
      let sent = 0;
      const tools = { publish: { parameters: { type: 'object' as const }, needsApproval: true, execute: () => ++sent } };
      const first = await h.start({ ...h.base(), prompt: 'Publish.', tools, model: createMockModel({ responses: [{ toolCalls: [publish] }] }) });
      expect(first.result.status).toBe('suspended');
      const session = h.base().session!;
      expect(await cancelAgentRun({ session, reason: 'withdrawn', deps: { clock: { now: () => T0 } } })).toMatchObject({ outcome: 'queued' });
      const model = createMockModel({ responses: [] });
      await h.resume({ ...h.base(), tools, model });
      expect(model.calls).toHaveLength(0);
      expect(sent).toBe(0);
    },
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'stopped', reason: 'aborted', stopDetails: cancelDetails });
      expect(run.store.last()).toMatchObject({ status: 'stopped' });
      expect(run.store.last()?.cancel).toBeUndefined();
    },
  },
];

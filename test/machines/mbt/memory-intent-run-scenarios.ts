/**
 * The run machine's end for a run that extracts memory (machines/run-memory.ts):
 * the terminal commit, the memory-intent child, and a save that fails after
 * the commit. Joined to RUN_SCENARIOS, so they count toward the run chart's coverage.
 */
import { expect } from 'vitest';
import { createMockModel } from 'cairn/testing';
import { createInMemoryChatStore } from '../../../src/chat/in-memory.js';
import type { RunInput } from '../../../machines/index.js';
import { createInMemoryMemoryStore } from '../../../src/memory/in-memory.js';
import type { AgentMemoryOptions } from '../../../src/memory/run-types.js';
import type { RunScenario } from './run-scenarios.js';
import { chatInput, losingLease, slowChats } from './chat-seams.js';
import { ev, type RunModelEvent } from './run-model.js';

const S = ev.saved;

function memoryOf(h: { clock: { now(): number } }): AgentMemoryOptions {
  let n = 0;
  return {
    seams: {
      store: createInMemoryMemoryStore(),
      llm: ({ system }) => (system.includes('extract') ? '{"facts":["likes tea"]}' : '{"memory":[{"event":"ADD","text":"likes tea"}]}'),
      clock: { now: () => h.clock.now(), setTimeout: () => () => undefined },
      generateId: () => `m-${++n}`,
    },
    scope: { userId: 'ada' },
  };
}

const memoryInput: Partial<RunInput> = {
  memory: { scope: { userId: 'ada' }, recall: { status: 'recalled', count: 0 }, operationId: 'id-1', inputCount: 1, extraction: null },
};

const intentDone = (status: 'completed' | 'failed'): RunModelEvent => ({
  type: 'xstate.done.actor.memoryIntent',
  output: { operationId: 'id-1', status, planned: status === 'completed' ? 1 : null, deletes: 0, mutations: status === 'completed' ? 1 : 0, error: null },
});

const chatDone: RunModelEvent = { type: 'xstate.done.actor.writeChat', output: { status: 'written', cursor: 2 } };

const publish = { toolCallId: 'c1', toolName: 'publish', args: {} };
const suspendOnPublish: RunModelEvent[] = [
  S('saveStart'), ev.turn(0, { toolCalls: [publish] }),
  ev.toCall('call-0-0', { type: 'xstate.done.actor.guardCall', output: { kind: 'allow' } }),
  ev.toCall('call-0-0', { type: 'xstate.done.actor.checkArguments', output: { kind: 'valid' } }),
  ev.toCall('call-0-0', { type: 'xstate.done.actor.decideApproval', output: { kind: 'wait' } }),
  ev.toCall('call-0-0', { type: 'xstate.done.actor.issueApproval', output: { approvalId: 'c1@approval', token: 'token-1', client: false } }),
  S('saveSuspension'),
];

export const MEMORY_RUN_SCENARIOS: RunScenario[] = [
  {
    name: 'chat: suspend on approval → the suspension\'s checkpoint, then the chat write, then its record → suspended',
    input: { ...chatInput, toolNames: ['publish'] },
    path: [...suspendOnPublish, { type: 'xstate.done.actor.writeChat', output: { status: 'written', cursor: 2 } }, S('saveChat')],
    drive: async (h) => {
      const chats = createInMemoryChatStore();
      const leg = await h.start({
        ...h.base(), chat: { store: chats, chatId: 'c1', scope: { userId: 'ada' } }, prompt: 'Publish.',
        model: createMockModel({ responses: [{ toolCalls: [publish] }] }),
        tools: { publish: { parameters: { type: 'object' }, needsApproval: true, execute: () => 'ok' } },
      });
      expect(leg.result.status).toBe('suspended');
      expect((await chats.loadChat('c1'))?.messageIds).toEqual(['mbt-run:0', 'mbt-run:1']);
    },
    check: (run) => {
      expect(run.store.last()).toMatchObject({ status: 'suspended', chat: { status: 'written', cursor: 2, turns: { 0: 'mbt-run:1' } } });
    },
  },
  {
    name: 'chat: text answer → terminal commit → chat write → completed',
    input: chatInput,
    path: [S('saveStart'), ev.turn(0, { text: 'Hello.' }), S('saveEnd'), chatDone],
    drive: async (h) => {
      const chats = createInMemoryChatStore();
      await h.start({ ...h.base(), chat: { store: chats, chatId: 'c1', scope: { userId: 'ada' } }, model: createMockModel({ responses: [{ text: 'Hello.' }] }), prompt: 'Hi.' });
      expect((await chats.loadChat('c1'))?.messageIds).toEqual(['mbt-run:0', 'mbt-run:1']);
    },
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'completed', output: 'Hello.' });
      expect(run.store.last()?.chat).toMatchObject({ chatId: 'c1', status: 'written', cursor: 2, turns: { 0: 'mbt-run:1' } });
    },
  },
  {
    name: 'chat and memory: terminal commit → chat write → extraction → completed',
    input: { ...chatInput, ...memoryInput },
    path: [S('saveStart'), ev.turn(0, { text: 'Noted.' }), S('saveEnd'), chatDone, intentDone('completed')],
    drive: async (h) => void (await h.start({
      ...h.base(), chat: { store: createInMemoryChatStore(), chatId: 'c1', scope: { userId: 'ada' } }, memory: memoryOf(h),
      model: createMockModel({ responses: [{ text: 'Noted.' }] }), prompt: 'I like tea.',
    })),
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'completed' });
      expect(run.store.last()).toMatchObject({ chat: { status: 'written' }, memory: { extraction: { status: 'completed' } } });
    },
  },
  {
    name: 'chat: the lease is lost during the chat write → the result stands, nothing more is saved',
    input: chatInput,
    path: [S('saveStart'), ev.turn(0, { text: 'Hello.' }), S('saveEnd'), ev.storeFailed(), chatDone],
    drive: async (h) => void (await h.start({
      ...h.base(), lease: { provider: losingLease, ttlMs: 30 }, chat: { store: slowChats(), chatId: 'c1', scope: { userId: 'ada' } },
      model: createMockModel({ responses: [{ text: 'Hello.' }] }), prompt: 'Hi.',
    })),
    check: (run) => {
      // The terminal commit stored the result; what follows it is not saved once the lease is gone.
      expect(run.last).toMatchObject({ status: 'completed', output: 'Hello.' });
      expect(run.store.last()).toMatchObject({ status: 'completed', chat: { status: 'pending' } });
    },
  },
  {
    name: 'memory: text answer → terminal commit → extraction → completed',
    input: memoryInput,
    path: [S('saveStart'), ev.turn(0, { text: 'Noted.' }), S('saveEnd'), intentDone('completed')],
    drive: async (h) => void (await h.start({ ...h.base(), memory: memoryOf(h), model: createMockModel({ responses: [{ text: 'Noted.' }] }), prompt: 'I like tea.' })),
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'completed', output: 'Noted.' });
      expect(run.store.last()?.memory?.extraction).toMatchObject({ status: 'completed', planned: 1, mutations: 1 });
      // The terminal commit recorded the extraction pending, with the result, before anything was written to memory.
      const commit = run.store.saved.find((e) => e.memory?.extraction?.status === 'pending');
      expect(commit).toMatchObject({ status: 'completed', result: { status: 'completed' } });
    },
  },
  {
    name: 'memory: the save of the plan fails → the extraction fails, the run stays completed',
    input: memoryInput,
    path: [S('saveStart'), ev.turn(0, { text: 'Noted.' }), S('saveEnd'), ev.storeFailed(), intentDone('failed')],
    drive: async (h) => {
      h.store.failWhen = (_e, attempt) => attempt === 3;
      await h.start({ ...h.base(), memory: memoryOf(h), model: createMockModel({ responses: [{ text: 'Noted.' }] }), prompt: 'I like tea.' });
    },
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'completed', output: 'Noted.' });
      // Nothing after the failed save was stored: the record says pending, for reconcileAgentRun.
      expect(run.store.last()?.memory?.extraction).toMatchObject({ status: 'pending' });
    },
  },
];

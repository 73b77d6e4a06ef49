/**
 * The run machine's end for a run that extracts memory (machines/run-memory.ts):
 * the terminal commit, the memory-intent child, and a save that fails after
 * the commit. Joined to RUN_SCENARIOS, so they count toward the run chart's coverage.
 */
import { expect } from 'vitest';
import { createMockModel } from 'cairn/testing';
import type { RunInput } from '../../../machines/index.js';
import { createInMemoryMemoryStore } from '../../../src/memory/in-memory.js';
import type { AgentMemoryOptions } from '../../../src/memory/run-types.js';
import type { RunScenario } from './run-scenarios.js';
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

export const MEMORY_RUN_SCENARIOS: RunScenario[] = [
  {
    name: 'memory: text answer → terminal commit → extraction → completed',
    input: memoryInput,
    path: [S('saveStart'), ev.turn(0, { text: 'Noted.' }), S('saveTurn'), S('saveEnd'), intentDone('completed')],
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
    path: [S('saveStart'), ev.turn(0, { text: 'Noted.' }), S('saveTurn'), S('saveEnd'), ev.storeFailed(), intentDone('failed')],
    drive: async (h) => {
      h.store.failWhen = (_e, attempt) => attempt === 4;
      await h.start({ ...h.base(), memory: memoryOf(h), model: createMockModel({ responses: [{ text: 'Noted.' }] }), prompt: 'I like tea.' });
    },
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'completed', output: 'Noted.' });
      // Nothing after the failed save was stored: the record says pending, for reconcileAgentRun.
      expect(run.store.last()?.memory?.extraction).toMatchObject({ status: 'pending' });
    },
  },
];

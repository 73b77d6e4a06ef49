/** Shared pieces of the memory-in-a-run tests: a memory option over an in-memory store, with a scripted memory LLM. */
import { createInMemoryMemoryStore } from '../../src/memory/in-memory.js';
import type { AgentMemoryOptions, MemoryLlmAnswer, MemoryLlmInput } from '../../src/memory/run-types.js';
import type { MemoryStore } from '../../src/memory/types.js';

export interface TestMemory extends AgentMemoryOptions {
  store: MemoryStore;
  /** Every question the memory LLM was asked. */
  asked: MemoryLlmInput[];
}

/** A memory whose LLM answers `facts` to the first question and `events` to the second. */
export function testMemory(options: {
  facts?: string | ((input: MemoryLlmInput) => MemoryLlmAnswer);
  events?: string | ((input: MemoryLlmInput) => MemoryLlmAnswer);
  store?: MemoryStore;
  scope?: AgentMemoryOptions['scope'];
} & Partial<Omit<AgentMemoryOptions, 'seams' | 'scope'>> = {}): TestMemory {
  const store = options.store ?? createInMemoryMemoryStore();
  const asked: MemoryLlmInput[] = [];
  let n = 0;
  const facts = options.facts ?? '{"facts":["prefers tea"]}';
  const events = options.events ?? '{"memory":[{"event":"ADD","text":"prefers tea"}]}';
  const { facts: _f, events: _e, store: _s, scope, ...rest } = options;
  return {
    ...rest,
    store,
    asked,
    scope: scope ?? { userId: 'ada' },
    seams: {
      store,
      llm: (input) => {
        asked.push(input);
        const answer = input.system.includes('extract') ? facts : events;
        return typeof answer === 'function' ? answer(input) : answer;
      },
      clock: { now: () => 1_000, setTimeout: () => () => undefined },
      generateId: () => `mem-${++n}`,
    },
  };
}

/** The parts of a test memory that are the run's `memory` option. */
export const option = (memory: TestMemory): AgentMemoryOptions => ({ ...memory });

import { createInMemoryAgentRunStore, reconcileAgentRun, runAgent } from 'cairn/agent';
import { createInMemoryMemoryStore } from 'cairn/memory';
import { createMockModel } from 'cairn/testing';

let id = 0;
const memory = {
  seams: {
    store: createInMemoryMemoryStore(),
    // A real application wraps a model call here.
    llm: async ({ system }: { system: string; user: string }) =>
      system.includes('extract')
        ? '{"facts":["prefers tea"]}'
        : '{"memory":[{"event":"ADD","text":"prefers tea"}]}',
    clock: {
      now: () => Date.now(),
      setTimeout: (fn: () => void, ms: number) => {
        const timer = setTimeout(fn, ms);
        return () => clearTimeout(timer);
      },
    },
    generateId: () => `memory-${id++}`,
  },
  scope: { userId: 'ada' },
};
const session = { store: createInMemoryAgentRunStore(), runId: 'tea-1', scope: 'tenant-a' };

const result = await runAgent({
  model: createMockModel({ responses: [{ text: 'Noted: tea.' }] }),
  prompt: 'I prefer tea.',
  memory,
  session,
});
const envelope = await session.store.load('tea-1');
console.log(result.status, envelope?.memory?.extraction?.status); // completed completed

// For a run an interruption left pending; a settled run reports its state.
console.log(await reconcileAgentRun({ session, memory })); // { runId: 'tea-1', memory: 'completed' }

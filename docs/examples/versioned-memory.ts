import {
  createInMemoryAgentRunStoreV3,
  reconcileAgentRun,
  runAgent,
} from 'cairn/agent';
import {
  createInMemoryVersionedMemoryStore,
  createMemorySession,
} from 'cairn/memory/versioned';
import { createMockModel } from 'cairn/testing';

const runs = createInMemoryAgentRunStoreV3();
const memory = createMemorySession({
  store: createInMemoryVersionedMemoryStore(),
  scope: { userId: 'ada' },
  // Stands in for the memory LLM: one fact citing the user's message.
  llm: async () => '{"facts":[{"text":"Ada prefers tea.","sources":["s0"]}]}',
  // A forget redacts the run's stored context packages.
  onForget: async (event) => {
    await runs.redactForgotten(event);
  },
});
const session = { store: runs, runId: 'tea-1', scope: 'acme' };

const result = await runAgent({
  checkpointVersion: 3,
  session,
  model: createMockModel({ responses: [{ text: 'Noted: tea.' }] }),
  prompt: 'I prefer tea.',
  versionedMemory: { session: memory, extract: true },
});
const record = await runs.load('tea-1');
console.log(result.status, record?.memoryIntents?.map((i) => i.status)); // completed [ 'acknowledged' ]
const [hit] = await memory.recall({ text: 'tea' });
console.log(hit?.record.origin, hit?.record.sources[0]?.messageId); // inferred tea-1:0

// For a run whose acknowledgment was lost; a settled run reports its state.
console.log(await reconcileAgentRun({ checkpointVersion: 3, session, versionedMemory: { session: memory } }));
// { runId: 'tea-1' }

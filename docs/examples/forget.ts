import { createInMemoryAgentRunStoreV3, runAgent } from 'cairn/agent';
import { createInMemoryVersionedMemoryStore, createMemorySession } from 'cairn/memory/versioned';
import { createMockModel } from 'cairn/testing';

const runs = createInMemoryAgentRunStoreV3();
const memory = createMemorySession({
  store: createInMemoryVersionedMemoryStore(),
  scope: { userId: 'ada' },
  generateId: () => 'tea-pref',
  // The run store hears of every forget and redacts what it keeps.
  onForget: async (event) => {
    console.log('packages redacted:', await runs.redactForgotten(event)); // packages redacted: 1
  },
});
await memory.remember({ text: 'Ada takes her tea with oat milk.' });

await runAgent({
  checkpointVersion: 3,
  session: { store: runs, runId: 'tea-2', scope: 'acme' },
  model: createMockModel({ responses: [{ text: 'Coming right up.' }] }),
  prompt: 'How does Ada take her tea?',
  context: { sources: [memory.contextSource({ name: 'memory' })] },
});

// The retrieval block the compiler appended to the run's history.
const blockOf = async () => {
  const record = await runs.load('tea-2');
  const { messages } = (record!.snapshot as { context: { messages: { role: string; content: unknown }[] } }).context;
  return { record: record!, block: messages.find((m) => String(m.content).startsWith('<cairn_context'))?.content };
};
const before = await blockOf();
console.log(before.block);

await memory.forget({ id: 'tea-pref' });
const after = await blockOf();
console.log(after.block);
console.log(after.record.revision === before.record.revision, after.record.updatedAt === before.record.updatedAt); // true true
console.log(JSON.stringify(after.record).includes('oat milk')); // false

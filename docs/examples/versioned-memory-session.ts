// A versioned memory session: explicit writes, an extraction replayed from its receipt, a tool call run twice, sources, forget.
import { createInMemoryVersionedMemoryStore, createMemorySession, type VersionedMemoryForgetEvent } from 'cairn/memory/versioned';

let asked = 0;
let ids = 0;
const forgets: VersionedMemoryForgetEvent[] = [];
const memory = createMemorySession({
  store: createInMemoryVersionedMemoryStore(),
  scope: { userId: 'ada' },
  // Stands in for the memory LLM: one fact citing the first message (s0).
  llm: async () => {
    asked++;
    return '{"facts":[{"text":"Ada prefers tea.","sources":["s0"]}]}';
  },
  // A V3 run store's redactForgotten is the usual listener; this one keeps the events.
  onForget: (event) => {
    forgets.push(event);
  },
  generateId: () => `fact-${++ids}`,
});

const request = {
  operationId: memory.operationId({ runId: 'tea-1', kind: 'extract' }),
  runId: 'tea-1',
  messages: [
    { id: 'tea-1:0', role: 'user' as const, text: 'I prefer tea.' },
    { id: 'tea-1:1', role: 'assistant' as const, text: 'Noted: tea.' },
  ],
};
const first = await memory.extract(request);
const again = await memory.extract(request); // the same operation: its receipt, the LLM is not asked again
console.log(request.operationId, first.receipt.planned, again.replayed, asked); // tea-1:memory:extract 1 true 1

const [hit] = await memory.recall({ text: 'tea' });
console.log(hit?.record.origin, hit?.record.sources[0]?.messageId); // inferred tea-1:0
console.log(await memory.resolveSource(hit!.record.sources[0]!)); // { status: 'found', messageId: 'tea-1:0', runId: 'tea-1', index: 0 }

// A tool call run again after a crash (same step, same call id) answers its first receipt.
const { memory_remember } = memory.tools({ runId: 'tea-1' });
const call = { modelStep: 1, toolCallId: 'call_1', messages: [], signal: new AbortController().signal, context: undefined };
console.log(await memory_remember.execute!({ text: 'Ada lives in Oslo.' }, call)); // { id: 'fact-2', revision: 2, scopeRevision: 2, replayed: false }
console.log(await memory_remember.execute!({ text: 'Ada lives in Oslo.' }, call)); // { id: 'fact-2', revision: 2, scopeRevision: 2, replayed: true }

const revised = await memory.revise({ id: hit!.record.id, text: 'Ada prefers green tea.' });
console.log(revised.receipt.scopeRevision, (await memory.store.history({ scope: memory.scope, id: hit!.record.id })).length); // 3 2

// A forget takes the text out of every revision, then tells the listener which revisions went: ids and numbers only.
await memory.forget({ id: hit!.record.id });
console.log(forgets[0]?.records.map((r) => r.revision), (await memory.store.get({ scope: memory.scope, id: hit!.record.id }))?.status); // [ 1, 3 ] forgotten

try {
  await memory.revise({ id: hit!.record.id, text: 'Ada prefers coffee.' });
} catch (error) {
  console.log((error as { code: string }).code); // memory_record_forgotten
}

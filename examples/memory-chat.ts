// Memory, a chat and model fail-over in one durable run, with no API key.
// The primary model is down (a retryable 503), so the call fails over to the
// fallback; the run remembers what the user said; the chat store is down for
// one write, so the run completes with a chat warning and its checkpoint
// intact, and reconcileAgentRun writes the chat later. A second run in the same
// chat recalls the memory.
import { createInMemoryAgentRunStore, reconcileAgentRun, runAgent } from 'cairn/agent';
import { createInMemoryChatStore, type ChatStore } from 'cairn/chat';
import { createInMemoryMemoryStore } from 'cairn/memory';
import { createMockModel } from 'cairn/testing';

let ids = 0;
const memory = {
  seams: {
    store: createInMemoryMemoryStore(),
    // A real application wraps a model call here: first the facts, then what to do with each.
    llm: async ({ system, user }: { system: string; user: string }) =>
      system.includes('extract')
        ? (user.includes('tea') ? '{"facts":["prefers tea"]}' : '{"facts":[]}')
        : '{"memory":[{"event":"ADD","text":"prefers tea"}]}',
    clock: { now: () => Date.now(), setTimeout: (fn: () => void, ms: number) => { const t = setTimeout(fn, ms); return () => clearTimeout(t); } },
    generateId: () => `memory-${++ids}`,
  },
  scope: { userId: 'ada' },
};

// A chat store whose first write fails, as a database that is briefly down would.
const chats = createInMemoryChatStore();
let chatDown = true;
const flakyChats: ChatStore = {
  loadChat: (chatId) => chats.loadChat(chatId),
  saveChat: async (chatId, record) => {
    if (chatDown) {
      chatDown = false;
      throw new Error('chat database unavailable');
    }
    return chats.saveChat(chatId, record);
  },
};
const chat = { store: flakyChats, chatId: 'chat-ada', scope: { userId: 'ada' } };

const runs = createInMemoryAgentRunStore();
const session = { store: runs, runId: 'tea-1', scope: 'tenant-a' };

const primary = () => createMockModel({ modelId: 'primary', responses: [{ error: { status: 503, message: 'overloaded' } }] });
const result = await runAgent({
  model: primary(),
  fallbackModels: [createMockModel({ modelId: 'fallback', responses: [{ text: 'Noted: you prefer tea.' }] })],
  maxRetries: 0,
  prompt: 'I prefer tea.',
  memory,
  chat,
  session,
});
console.log(`run: ${result.status}: ${result.text}`);
for (const warning of result.warnings) console.log(`  warning (${warning.setting}): ${warning.message}`);

const stored = await runs.load('tea-1');
const failover = stored?.models?.failovers[0];
console.log(`fail-over: ${failover?.failed.modelId} -> ${failover?.next.modelId} (${failover?.error.code}); the run now calls ${stored?.models?.selected.modelId}`);
console.log(`memory extraction: ${stored?.memory?.extraction?.status} (${stored?.memory?.extraction?.mutations} mutation)`);
console.log(`remembered: ${(await memory.seams.store.list({ scope: memory.scope })).map((r) => r.text).join(', ')}`);
console.log(`chat projection: ${stored?.chat?.status}; chat stored: ${(await chats.loadChat('chat-ada')) ? 'yes' : 'no'}`);

// No executor drives the run any more: reconcileAgentRun finishes what it left.
console.log('reconcile:', await reconcileAgentRun({ session, memory, chat }));
console.log(`chat messages: ${(await chats.loadChat('chat-ada'))?.messageIds.join(', ')}`);

// The next run goes on from the chat: the memory is recalled before its first model call.
const record = (await chats.loadChat('chat-ada'))!;
let seen = '';
const next = await runAgent({
  model: createMockModel({
    responses: [(request) => {
      seen = request.messages.filter((m) => m.role === 'system').map((m) => String(m.content)).join('\n');
      return { text: 'Tea, as usual.' };
    }],
  }),
  messages: [...record.messages, { role: 'user', content: 'What do I usually drink, tea or coffee?' }],
  memory,
  chat,
  session: { store: runs, runId: 'tea-2', scope: 'tenant-a' },
});
console.log(`second run: ${next.status}: ${next.text}`);
console.log(`it recalled: ${seen.includes('prefers tea') ? 'prefers tea' : '(nothing)'}`);
console.log(`chat messages: ${(await chats.loadChat('chat-ada'))?.messageIds.join(', ')}`);

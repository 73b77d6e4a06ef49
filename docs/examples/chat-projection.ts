import { createInMemoryAgentRunStore, runAgent } from 'cairn/agent';
import { createInMemoryChatStore } from 'cairn/chat';
import { createMockModel } from 'cairn/testing';

const chats = createInMemoryChatStore();
await runAgent({
  model: createMockModel({ responses: [{ text: 'Hello, Ada.' }] }),
  prompt: 'Hi!',
  chat: { store: chats, chatId: 'chat-1', scope: { userId: 'ada' } },
  session: { store: createInMemoryAgentRunStore(), runId: 'hello-1', scope: 'tenant-a' },
});
const record = await chats.loadChat('chat-1');
console.log(record?.messageIds); // ['hello-1:0', 'hello-1:1']

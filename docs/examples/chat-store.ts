// A conditional chat store: whole-record writes at a revision, a conflict as an answer, a tombstone, a refused record.
import { ChatStoreError, createInMemoryChatStore, type ChatRecord } from 'cairn/chat';

const chats = createInMemoryChatStore();
const record: ChatRecord = {
  chatId: 'chat-1',
  scope: { userId: 'ada' },
  messages: [{ role: 'user', content: 'Hi!' }, { role: 'assistant', content: 'Hello, Ada.' }],
  messageIds: ['hello-1:0', 'hello-1:1'],
};

const read = await chats.readChat('chat-1');
console.log(read.state, read.revision); // absent 0
console.log(await chats.writeChat('chat-1', record, { expectedRevision: read.revision })); // { status: 'written', revision: 1 }

// A second writer that decided on the same read loses, and nothing of its record is stored.
const late = { ...record, messages: [...record.messages, { role: 'user' as const, content: 'Bye.' }], messageIds: [...record.messageIds, 'other:2'] };
console.log(await chats.writeChat('chat-1', late, { expectedRevision: 0 })); // { status: 'conflict', revision: 1 }
console.log((await chats.loadChat('chat-1'))?.messageIds); // [ 'hello-1:0', 'hello-1:1' ]

// A deletion leaves a tombstone: the id keeps its revision, so a writer that saw no chat cannot recreate it.
console.log(await chats.deleteChat('chat-1'), await chats.readChat('chat-1')); // true { state: 'tombstone', revision: 2 }
console.log(await chats.writeChat('chat-1', record, { expectedRevision: 0 })); // { status: 'conflict', revision: 2 }

try {
  await chats.saveChat('chat-2', { ...record, chatId: 'chat-2', messageIds: ['only-one'] });
} catch (error) {
  console.log(error instanceof ChatStoreError, (error as ChatStoreError).code, (error as ChatStoreError).chatId);
}

/**
 * The chat projection of a run: written after the checkpoint at a suspension
 * and at the end, as a whole record; a throwing store never fails the run and
 * is repaired later; another scope, a chat that moved on and a tombstone are
 * left as they are; a revision conflict is tried three times.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, reconcileAgentRun, resumeAgent, runAgent } from 'cairn/agent';
import { createInMemoryChatStore, type ChatStore, type ConditionalChatStore } from 'cairn/chat';
import { createMockModel } from 'cairn/testing';

const scope = { userId: 'ada' };
const hello = () => createMockModel({ responses: [{ text: 'Hello, Ada.' }] });

/** A plain ChatStore (no conditional writes) whose next `failures` saves throw. */
function flaky(failures: number): ChatStore & { inner: ConditionalChatStore } {
  const inner = createInMemoryChatStore();
  let left = failures;
  return {
    inner,
    loadChat: (id) => inner.loadChat(id),
    saveChat: async (id, record) => {
      if (left-- > 0) throw new Error('chat db down');
      return inner.saveChat(id, record);
    },
  };
}

describe('chat projection of a run', () => {
  it('a throwing chat store is a warning and status failed; the checkpoint is intact and reconcileAgentRun repairs it once', async () => {
    const chats = flaky(1);
    const store = createInMemoryAgentRunStore();
    const session = { store, runId: 'c1', scope: 't' };
    const chat = { store: chats, chatId: 'chat-1', scope };
    const result = await runAgent({ model: hello(), prompt: 'Hi!', chat, session });
    expect(result.status).toBe('completed');
    expect(result.warnings).toEqual([expect.objectContaining({ setting: 'chat' })]);
    expect((await store.load('c1'))?.chat).toMatchObject({ status: 'failed', cursor: 0, error: { message: 'chat db down' } });
    expect(await chats.loadChat('chat-1')).toBeUndefined();
    expect(await reconcileAgentRun({ session, chat })).toEqual({ runId: 'c1', chat: 'written' });
    const record = await chats.loadChat('chat-1');
    expect(record?.messageIds).toEqual(['c1:0', 'c1:1']);
    expect((await store.load('c1'))?.chat).toEqual({ chatId: 'chat-1', status: 'written', cursor: 2, turns: { 0: 'c1:1' }, toolCalls: {} });
    // A repeat writes nothing more.
    expect(await reconcileAgentRun({ session, chat })).toEqual({ runId: 'c1', chat: 'written' });
    expect((await chats.loadChat('chat-1'))?.messages).toHaveLength(2);
  });

  it('a terminal resume repairs a failed write; a chat that moved on without the run is superseded', async () => {
    const chats = flaky(1);
    const store = createInMemoryAgentRunStore();
    const options = { model: hello(), prompt: 'Hi!', chat: { store: chats, chatId: 'chat-2', scope }, session: { store, runId: 'c2', scope: 't' } };
    await runAgent(options);
    const resumed = await resumeAgent({ ...options, model: createMockModel({ responses: [] }) });
    expect(resumed.status).toBe('completed');
    expect((await chats.loadChat('chat-2'))?.messageIds).toEqual(['c2:0', 'c2:1']);

    const moved = flaky(1);
    const session = { store, runId: 'c3', scope: 't' };
    await runAgent({ ...options, chat: { store: moved, chatId: 'chat-3', scope }, session });
    await moved.inner.saveChat('chat-3', { chatId: 'chat-3', scope, messages: [{ role: 'user', content: 'Another conversation.' }], messageIds: ['x:0'] });
    expect(await reconcileAgentRun({ session, chat: { store: moved, chatId: 'chat-3', scope } })).toMatchObject({ chat: 'superseded' });
    expect((await moved.loadChat('chat-3'))?.messageIds).toEqual(['x:0']);
    expect((await store.load('c3'))?.chat?.status).toBe('superseded');
  });

  it('never overwrites a chat of another scope, and a tombstone makes the projection superseded', async () => {
    const chats = createInMemoryChatStore();
    await chats.saveChat('bob-chat', { chatId: 'bob-chat', scope: { userId: 'bob' }, messages: [{ role: 'user', content: 'mine' }], messageIds: ['b:0'] });
    const other = await runAgent({ model: hello(), prompt: 'Hi!', chat: { store: chats, chatId: 'bob-chat', scope } });
    expect(other.warnings).toEqual([expect.objectContaining({ setting: 'chat', message: expect.stringContaining('another scope') })]);
    expect((await chats.loadChat('bob-chat'))?.messageIds).toEqual(['b:0']);
    await chats.saveChat('gone', { chatId: 'gone', scope, messages: [], messageIds: [] });
    await chats.deleteChat('gone');
    const store = createInMemoryAgentRunStore();
    await runAgent({ model: hello(), prompt: 'Hi!', chat: { store: chats, chatId: 'gone', scope }, session: { store, runId: 'c4', scope: 't' } });
    expect((await store.load('c4'))?.chat?.status).toBe('superseded');
    expect((await chats.readChat('gone')).state).toBe('tombstone');
  });

  it('reads and writes three times on a revision conflict, then records RevisionConflictError', async () => {
    const inner = createInMemoryChatStore();
    let writes = 0;
    const racing: ConditionalChatStore = {
      ...inner,
      loadChat: (id) => inner.loadChat(id),
      saveChat: (id, r) => inner.saveChat(id, r),
      readChat: (id) => inner.readChat(id),
      deleteChat: (id) => inner.deleteChat(id),
      // Someone else writes first, every time.
      writeChat: async (id, write, options) => {
        writes++;
        await inner.saveChat(id, { chatId: id, scope, messages: [], messageIds: [] });
        return inner.writeChat(id, write, options);
      },
    };
    const store = createInMemoryAgentRunStore();
    const result = await runAgent({ model: hello(), prompt: 'Hi!', chat: { store: racing, chatId: 'race', scope }, session: { store, runId: 'c5', scope: 't' } });
    expect(result.status).toBe('completed');
    expect(writes).toBe(3);
    expect((await store.load('c5'))?.chat).toMatchObject({ status: 'failed', error: { name: 'RevisionConflictError', code: 'revision_conflict' } });
  });

  it('an input message continued from the stored chat keeps its id; the reasoning of a turn is written byte for byte', async () => {
    const chats = createInMemoryChatStore();
    const earlier = [{ role: 'user' as const, content: 'Hi!' }, { role: 'assistant' as const, content: 'Hello.' }];
    await chats.saveChat('chat-6', { chatId: 'chat-6', scope, messages: earlier, messageIds: ['m-a', 'm-b'] });
    const reasoning = [{ type: 'reasoning' as const, text: 'think  \u00e9\n', providerMetadata: { anthropic: { signature: 'sig==' } } }];
    await runAgent({
      model: createMockModel({ responses: [{ text: 'Tea.', reasoning }] }),
      messages: [...earlier, { role: 'user', content: 'What do I drink?' }],
      chat: { store: chats, chatId: 'chat-6', scope }, session: { store: createInMemoryAgentRunStore(), runId: 'c6', scope: 't' },
    });
    const record = await chats.loadChat('chat-6');
    expect(record?.messageIds).toEqual(['m-a', 'm-b', 'c6:2', 'c6:3']);
    expect((record?.messages[3] as { reasoning?: unknown }).reasoning).toEqual(reasoning);
  });

  it('a chat id that is not a string, or a resume with another chat, is refused before anything is written', async () => {
    const bad = await runAgent({ model: hello(), prompt: 'Hi!', chat: { store: createInMemoryChatStore(), chatId: 7 as never, scope } });
    expect(bad).toMatchObject({ status: 'failed', error: { code: 'chat_record_invalid' } });
    const store = createInMemoryAgentRunStore();
    const chats = createInMemoryChatStore();
    const options = {
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'publish', args: {} }] }] }), prompt: 'Publish.',
      chat: { store: chats, chatId: 'chat-7', scope }, session: { store, runId: 'c7', scope: 't' },
      tools: { publish: { parameters: { type: 'object' as const }, needsApproval: true, execute: () => 'ok' } },
    };
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    expect((await chats.loadChat('chat-7'))?.messageIds).toEqual(['c7:0', 'c7:1']);
    const revision = (await store.load('c7'))!.revision;
    const other = await resumeAgent({ ...options, chat: { store: chats, chatId: 'chat-8', scope } });
    expect(other).toMatchObject({ status: 'failed', error: { code: 'binding_changed' } });
    expect((await store.load('c7'))!.revision).toBe(revision);
  });
});

/**
 * The chat projection at every end of a run, not only a suspension and a
 * completion: a run that stops (max-steps), fails (a model error, with or
 * without a retry) or is drained writes its transcript after its checkpoint
 * and records where the write left it; a failed checkpoint publishes
 * nothing; a chat store that throws at such an end is a warning, repaired by
 * a terminal resume or reconcileAgentRun.
 */
import { describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, createInMemoryLeaseProvider, reconcileAgentRun, resumeAgent, runAgent, type AgentRunStore, type LeaseProvider,
} from 'cairn/agent';
import { createInMemoryChatStore, type ChatStore } from 'cairn/chat';
import { createFaultyStore, createManualClock, createMockModel } from 'cairn/testing';

const scope = { userId: 'ada' };
const lookup = { parameters: { type: 'object' as const }, execute: () => 'found' };
const callsLookup = () => createMockModel({ responses: [{ toolCalls: [{ toolName: 'lookup', toolCallId: 'l1', args: {} }] }], strict: false });

/** A plain ChatStore whose next `failures` saves throw. */
function flaky(failures: number): ChatStore {
  const inner = createInMemoryChatStore();
  let left = failures;
  return {
    loadChat: (id) => inner.loadChat(id),
    saveChat: async (id, record) => {
      if (left-- > 0) throw new Error('chat db down');
      return inner.saveChat(id, record);
    },
  };
}

describe('chat projection at the end of a run that did not complete', () => {
  it('a stopped run (max-steps) writes its whole transcript after its terminal checkpoint', async () => {
    const chats = createInMemoryChatStore();
    const store = createInMemoryAgentRunStore();
    const result = await runAgent({
      model: callsLookup(), prompt: 'Look it up.', tools: { lookup }, maxSteps: 1,
      chat: { store: chats, chatId: 'chat-s', scope }, session: { store, runId: 's1', scope: 't' },
    });
    expect(result).toMatchObject({ status: 'stopped', reason: 'max-steps' });
    const record = await chats.loadChat('chat-s');
    expect(record?.messages).toEqual(result.messages);
    expect(record?.messageIds).toEqual(['s1:0', 's1:1', 's1:2']);
    const stored = await store.load('s1');
    expect(stored?.status).toBe('stopped');
    expect(stored?.chat).toEqual({ chatId: 'chat-s', status: 'written', cursor: 3, turns: { 0: 's1:1' }, toolCalls: { '0:l1': 's1:2' } });
    // The stored result is kept, and a terminal resume has nothing left to write.
    expect(stored?.result).toMatchObject({ status: 'stopped', reason: 'max-steps' });
    const again = await resumeAgent({ model: createMockModel({ responses: [] }), tools: { lookup }, maxSteps: 1,
      chat: { store: chats, chatId: 'chat-s', scope }, session: { store, runId: 's1', scope: 't' } });
    expect(again.status).toBe('stopped');
    expect((await store.load('s1'))?.revision).toBe(stored!.revision);
  });

  it('a failed run (a model error, after its checkpoint) is projected, with or without a retry; retryFailed goes on and writes the rest', async () => {
    for (const status of [400, 503]) {
      const chats = createInMemoryChatStore();
      const store = createInMemoryAgentRunStore();
      const runId = `f${status}`;
      const options = {
        prompt: 'Look it up.', tools: { lookup }, maxRetries: 0,
        chat: { store: chats, chatId: 'chat-f', scope }, session: { store, runId, scope: 't' },
      };
      const result = await runAgent({
        ...options,
        model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'lookup', toolCallId: 'l1', args: {} }] }, { error: { status, message: 'model down' } }] }),
      });
      expect(result.status, `status ${status}`).toBe('failed');
      expect((await chats.loadChat('chat-f'))?.messageIds, `status ${status}`).toEqual([`${runId}:0`, `${runId}:1`, `${runId}:2`]);
      const stored = await store.load(runId);
      expect(stored?.chat, `status ${status}`).toMatchObject({ status: 'written', cursor: 3 });
      if (status !== 503) continue;
      // The transient failure keeps its retry: the run goes on from its last checkpoint and writes its whole transcript at the end.
      expect(stored?.retry).toBeDefined();
      const retried = await resumeAgent({ ...options, model: createMockModel({ responses: [{ text: 'Found it.' }] }), retryFailed: true });
      expect(retried.status).toBe('completed');
      expect((await chats.loadChat('chat-f'))?.messages).toEqual(retried.messages);
      expect((await chats.loadChat('chat-f'))?.messageIds).toEqual([`${runId}:0`, `${runId}:1`, `${runId}:2`, `${runId}:3`]);
    }
  });

  it('a failed checkpoint publishes nothing', async () => {
    const chats = createInMemoryChatStore();
    // The start is saved; the turn's checkpoint (the second save) is refused.
    const store = createFaultyStore(createInMemoryAgentRunStore(), { failSave: { at: 2, mode: 'reject' } });
    const result = await runAgent({
      model: createMockModel({ responses: [{ text: 'Hello.' }] }), prompt: 'Hi!',
      chat: { store: chats, chatId: 'chat-x', scope }, session: { store, runId: 'x1', scope: 't' },
    });
    expect(result).toMatchObject({ status: 'failed', error: { code: 'persistence_failed' } });
    expect(await chats.loadChat('chat-x')).toBeUndefined();
    expect((await store.load('x1'))?.chat?.status).toBe('pending');
  });

  it('a chat store that throws at a stop is a warning; a terminal resume repairs it, and so would reconcileAgentRun', async () => {
    for (const repair of ['resume', 'reconcile'] as const) {
      const chats = flaky(1);
      const store = createInMemoryAgentRunStore();
      const runId = `t-${repair}`;
      const options = { tools: { lookup }, maxSteps: 1, chat: { store: chats, chatId: `chat-${repair}`, scope }, session: { store, runId, scope: 't' } };
      const result = await runAgent({ ...options, model: callsLookup(), prompt: 'Look it up.' });
      expect(result.status).toBe('stopped');
      expect(result.warnings).toEqual([expect.objectContaining({ setting: 'chat', message: expect.stringContaining('chat db down') })]);
      const stored = await store.load(runId);
      expect(stored?.chat).toMatchObject({ status: 'failed', error: { message: 'chat db down' } });
      expect(stored?.result?.warnings).toEqual(result.warnings);
      if (repair === 'resume') {
        const again = await resumeAgent({ ...options, model: createMockModel({ responses: [] }) });
        expect(again.status).toBe('stopped');
      } else {
        expect(await reconcileAgentRun({ session: options.session, chat: options.chat })).toEqual({ runId, chat: 'written' });
      }
      expect((await chats.loadChat(`chat-${repair}`))?.messages).toEqual(result.messages);
      expect((await store.load(runId))?.chat).toMatchObject({ status: 'written', cursor: 3 });
    }
  });

  it('a drained run writes its transcript at the drain; the leg that goes on writes the whole record at its end', async () => {
    // A clock that stands still: the leases never expire, whatever the machine's speed (renewals still come every 10 ms).
    const inner = createInMemoryLeaseProvider({ clock: createManualClock(0) });
    let noticed!: () => void;
    const drainSeen = new Promise<void>((resolve) => (noticed = resolve));
    // Every renewal carries a drain request, and the tool finishes once the leg has seen one.
    const leases: LeaseProvider = {
      ...inner,
      renew: async (lease, ttl) => {
        const renewal = await inner.renew(lease, ttl);
        if (renewal) setImmediate(noticed);
        return renewal && { ...renewal, drain: true };
      },
    };
    const chats = createInMemoryChatStore();
    const store: AgentRunStore = createInMemoryAgentRunStore();
    const tools = { lookup: { parameters: { type: 'object' as const }, execute: async () => (await drainSeen, 'found') } };
    const session = { store, runId: 'd1', scope: 't' };
    const chat = { store: chats, chatId: 'chat-d', scope };
    const first = await runAgent({
      model: callsLookup(), prompt: 'Look it up.', tools, chat, session, lease: { provider: leases, owner: 'w1', ttlMs: 30 },
    });
    expect(first).toMatchObject({ status: 'stopped', reason: 'drained' });
    expect((await chats.loadChat('chat-d'))?.messageIds).toEqual(['d1:0', 'd1:1', 'd1:2']);
    const stored = await store.load('d1');
    expect(stored?.status).toBe('drained');
    expect(stored?.chat).toMatchObject({ status: 'written', cursor: 3 });
    const second = await resumeAgent({
      model: createMockModel({ responses: [{ text: 'Found it.' }] }), tools, chat, session, lease: { provider: inner, owner: 'w2', ttlMs: 30 },
    });
    expect(second.status).toBe('completed');
    const record = await chats.loadChat('chat-d');
    expect(record?.messages).toEqual(second.messages);
    expect(record?.messageIds).toEqual(['d1:0', 'd1:1', 'd1:2', 'd1:3']);
  });

  it('a run without a session is projected when it stops', async () => {
    const chats = createInMemoryChatStore();
    const result = await runAgent({ model: callsLookup(), prompt: 'Look it up.', tools: { lookup }, maxSteps: 1, chat: { store: chats, chatId: 'chat-n', scope } });
    expect(result.status).toBe('stopped');
    expect((await chats.loadChat('chat-n'))?.messages).toEqual(result.messages);
  });

  it('a terminal commit after a suspension\'s projection leaves the chat owed: a lost save after it is repaired, no message lost', async () => {
    // Found by the memory/chat crash property: the suspension wrote two messages, the terminal commit (four) landed,
    // and the process died before the chat write; the record said `written` (the suspension's), so nothing repaired it.
    const chats = createInMemoryChatStore();
    const inner = createInMemoryAgentRunStore();
    let failEnd = false;
    const store: AgentRunStore = {
      load: (id, o) => inner.load(id, o),
      save: async (e, o) => {
        await inner.save(e, o);
        if (failEnd && e.status === 'completed') throw new Error('connection reset after the write');
      },
    };
    const publish = { parameters: { type: 'object' as const }, needsApproval: true, execute: () => 'published' };
    const options = {
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'publish', toolCallId: 'p1', args: {} }] }, { text: 'Published.' }] }),
      prompt: 'Publish.', tools: { publish }, chat: { store: chats, chatId: 'chat-o', scope }, session: { store, runId: 'o1', scope: 't' },
    };
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    expect((await chats.loadChat('chat-o'))?.messageIds).toEqual(['o1:0', 'o1:1']);
    failEnd = true;
    const approvalResponses = first.status === 'suspended' ? first.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true })) : [];
    const second = await resumeAgent({ ...options, approvalResponses });
    expect(second).toMatchObject({ status: 'failed', error: { code: 'persistence_failed' } });
    failEnd = false;
    const stored = await inner.load('o1');
    expect(stored?.status).toBe('completed');
    expect(stored?.chat).toMatchObject({ status: 'pending', cursor: 2 });
    expect(await reconcileAgentRun({ session: options.session, chat: options.chat })).toMatchObject({ chat: 'written' });
    const record = await chats.loadChat('chat-o');
    expect(record?.messageIds).toEqual(['o1:0', 'o1:1', 'o1:2', 'o1:3']);
    expect(record?.messages).toEqual(stored?.result?.messages);
  });
});

/**
 * What a failed chat write records and says: the acknowledged cursor it
 * actually reached (a failed write acknowledges nothing new, so a run that
 * suspended with its chat written keeps the suspension's position), and a
 * warning that names who repairs it: the next save for a suspended run, a
 * terminal resume or reconcileAgentRun for a run that ended.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, reconcileAgentRun, resumeAgent, runAgent } from 'cairn/agent';
import { createInMemoryChatStore, type ChatStore } from 'cairn/chat';
import { createMockModel } from 'cairn/testing';

const scope = { userId: 'ada' };
const publish = { parameters: { type: 'object' as const }, needsApproval: true, execute: () => 'published' };

/** A plain ChatStore whose saves throw while `down` is set. */
function switchable(): ChatStore & { down: boolean } {
  const inner = createInMemoryChatStore();
  const store = {
    down: false,
    loadChat: (id: string) => inner.loadChat(id),
    saveChat: async (id: string, record: Parameters<ChatStore['saveChat']>[1]) => {
      if (store.down) throw new Error('chat db down');
      return inner.saveChat(id, record);
    },
  };
  return store;
}

function publishing(runId: string, chats: ChatStore) {
  return {
    model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'publish', toolCallId: 'p1', args: {} }] }, { text: 'Published.' }] }),
    prompt: 'Publish.', tools: { publish }, chat: { store: chats, chatId: `chat-${runId}`, scope },
    session: { store: createInMemoryAgentRunStore(), runId, scope: 't' },
  };
}

const approve = (result: Awaited<ReturnType<typeof runAgent>>) =>
  result.status === 'suspended' ? result.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true })) : [];

describe('a chat write that fails', () => {
  for (const repair of ['reconcile', 'resume'] as const) {
    it(`after a suspension's write keeps the suspension's cursor; ${repair === 'reconcile' ? 'reconcileAgentRun' : 'a terminal resume'} repairs it`, async () => {
      const chats = switchable();
      const options = publishing(`c-${repair}`, chats);
      const first = await runAgent(options);
      expect(first.status).toBe('suspended');
      expect((await options.session.store.load(options.session.runId))?.chat).toMatchObject({ status: 'written', cursor: 2 });
      chats.down = true;
      const second = await resumeAgent({ ...options, approvalResponses: approve(first) });
      expect(second.status).toBe('completed');
      // The run ended: no save of its own comes after this one.
      expect(second.warnings).toEqual([{
        type: 'warning', setting: 'chat',
        message: `Chat chat-c-${repair} was not written: the chat store failed (chat db down); the run's checkpoint is intact and a terminal resume or reconcileAgentRun repairs it.`,
      }]);
      const stored = await options.session.store.load(options.session.runId);
      // What the chat acknowledged is the suspension's two messages, not zero and not the four the write meant.
      expect(stored?.chat).toMatchObject({ status: 'failed', cursor: 2, error: { message: 'chat db down' } });
      expect((await chats.loadChat(`chat-c-${repair}`))?.messages).toHaveLength(2);
      chats.down = false;
      if (repair === 'reconcile') {
        expect(await reconcileAgentRun({ session: options.session, chat: options.chat })).toEqual({ runId: options.session.runId, chat: 'written' });
      } else {
        const again = await resumeAgent({ ...options, model: createMockModel({ responses: [] }) });
        expect(again.status).toBe('completed');
      }
      const repaired = await options.session.store.load(options.session.runId);
      expect(repaired?.chat).toMatchObject({ status: 'written', cursor: 4 });
      expect(repaired?.chat?.error).toBeUndefined();
      expect((await chats.loadChat(`chat-c-${repair}`))?.messageIds).toEqual([0, 1, 2, 3].map((n) => `c-${repair}:${n}`));
    });
  }

  it('at a suspension says the next save repairs it, and the next save does', async () => {
    const chats = switchable();
    chats.down = true;
    const options = publishing('s1', chats);
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    expect(first.warnings).toEqual([{
      type: 'warning', setting: 'chat',
      message: 'Chat chat-s1 was not written: the chat store failed (chat db down); the run\'s checkpoint is intact and the next save repairs it.',
    }]);
    // Nothing was acknowledged before this write.
    expect((await options.session.store.load('s1'))?.chat).toMatchObject({ status: 'failed', cursor: 0 });
    chats.down = false;
    const second = await resumeAgent({ ...options, approvalResponses: approve(first) });
    expect(second.status).toBe('completed');
    expect(second.warnings).toEqual([]);
    expect((await options.session.store.load('s1'))?.chat).toMatchObject({ status: 'written', cursor: 4 });
    expect((await chats.loadChat('chat-s1'))?.messages).toEqual(second.messages);
  });

  it('a repair that fails again keeps the cursor and says who repairs it by the run\'s state', async () => {
    const chats = switchable();
    const options = publishing('r1', chats);
    const first = await runAgent(options);
    chats.down = true;
    await resumeAgent({ ...options, approvalResponses: approve(first) });
    const answer = await reconcileAgentRun({ session: options.session, chat: options.chat });
    expect(answer).toMatchObject({ chat: 'failed', warnings: [{ setting: 'chat', message: expect.stringContaining('a terminal resume or reconcileAgentRun repairs it') }] });
    expect((await options.session.store.load('r1'))?.chat).toMatchObject({ status: 'failed', cursor: 2 });
  });
});

/**
 * The chat projection of a run: the run's transcript (the input, then every
 * turn it appended, raw) written to the chat store as one whole record, after
 * the checkpoint. The run's checkpoint stays the canonical record: a chat
 * store that throws never fails the run, and a chat that moved on without the
 * run, is another scope's or was deleted is never overwritten.
 */
import { InvalidOptionsError, RevisionConflictError, serializeError } from '../errors/index.js';
import type { ModelMessage } from '../models/types.js';
import { checkChatId, checkChatScope, sameChatScope } from './records.js';
import type { AgentChatOptions, AgentRunChat, AgentRunChatStatus } from './projection-types.js';
import type { ChatRecord, ChatStore, ConditionalChatStore } from './types.js';

/** What the run's snapshot keeps of its projection (plain JSON). */
export interface RunChatState {
  status: AgentRunChatStatus;
  cursor: number;
  error?: { name: string; code: string; message: string };
}

export const CHAT_ATTEMPTS = 3;

export function checkChatOptions(chat: unknown): AgentChatOptions | null {
  if (chat === undefined) return null;
  const c = chat as AgentChatOptions | null;
  if (c === null || typeof c !== 'object' || !c.store || typeof c.store.loadChat !== 'function' || typeof c.store.saveChat !== 'function') {
    throw new InvalidOptionsError('chat must be { store, chatId, scope } with a store that has loadChat and saveChat.');
  }
  const chatId = checkChatId(c.chatId, 'chat');
  return { store: c.store, chatId, scope: checkChatScope(c.scope, 'chat', chatId) };
}

export const chatBindingOf = (chat: AgentChatOptions) => JSON.stringify([chat.chatId, chat.scope.userId ?? null, chat.scope.agentId ?? null, chat.scope.chatId ?? null]);

const isConditional = (store: ChatStore): store is ConditionalChatStore =>
  typeof (store as Partial<ConditionalChatStore>).readChat === 'function' && typeof (store as Partial<ConditionalChatStore>).writeChat === 'function';

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The ids of the transcript's messages: a stored chat's own id for a message the run continued from it, `<runId>:<n>` for the rest. */
export function messageIdsOf(runId: string, transcript: readonly ModelMessage[], stored: ChatRecord | undefined): string[] {
  const ids = transcript.map((_, n) => `${runId}:${n}`);
  if (!stored) return ids;
  for (let i = 0; i < Math.min(stored.messages.length, transcript.length); i++) {
    if (!same(stored.messages[i], transcript[i])) break;
    if (stored.messageIds[i]!.startsWith(`${runId}:`)) break;
    ids[i] = stored.messageIds[i]!;
  }
  return ids;
}

/** Which message is each assistant turn (by model step) and each tool answer (by step and call id). */
export function chatMapOf(runId: string, transcript: readonly ModelMessage[], inputCount: number, stored: string[] | null): Pick<AgentRunChat, 'turns' | 'toolCalls'> {
  const ids = stored ?? transcript.map((_, n) => `${runId}:${n}`);
  const turns: Record<string, string> = {};
  const toolCalls: Record<string, string> = {};
  let step = -1;
  transcript.forEach((message, index) => {
    if (index < inputCount) return;
    if (message.role === 'assistant') turns[String(++step)] = ids[index]!;
    else if (message.role === 'tool') toolCalls[`${step}:${message.toolCallId}`] = ids[index]!;
  });
  return { turns, toolCalls };
}

type Found = { state: 'absent'; revision: number } | { state: 'stored'; record: ChatRecord; revision: number } | { state: 'tombstone'; revision: number };

async function read(store: ChatStore, chatId: string): Promise<Found> {
  if (isConditional(store)) return store.readChat(chatId);
  const record = await store.loadChat(chatId);
  return record ? { state: 'stored', record, revision: 0 } : { state: 'absent', revision: 0 };
}

/** The transcript continues `record`: its messages are a prefix of the transcript's. */
const continues = (transcript: readonly ModelMessage[], record: ChatRecord) =>
  record.messages.length <= transcript.length && record.messages.every((m, i) => same(m, transcript[i]));

/**
 * Writes the projection once (up to three reads and writes on a revision
 * conflict). `repair`: a late repair (a terminal resume, reconcileAgentRun)
 * only finishes the write the run meant, over a chat its transcript
 * continues; anything else stays as it is and the projection is superseded.
 * `acknowledged`: how much of the transcript the chat acknowledged before
 * this write; a write that fails acknowledges nothing new, so its state
 * keeps that cursor.
 */
export async function writeProjection(
  chat: AgentChatOptions, runId: string, transcript: readonly ModelMessage[], repair: boolean, now: number, acknowledged = 0,
): Promise<RunChatState> {
  try {
    for (let attempt = 1; attempt <= CHAT_ATTEMPTS; attempt++) {
      const found = await read(chat.store, chat.chatId);
      if (found.state === 'tombstone') return { status: 'superseded', cursor: 0 };
      const stored = found.state === 'stored' ? found.record : undefined;
      if (stored && !sameChatScope(checkChatScope(stored.scope, 'stored chat', chat.chatId), chat.scope)) return { status: 'scope-mismatch', cursor: 0 };
      if (stored && stored.messages.length > transcript.length && transcript.every((m, i) => same(m, stored.messages[i]))) {
        // A later run continued the chat from this projection: it holds the transcript and more.
        return { status: 'written', cursor: transcript.length };
      }
      if (repair && stored && !continues(transcript, stored)) return { status: 'superseded', cursor: 0 };
      const record: ChatRecord = {
        chatId: chat.chatId, scope: { ...chat.scope }, messages: JSON.parse(JSON.stringify(transcript)) as ModelMessage[],
        messageIds: messageIdsOf(runId, transcript, stored), updatedAt: now, metadata: { runId },
      };
      if (!isConditional(chat.store)) {
        await chat.store.saveChat(chat.chatId, record);
        return { status: 'written', cursor: transcript.length };
      }
      const written = await chat.store.writeChat(chat.chatId, record, { expectedRevision: found.revision });
      if (written.status === 'written') return { status: 'written', cursor: transcript.length };
      if (attempt === CHAT_ATTEMPTS) {
        const e = serializeError(new RevisionConflictError(chat.chatId, found.revision, written.revision, 'chat'));
        return { status: 'failed', cursor: acknowledged, error: { name: e.name, code: e.code, message: e.message } };
      }
    }
  } catch (error) {
    const e = serializeError(error);
    return { status: 'failed', cursor: acknowledged, error: { name: e.name, code: e.code, message: e.message } };
  }
  return { status: 'failed', cursor: acknowledged };
}

/**
 * The warning part a projection that did not land reports (none for one that
 * did). `ended`: the run ended (completed, stopped, failed), so no save of its
 * own comes after this one; a suspended or drained run's next save repairs it.
 */
export function chatWarning(chatId: string, state: RunChatState, ended: boolean): { type: 'warning'; setting: 'chat'; message: string } | null {
  if (state.status === 'written' || state.status === 'pending') return null;
  const repair = ended ? 'a terminal resume or reconcileAgentRun repairs it' : 'the next save repairs it';
  const why = state.status === 'failed'
    ? `the chat store failed (${state.error?.message ?? 'unknown error'}); the run's checkpoint is intact and ${repair}`
    : state.status === 'scope-mismatch'
      ? 'the stored chat belongs to another scope and was left as it is'
      : 'the chat moved on without this run (or was deleted) and was left as it is; the run\'s turns stay in its record';
  return { type: 'warning', setting: 'chat', message: `Chat ${chatId} was not written: ${why}.` };
}

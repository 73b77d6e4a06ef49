/** `AgentRunEnvelope.chat`, read from the run's snapshot: where its projection stands, and which message each turn is. */
import type { RunContext } from '../../machines/index.js';
import type { ModelMessage } from '../models/types.js';
import { chatMapOf } from './projection.js';
import type { AgentRunChat } from './projection-types.js';

export function chatOfSnapshot(runId: string, context: Pick<RunContext, 'chat' | 'messages'>): AgentRunChat | undefined {
  const chat = context.chat;
  if (!chat) return undefined;
  const map = chatMapOf(runId, context.messages as unknown as ModelMessage[], chat.inputCount, null);
  // The chat acknowledged less than the transcript holds: the write after this checkpoint is still owed, whatever an
  // earlier write (a suspension's) left. A terminal resume and reconcileAgentRun then finish it.
  const behind = chat.status === 'written' && chat.cursor < context.messages.length;
  return {
    chatId: chat.chatId,
    status: behind ? 'pending' : chat.status,
    cursor: chat.cursor,
    ...map,
    ...(chat.error ? { error: { ...chat.error } } : {}),
  };
}

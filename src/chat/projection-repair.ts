/**
 * A late repair of a run's chat projection (a terminal resume,
 * reconcileAgentRun): it finishes the write the run's last attempt meant,
 * over a chat the run's transcript continues, and saves where it left the
 * projection. A chat that moved on without the run stays as it is
 * (`superseded`), and no later repair tries again.
 */
import type { RunContext } from '../../machines/index.js';
import type { AgentRunEnvelope, JsonValue } from '../agent/types.js';
import type { ModelMessage } from '../models/types.js';
import { chatOfSnapshot } from './projection-envelope.js';
import { chatWarning, writeProjection } from './projection.js';
import type { AgentChatOptions, AgentRunChatStatus } from './projection-types.js';

/** The projection still owes a write: its last attempt failed, or its outcome was never saved. */
export const chatOwed = (envelope: AgentRunEnvelope) => envelope.chat?.status === 'failed' || envelope.chat?.status === 'pending';

export async function repairChat(
  stored: AgentRunEnvelope,
  chat: AgentChatOptions,
  save: (envelope: AgentRunEnvelope) => Promise<unknown>,
  now: number,
): Promise<{ status: AgentRunChatStatus; warning: { type: 'warning'; setting: string; message: string } | null }> {
  if (!stored.chat || !chatOwed(stored)) return { status: stored.chat?.status ?? 'written', warning: null };
  const snapshot = structuredClone(stored.snapshot) as unknown as { context: RunContext };
  const transcript = snapshot.context.messages as unknown as ModelMessage[];
  const state = await writeProjection(chat, stored.runId, transcript, true, now, stored.chat.cursor);
  snapshot.context.chat = { ...snapshot.context.chat!, status: state.status, cursor: state.cursor, ...(state.error ? { error: state.error } : {}) };
  if (!state.error) delete snapshot.context.chat.error;
  await save({ ...stored, snapshot: snapshot as unknown as JsonValue, chat: chatOfSnapshot(stored.runId, snapshot.context)! });
  const ended = stored.status === 'completed' || stored.status === 'stopped' || stored.status === 'failed';
  return { status: state.status, warning: chatWarning(chat.chatId, state, ended) };
}

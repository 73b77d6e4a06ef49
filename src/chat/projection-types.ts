/** The `chat` option of a run, and `AgentRunEnvelope.chat`: what a run records of its chat projection. */
import type { ChatScope, ChatStore } from './types.js';

export interface AgentChatOptions {
  /** A ChatStore, or a ConditionalChatStore (then every write is made at the revision read). */
  store: ChatStore;
  chatId: string;
  /** Whose chat: a stored chat of another scope is never overwritten. Part of the binding with `chatId`. */
  scope: ChatScope;
}

/**
 * Where the projection stands: `pending` (the checkpoint was saved, the chat
 * write it precedes has not been recorded yet), `written` (the chat holds the transcript up to
 * `cursor`), `failed` (the last write failed; the next save, a terminal resume or reconcileAgentRun repairs it),
 * `scope-mismatch` (the stored chat is another scope's), `superseded` (the
 * chat moved on without the run, or was deleted: no repair tries again).
 */
export type AgentRunChatStatus = 'pending' | 'written' | 'failed' | 'scope-mismatch' | 'superseded';

/** `AgentRunEnvelope.chat`. */
export interface AgentRunChat {
  chatId: string;
  status: AgentRunChatStatus;
  /** How many transcript messages the chat store has acknowledged. */
  cursor: number;
  /** The chat message id of each assistant turn, by model step. */
  turns: Record<string, string>;
  /** The chat message id of each tool answer, by `<modelStep>:<toolCallId>`. */
  toolCalls: Record<string, string>;
  error?: { name: string; code: string; message: string };
}

/**
 * The run machine's chat write (machines/run-memory.ts, machines/run-chat.ts):
 * the whole transcript, after the checkpoint. Its output is where the
 * projection stands; a failure of the chat store is that output (and a
 * warning part), never an error of the run.
 */
import type { RunChat } from '../../machines/index.js';
import { legActor } from '../runtime/host-state.js';
import { chatWarning, writeProjection } from './projection.js';

export const writeChatActor = legActor<Pick<RunChat, 'status' | 'cursor' | 'error'>, { at: string }>(async (leg) => {
  const chat = leg.opts.chat!;
  const state = await writeProjection(chat, leg.runId, leg.transcript(), false, leg.opts.now());
  const warning = chatWarning(chat.chatId, state);
  if (warning) leg.emit(warning);
  return { status: state.status === 'pending' ? 'failed' : state.status, cursor: state.cursor, ...(state.error ? { error: state.error } : {}) };
});

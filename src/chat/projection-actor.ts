/**
 * The run machine's chat write (machines/run-chat.ts, machines/run-memory.ts):
 * the whole transcript, after the checkpoint. Its output is where the
 * projection stands; a failure of the chat store is that output (and a
 * warning part), never an error of the run. A write that fails keeps the
 * cursor the chat acknowledged before it.
 */
import type { RunChat } from '../../machines/index.js';
import { legActor } from '../runtime/host-state.js';
import { chatWarning, writeProjection } from './projection.js';

export const writeChatActor = legActor<Pick<RunChat, 'status' | 'cursor' | 'error'>, { at: string; cursor?: number }>(async (leg, { input }) => {
  const chat = leg.opts.chat!;
  const state = await writeProjection(chat, leg.runId, leg.transcript(), false, leg.opts.now(), input.cursor ?? 0);
  // At the end there is no save of the run's own to come; a suspension's or a drain's next save repairs it.
  const warning = chatWarning(chat.chatId, state, input.at === 'end');
  if (warning) leg.emit(warning);
  return { status: state.status === 'pending' ? 'failed' : state.status, cursor: state.cursor, ...(state.error ? { error: state.error } : {}) };
});

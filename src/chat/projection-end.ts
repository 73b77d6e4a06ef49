/**
 * The chat projection of a run that ends stopped or failed, or rests
 * drained. The chart projects a suspension and a completion itself
 * (machines/run-chat.ts, machines/run-memory.ts); these other ends are
 * final states (or the drain's rest) whose checkpoint the host writes, so
 * the host writes the chat after that checkpoint and then saves where the
 * write left the projection. Nothing is published when the checkpoint was
 * not saved. A running leg writes its whole projection, as at a suspension.
 */
import type { RunChat } from '../../machines/index.js';
import type { AgentRunEnvelope, AgentWarning, JsonValue } from '../agent/types.js';
import type { ModelMessage } from '../models/types.js';
import { chatOfSnapshot } from './projection-envelope.js';
import { chatWarning, writeProjection } from './projection.js';
import type { AgentChatOptions } from './projection-types.js';

interface EndingRun {
  runId: string;
  chat: AgentChatOptions;
  /** The run's whole transcript, as its actor holds it now. */
  transcript: readonly ModelMessage[];
  now: number;
  /**
   * The record the leg saved last (its terminal write, or its drain's save),
   * or null for a run without a session: then there is nothing to save.
   */
  committed: AgentRunEnvelope | null;
  /** Saves `envelope` as the run's next revision; rejects when the store does. */
  save(envelope: AgentRunEnvelope): Promise<void>;
}

interface StoredSnapshot {
  context: { chat?: RunChat | null; messages: unknown[] };
}

/**
 * Writes the projection and saves its outcome. Returns the warnings it
 * reported: the chat's (a store that threw, another scope, a deleted chat),
 * and one for a save that failed after the write. Such a save leaves the
 * record's projection `pending`: a terminal resume or reconcileAgentRun
 * finishes it (the chat already holds the transcript, so that repair writes
 * the same record again).
 */
async function publishEnd(run: EndingRun): Promise<AgentWarning[]> {
  const state = await writeProjection(run.chat, run.runId, run.transcript, false, run.now);
  const warning = chatWarning(run.chat.chatId, state);
  const warnings: AgentWarning[] = warning ? [warning] : [];
  const committed = run.committed;
  const before = (committed?.snapshot as unknown as StoredSnapshot | undefined)?.context.chat;
  if (!committed || !before) return warnings;
  const snapshot = committed.snapshot as unknown as StoredSnapshot;
  // Only the projection's state changes: the rest of the stored snapshot (its transcript included) is kept as it is.
  const chat: RunChat = { ...before, status: state.status, cursor: state.cursor };
  if (state.error) chat.error = state.error;
  else delete chat.error;
  const next = { ...snapshot, context: { ...snapshot.context, chat } };
  const envelope: AgentRunEnvelope = {
    ...committed,
    snapshot: next as unknown as JsonValue,
    chat: chatOfSnapshot(run.runId, { chat, messages: run.transcript } as never)!,
    ...(committed.result && warning ? { result: { ...committed.result, warnings: [...committed.result.warnings, warning] } } : {}),
  };
  try {
    await run.save(envelope);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    warnings.push({
      type: 'warning', setting: 'chat',
      message: `Chat ${run.chat.chatId}: saving where the projection stands failed (${message}); a terminal resume or reconcileAgentRun finishes it.`,
    });
  }
  return warnings;
}

/** What the host hands over at the end of a leg (src/runtime/host.ts). */
export interface EndingLeg {
  runId: string;
  chat: AgentChatOptions | null;
  /** Where the run came to rest: `stopped`, `failed`, `drained`, or another state (nothing to do here). */
  ended: boolean;
  /** The leg has a session, and no save of it failed (nor was its lease lost). */
  durable: boolean;
  /** A leg without a session publishes without saving. */
  hasSession: boolean;
  transcript: readonly ModelMessage[];
  now: number;
  committed: AgentRunEnvelope | null;
  save(envelope: AgentRunEnvelope): Promise<void>;
  emit(warning: AgentWarning): void;
}

/**
 * The chat write at a leg's end that the chart does not make itself, and
 * the result with what it reported. A failed checkpoint publishes nothing;
 * a save that fails after the write keeps the result, with a warning.
 */
export async function projectEnd<R extends { warnings: AgentWarning[] }>(leg: EndingLeg, result: R): Promise<R> {
  if (!leg.chat || !leg.ended || (leg.hasSession && (!leg.durable || !leg.committed))) return result;
  const warnings = await publishEnd({ ...leg, chat: leg.chat, committed: leg.hasSession ? leg.committed : null });
  for (const warning of warnings) leg.emit(warning);
  return warnings.length > 0 ? { ...result, warnings: [...result.warnings, ...warnings] } : result;
}

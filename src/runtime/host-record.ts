/**
 * The leg's record as its saves see it: the run actor's persisted snapshot,
 * the ledger a save records, and the print that tells a restored record from
 * a changed one.
 */
import type { Actor } from 'xstate';
import type { runMachine } from '../../machines/index.js';
import { envelopeFields, receiptCountOf } from '../agent/envelope.js';
import { toJson } from '../agent/json.js';
import type { AgentRunEnvelope } from '../agent/types.js';
import type { ExecutionContext } from '../policy/index.js';
import type { PersistedRun } from './record.js';

/**
 * A record's print without its history (the transcript and the ended receipts, counted), its revision or its time:
 * two records with one print and the same transcript and receipts lists hold the same run.
 */
export function recordPrint(envelope: AgentRunEnvelope): string {
  const snapshot = envelope.snapshot as unknown as PersistedRun;
  const context = snapshot.context;
  return JSON.stringify(envelopeFields(envelope, {
    revision: 0, updatedAt: 0, saves: undefined, receipts: receiptCountOf(envelope),
    snapshot: { ...snapshot, context: { ...context, messages: context.messages.length, receipts: context.receipts.length } },
  }));
}

/** What a leg keeps of the record it was restored from, to tell it from the record its first write would make. */
export interface RestoredRecord {
  print: string;
  messages: unknown;
  receipts: unknown;
  status: AgentRunEnvelope['status'];
  /** The snapshot's state value as JSON: part of the print, and far cheaper to compare first. */
  value: string;
}

export function restoredRecordOf(envelope: AgentRunEnvelope): RestoredRecord {
  const snapshot = envelope.snapshot as unknown as PersistedRun;
  const { messages, receipts } = snapshot.context;
  return { print: recordPrint(envelope), messages, receipts, status: envelope.status, value: JSON.stringify(snapshot.value) };
}

/**
 * Whether `envelope` holds the restored record: the same lists (never edited in place, so identity settles them)
 * and print. The status and the state value are in the print: where either differs, so does the print, and it
 * is not made.
 */
export function sameRecord(envelope: AgentRunEnvelope, restored: RestoredRecord): boolean {
  const snapshot = envelope.snapshot as unknown as PersistedRun;
  const context = snapshot.context;
  if (context.messages !== restored.messages || context.receipts !== restored.receipts) return false;
  if (envelope.status !== restored.status || JSON.stringify(snapshot.value) !== restored.value) return false;
  return recordPrint(envelope) === restored.print;
}

/**
 * The run actor's persisted snapshot as plain JSON. The transcript and the
 * ended calls' receipts only grow, and their entries are never edited, so
 * they are set aside while XState persists the rest (it walks every value of
 * a context looking for actor references, and they hold none) and handed
 * over as they are: a save copies what changed, not the history.
 */
export function persistedOf(actor: Actor<typeof runMachine>): PersistedRun {
  const snapshot = actor.getSnapshot();
  const { messages, receipts } = snapshot.context;
  const rest = actor.logic.getPersistedSnapshot(
    { ...snapshot, context: { ...snapshot.context, messages: [], receipts: [] } } as typeof snapshot,
  );
  const copy = toJson<PersistedRun>(rest);
  copy.context.messages = messages;
  copy.context.receipts = receipts;
  return copy;
}

/** What a save records of the ledger: all of it under a root context, the run's scope under a child. */
export async function ledgerCheckpointOf(execution: ExecutionContext | null | undefined): Promise<AgentRunEnvelope['ledger']> {
  if (!execution) return undefined;
  const subtree = execution.parent !== null;
  const entries = await execution.ledger.entries(subtree ? execution.path : undefined);
  return { name: execution.ledger.name, scope: execution.path, subtree, entries: toJson(entries) };
}

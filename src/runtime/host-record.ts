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
import { machineJson } from './persisted-json.js';
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
  /** The envelope itself, and the parts of it a restore may change before the actor is made (see {@link restoreChanges}). */
  envelope: AgentRunEnvelope;
  parts: string;
}

export function restoredRecordOf(envelope: AgentRunEnvelope): RestoredRecord {
  const snapshot = envelope.snapshot as unknown as PersistedRun;
  const { messages, receipts } = snapshot.context;
  return {
    print: recordPrint(envelope), messages, receipts, status: envelope.status, value: JSON.stringify(snapshot.value),
    envelope, parts: restoreParts(envelope, envelope.binding),
  };
}

/**
 * What a restore may change in a stored record before its actor is made, as JSON: the binding the leg writes, the
 * tools the run offers (an MCP catalog taken anew), and what replan puts in (the run's plan, each open call's plan
 * and the inputs of its invocations in flight). Small: no history.
 */
function restoreParts(envelope: AgentRunEnvelope, binding: unknown): string {
  const snapshot = envelope.snapshot as unknown as PersistedRun;
  const calls: unknown[] = [];
  for (const [id, child] of Object.entries(snapshot.children ?? {})) {
    const call = (child as { snapshot?: { context?: { plan?: unknown }; children?: Record<string, { snapshot?: { input?: unknown } } | undefined> } })?.snapshot;
    if (!call?.context) continue;
    const inputs: unknown[] = [];
    for (const invoked of Object.values(call.children ?? {})) inputs.push(invoked?.snapshot?.input);
    calls.push(id, call.context.plan, inputs);
  }
  return JSON.stringify([binding, snapshot.context.toolNames, snapshot.context.plan, calls]);
}

/**
 * Whether the record an actor is restored from differs from the stored one in what a restore may change: it is
 * another envelope (a copy with answers put in), or its binding, tools or plans are other than stored.
 */
export function restoreChanges(restored: RestoredRecord, envelope: AgentRunEnvelope, binding: unknown): boolean {
  return envelope !== restored.envelope || restoreParts(envelope, binding) !== restored.parts;
}

/** The run actor's snapshot and its children's, as restored (see {@link untouchedSince}). */
export interface RestoredActor {
  run: unknown;
  children: Map<string, unknown>;
}

export function restoredActorOf(actor: Actor<typeof runMachine>): RestoredActor {
  const snapshot = actor.getSnapshot();
  const children = new Map<string, unknown>();
  for (const [id, child] of Object.entries(snapshot.children as Record<string, { getSnapshot(): unknown } | undefined>)) {
    if (child) children.set(id, child.getSnapshot());
  }
  return { run: snapshot, children };
}

/**
 * Whether the actor and each of its children still hold the very snapshots they were restored with. XState makes a
 * new snapshot object for every change, so they then persist to the record they were restored from: a write of it
 * can be told from the stored record without being made.
 */
export function untouchedSince(actor: Actor<typeof runMachine>, restored: RestoredActor): boolean {
  const snapshot = actor.getSnapshot();
  if (snapshot !== restored.run) return false;
  for (const [id, child] of Object.entries(snapshot.children as Record<string, { getSnapshot(): unknown } | undefined>)) {
    if (!child || child.getSnapshot() !== restored.children.get(id)) return false;
  }
  return true;
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
  // XState's persisted form and its JSON copy in one walk (persisted-json.ts), the lists left out of the copy.
  const copy = machineJson(snapshot as never, { ...snapshot.context, messages: [], receipts: [] }) as unknown as PersistedRun;
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

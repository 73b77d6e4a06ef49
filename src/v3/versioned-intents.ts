/**
 * A V3 run's versioned-memory intents, each carried by the versioned
 * memory-intent chart (machines/memory-intent-versioned.ts): the entry the run
 * record keeps in `memoryIntents` is the chart's `intentEntryOf` with its
 * persisted snapshot beside it. A tool write's chart has no invokes and moves
 * with events; an extraction's chart runs with the actors the run (or a
 * reconciliation) provides, and resolves with its final entry.
 */
import { createActor, type SnapshotFrom } from 'xstate';
import { intentEntryOf, versionedIntentMachine } from '../../machines/memory-intent-versioned.js';
import type {
  ClaimInput, ClaimOutput, CommitInput, CommitOutput, ReadReceiptInput, ReadReceiptOutput, VersionedIntentEntry, VersionedIntentEvent,
  VersionedIntentInput,
} from '../../machines/memory-intent-versioned-types.js';
import { fromPromise } from 'xstate';
import type { AgentRunMemoryIntent, JsonObject } from './envelope.js';
import type { JsonValue } from '../agent/json.js';

type IntentSnapshot = SnapshotFrom<typeof versionedIntentMachine>;

/** The record's entry of an intent: the chart's entry and its persisted snapshot. */
export function recordEntry(entry: VersionedIntentEntry, snapshot: unknown): AgentRunMemoryIntent {
  return { ...(entry as unknown as JsonObject), snapshot: JSON.parse(JSON.stringify(snapshot)) as JsonValue } as unknown as AgentRunMemoryIntent;
}

/** The chart's view of a stored entry (its own fields; the snapshot stays behind). */
export function storedEntry(intent: AgentRunMemoryIntent): VersionedIntentEntry {
  const i = intent as unknown as VersionedIntentEntry;
  const entry: VersionedIntentEntry = { operationId: i.operationId, kind: i.kind, status: i.status };
  if (Array.isArray(i.messageIds)) entry.messageIds = [...i.messageIds];
  if (typeof i.requestDigest === 'string') entry.requestDigest = i.requestDigest;
  if (typeof i.planned === 'number') entry.planned = i.planned;
  if (i.receipt && typeof i.receipt === 'object') entry.receipt = { ...i.receipt };
  if (i.error && typeof i.error === 'object') entry.error = { ...i.error };
  return entry;
}

/** Settled: nothing more moves it. */
export const isSettled = (intent: { status: string }) => intent.status === 'acknowledged' || intent.status === 'failed';

/**
 * A tool write's intent after `events` (sent in order), from `stored` (or a fresh one): the record's entry.
 * The chart refuses what it cannot take (an event in a final state changes nothing).
 */
export function moveToolIntent(operationId: string, stored: AgentRunMemoryIntent | null, events: VersionedIntentEvent[]): AgentRunMemoryIntent {
  const input: VersionedIntentInput = { operationId, kind: 'tool', ...(stored ? { stored: storedEntry(stored) } : {}) };
  const actor = createActor(versionedIntentMachine, { input });
  actor.start();
  for (const event of events) actor.send(event);
  const snapshot = actor.getSnapshot();
  const fields = intentEntryOf(snapshot);
  // A settled tool intent is done moving: its entry says all its chart would, so the record does not carry the
  // chart's snapshot for it (every later save of the run rewrites the record's head, intents included).
  const entry = isSettled(fields) ? (fields as unknown as AgentRunMemoryIntent) : recordEntry(fields, actor.getPersistedSnapshot());
  actor.stop();
  return entry;
}

/** What an extraction's chart asks of the run: its request, its saves, the session's commit and receipt. */
export interface ExtractActors {
  claim(input: ClaimInput): Promise<ClaimOutput>;
  /** Saves the record with this entry as the operation's intent. */
  save(entry: AgentRunMemoryIntent): Promise<void>;
  commit(input: CommitInput): Promise<CommitOutput>;
  readReceipt(input: ReadReceiptInput): Promise<ReadReceiptOutput>;
}

/** The record's entry of a fresh extraction, before its chart runs (it is saved in the terminal commit). */
export function freshExtractIntent(operationId: string): AgentRunMemoryIntent {
  const actor = createActor(versionedIntentMachine, { input: { operationId, kind: 'extract' } });
  const snapshot = actor.getSnapshot();
  return recordEntry(intentEntryOf(snapshot), actor.getPersistedSnapshot());
}

/**
 * Runs an extraction's chart to its end: fresh (the run saved it `intended`), or from the stored entry
 * (a reconciliation). Resolves with the record's last entry (the last one saved, or the one the chart ends with).
 */
export function runExtractIntent(operationId: string, stored: AgentRunMemoryIntent | null, actors: ExtractActors): Promise<AgentRunMemoryIntent> {
  let actor: ReturnType<typeof createActor<typeof versionedIntentMachine>>;
  const logic = versionedIntentMachine.provide({
    actors: {
      claim: fromPromise<ClaimOutput, ClaimInput>(({ input }) => actors.claim(input)),
      saveIntent: fromPromise<unknown, { operationId: string; entry: VersionedIntentEntry }>(async ({ input }) => {
        await actors.save(recordEntry(input.entry, actor.getPersistedSnapshot()));
        return null;
      }),
      commit: fromPromise<CommitOutput, CommitInput>(({ input }) => actors.commit(input)),
      readReceipt: fromPromise<ReadReceiptOutput, ReadReceiptInput>(({ input }) => actors.readReceipt(input)),
    },
  });
  const input: VersionedIntentInput = { operationId, kind: 'extract', ...(stored ? { stored: storedEntry(stored) } : {}) };
  actor = createActor(logic, { input });
  return new Promise<AgentRunMemoryIntent>((resolve, reject) => {
    actor.subscribe({
      next: (snapshot: IntentSnapshot) => {
        if (snapshot.status !== 'done') return;
        resolve(recordEntry(intentEntryOf(snapshot), actor.getPersistedSnapshot()));
      },
      error: reject,
    });
    actor.start();
  });
}

/**
 * The one place that knows the shape of a run's persisted snapshot. It turns
 * an envelope into a record a store can write without knowing that shape, and
 * puts a stored record back together:
 *
 *   - the head: the envelope without what grows with the run. Its transcript
 *     (`snapshot.context.messages`, and a terminal result's `messages` when
 *     they are the same) is replaced by its length, `envelope.receipts` is
 *     emptied, and the run's ended receipts (`snapshot.context.receipts`) are
 *     replaced by their count. An open tool call's receipt stays inside the
 *     head, in the call's snapshot: there are few (one batch).
 *   - the transcript: one part per message.
 *   - the receipts: one part per entry of `envelope.receipts` (the union of
 *     the run's ended receipts and its open calls'), each stored once.
 *
 * The join restores `snapshot.context.receipts` from the parts that are not
 * an open call's (the head lists those few keys), and `envelope.receipts`
 * from every part (left unbuilt until read when the context keeps a list).
 * A snapshot without `context.receipts` (the engine's first shape) is
 * handled as before: every receipt is a part and the snapshot keeps nothing
 * of them.
 *
 * What the record relies on, and checks where that is cheap: every key of
 * `snapshot.context.receipts` is a key of `envelope.receipts` with the same
 * receipt (checked by key for all, by value for the current step's). When
 * the keys do not agree, the context's receipts stay inside the head.
 */
import { byStepThenCall, type CallReceipt } from '../../machines/index.js';
import { StoredRecordError } from '../errors/index.js';
import type { AgentRunEnvelope, AgentToolReceipt } from '../agent/types.js';
import { envelopeFields, lazyReceipts, unbuiltReceiptsOf, type ReceiptLists } from '../agent/envelope.js';

/** Marks where a transcript was taken out of the head. */
interface TranscriptRef {
  $transcript: number;
}

/** Marks where the run's ended receipts were taken out of the head. */
interface ReceiptsRef {
  $receipts: number;
  /** The run keeps them as a list (by step, then call id), not as a record by key. */
  list?: true;
}

/** What the head says about the record's parts, beside the head envelope. */
export interface RecordLayout {
  /** Keys of receipt parts that are not in `snapshot.context.receipts` (open calls'); absent when the context has no receipts taken out. */
  outside?: string[];
}

/** An envelope as a store writes it. */
export interface RunRecord {
  /** The head envelope (not encoded yet). */
  head: Record<string, unknown>;
  layout: RecordLayout;
  /** The transcript, each message a part. It only grows: a save appends. */
  messages: readonly unknown[];
  /** The receipt parts. */
  receipts: readonly AgentToolReceipt[];
  /**
   * The model step the run is in: receipts of earlier steps are settled and
   * never change again in the engine's saves (a planner checks only the
   * receipts of this step and later).
   */
  currentStep: number;
  /**
   * Changes when the snapshot may have been rewritten rather than appended to
   * (a machine version migrated): the planner then writes every part again.
   * The envelope's own version is not part of it: the engine moves a run
   * between envelope versions 1 and 2 as approvals open and close, and that
   * changes only the head.
   */
  lineage: string;
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function contextOf(snapshot: unknown): Json | undefined {
  return isObject(snapshot) && isObject(snapshot.context) ? snapshot.context : undefined;
}

/** Splits an envelope into its record. Reads the envelope, changes nothing in it. */
export function toRecord(envelope: AgentRunEnvelope): RunRecord {
  const snapshot = envelope.snapshot as unknown;
  const context = contextOf(snapshot);
  const messages = Array.isArray(context?.messages) ? (context.messages as unknown[]) : [];
  const step = typeof context?.step === 'number' ? context.step : 1;
  const currentStep = Math.max(0, step - 1);
  // An engine envelope whose receipts record nobody has read: the parts come from its lists, and the record is never
  // built. Any other envelope (or one whose snapshot no longer holds those lists) is split from its record.
  const sources = engineReceipts(unbuiltReceiptsOf(envelope), context);
  const all = sources ? {} : envelope.receipts ?? {};
  const allKeys = sources ? [] : Object.keys(all);
  // Not Object.values: on a run's many receipts (an object in dictionary mode) it is several times slower.
  const receipts = sources ? (sources.open.length > 0 ? sources.ended.concat(sources.open) : sources.ended) : allKeys.map((key) => all[key]!);

  const layout: RecordLayout = {};
  // New objects along the paths to what the head replaces; the rest is shared with the envelope, only read by the encoder.
  let headContext: Json | undefined;
  if (context) {
    headContext = { ...context, messages: { $transcript: messages.length } satisfies TranscriptRef };
    const ended = sources
      ? { count: sources.ended.length, outside: sources.open.map((r) => r.key), list: true }
      : endedReceipts(context, all, allKeys, currentStep);
    if (ended) {
      headContext.receipts = (ended.list ? { $receipts: ended.count, list: true } : { $receipts: ended.count }) satisfies ReceiptsRef;
      layout.outside = ended.outside;
    }
  }
  // `receipts` is left empty, not deleted, so the loaded envelope keeps its keys in their order. Not a spread, which
  // would read (and so build) the receipts record the head leaves out.
  const head: Json = envelopeFields(envelope, { receipts: {}, ...(headContext ? { snapshot: { ...(snapshot as Json), context: headContext } } : {}) });
  // Which save wrote each row is the rows' own business: a loaded envelope saved again does not carry it into the head.
  delete head.saves;
  if (envelope.result && sameMessages(envelope.result.messages, messages)) {
    head.result = { ...envelope.result, messages: { $transcript: messages.length } satisfies TranscriptRef };
  }
  return { head, layout, messages, receipts, currentStep, lineage: `${envelope.machine?.id}@${envelope.machine?.version}` };
}

/**
 * The lists an engine envelope's unbuilt receipts record comes from (see lazyReceipts), when the snapshot's ended
 * receipts are still that very list and the open calls' receipts are not among them: the record's parts without
 * building or walking it. An open call's key among the ended ones (which the engine never does) leaves it to the
 * check below, as does a record anyone has read or replaced (it may have been changed since).
 */
function engineReceipts(sources: ReceiptLists | undefined, context: Json | undefined) {
  if (!sources || !context || context.receipts !== sources.ended) return undefined;
  const { ended, open } = sources;
  for (const receipt of open) {
    // The ended list is ordered by step, then call: only its tail can hold this step's keys.
    for (let i = ended.length - 1; i >= 0 && ended[i]!.modelStep >= receipt.modelStep; i--) {
      if (ended[i]!.key === receipt.key) return undefined;
    }
  }
  return sources;
}

/**
 * When the snapshot holds the run's ended receipts and they agree with
 * `envelope.receipts`: how many there are, and the keys of the receipt parts
 * that are not among them. Undefined: the context's receipts stay in the head.
 */
function endedReceipts(context: Json, all: Record<string, AgentToolReceipt>, allKeys: readonly string[], currentStep: number) {
  const ended = context.receipts;
  // The run keeps its folded steps' receipts as a list ordered by step and call id; older records, as a record by key.
  const list = Array.isArray(ended);
  if (!list && !isObject(ended)) return undefined;
  const keys = new Set<string>();
  const agrees = (key: string, receipt: unknown): boolean => {
    if (!Object.hasOwn(all, key) || keys.has(key)) return false;
    const projected = all[key]!;
    // The current step's receipts are compared by value; a settled one is the same key, so the same receipt.
    if (projected !== receipt && (receipt as AgentToolReceipt)?.modelStep >= currentStep
      && JSON.stringify(projected) !== JSON.stringify(receipt)) return false;
    keys.add(key);
    return true;
  };
  if (list) {
    for (const r of ended as unknown[]) if (!agrees(isObject(r) && typeof r.key === 'string' ? r.key : '', r)) return undefined;
  } else {
    for (const key of Object.keys(ended)) if (!agrees(key, (ended as Json)[key])) return undefined;
  }
  // Every key in `keys` is one of `all`'s: as many means none is outside.
  const outside = keys.size === allKeys.length ? [] : allKeys.filter((key) => !keys.has(key));
  return { count: keys.size, outside, list };
}


/** Whether a result's messages are the transcript: the engine hands the snapshot's own messages, so identity settles it; a copy is compared by value. */
function sameMessages(a: unknown, b: readonly unknown[]): boolean {
  if (!Array.isArray(a) || a.length !== b.length) return false;
  return a === b || a.every((m, i) => m === b[i]) || JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Puts a stored run back together from its decoded parts: `head` as record
 * format `format` wrote it (1: the envelope; 2: `{ layout, envelope }` with
 * whatever else the planner keeps), `messages` the transcript parts in order,
 * `receipts` every receipt part.
 */
export function joinRecord(runId: string, format: number, head: unknown, messages: unknown[], receipts: unknown[]): AgentRunEnvelope {
  const corrupt = (what: string) => new StoredRecordError('record_corrupt', runId, `Stored ${what} of run ${runId} is incomplete.`);
  const layout: RecordLayout = format >= 2 && isObject(head) && isObject(head.layout) ? head.layout as RecordLayout : {};
  const envelope = (format >= 2 ? (isObject(head) ? head.envelope : undefined) : head) as AgentRunEnvelope | undefined;
  if (!isObject(envelope)) throw corrupt('head');
  const context = contextOf(envelope.snapshot);
  const ref = context?.messages as TranscriptRef | undefined;
  if (!context || !isObject(ref) || ref.$transcript !== messages.length) throw corrupt('transcript');
  context.messages = messages;
  if (isObject(envelope.result) && isObject(envelope.result.messages)
    && (envelope.result.messages as unknown as TranscriptRef).$transcript !== undefined) {
    // The transcript itself, as the engine's own envelopes hold it: a loaded envelope is the caller's, and no part of
    // a run is edited in place once made.
    (envelope.result as { messages: unknown }).messages = messages;
  }
  for (const receipt of receipts) {
    if (!isObject(receipt) || typeof receipt.key !== 'string') throw corrupt('receipts');
  }
  const ended = context.receipts as ReceiptsRef | undefined;
  const isList = isObject(ended) && ended.list === true && Object.keys(ended).length === 2;
  if (isList && typeof ended.$receipts === 'number') {
    // The run's own shape: the ended receipts as a list in run order, and `envelope.receipts` (every receipt, by key)
    // left unbuilt until someone reads it, as in the envelopes the engine builds (see lazyReceipts). The same objects
    // in both: a receipt is replaced, never edited.
    const outside = new Set(layout.outside ?? []);
    const list: AgentToolReceipt[] = [];
    const open: AgentToolReceipt[] = [];
    for (const receipt of receipts as AgentToolReceipt[]) (outside.has(receipt.key) ? open : list).push(receipt);
    if (list.length !== ended.$receipts) throw corrupt('receipts');
    // Parts come in key order; the run keeps its list by step, then call (a list already in that order sorts in one pass).
    context.receipts = (list as unknown as CallReceipt[]).sort(byStepThenCall);
    lazyReceipts(envelope, list, open);
    return envelope;
  }
  envelope.receipts = {};
  for (const receipt of receipts as AgentToolReceipt[]) envelope.receipts[receipt.key] = receipt;
  if (isObject(ended) && typeof ended.$receipts === 'number' && Object.keys(ended).length === 1) {
    const outside = new Set(layout.outside ?? []);
    const restored: Record<string, AgentToolReceipt> = {};
    for (const [key, receipt] of Object.entries(envelope.receipts)) {
      // The same objects as envelope.receipts, as in the envelopes the engine builds: a receipt is replaced, never edited.
      if (!outside.has(key)) restored[key] = receipt;
    }
    if (Object.keys(restored).length !== ended.$receipts) throw corrupt('receipts');
    context.receipts = restored;
  }
  return envelope;
}

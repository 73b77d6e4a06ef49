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

/**
 * Where an open call's receipt is read from instead of a part of its own: the run snapshot's
 * `context.outputs[callId].receipt` (`'output'`: a call that has ended, in a batch not folded yet) or
 * `children[callId].snapshot.context.receipt` (`'child'`: a call still running).
 */
export type InHeadReceipt = [key: string, where: 'output' | 'child', callId: string];

/** What the head says about the record's parts, beside the head envelope. */
export interface RecordLayout {
  /** Keys of the open calls' receipts (not in `snapshot.context.receipts`); absent when the context has no receipts taken out. */
  outside?: string[];
  /**
   * Record format 4: the open receipts that are no part because the head already holds them, as the very object the
   * engine's receipts record holds, in the call's own snapshot (the `executing` receipt written ahead of a tool's
   * effect, above all). Each is written once, in the head, until the call's batch is folded into the run's ended
   * receipts; then it becomes a part. Absent: every open receipt is a part.
   */
  inHead?: InHeadReceipt[];
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
  /**
   * Asked for by a store that keeps what a run never changes apart (`toRecord(envelope, { tail: true })`): the values
   * taken out of the head, put back by {@link joinRecord} from the head's `tail`. See {@link HeadTail}.
   */
  tail?: HeadTail;
}

/**
 * What a head may carry beside its envelope, at its end, for a store that lays the head out so that these bytes sit
 * on pages of their own (SQLite, see sqlite/run-rows.ts): values the run sets once and keeps. `binding` is the
 * envelope's (the head envelope holds 0 in its place, so the key keeps its position); `context` are the run
 * context's settings ({@link TAIL_CONTEXT}), taken out of the head's context, and `order` that context's keys in
 * their order, so the context is put back with its keys where they were. Nothing here needs to stay the same for a
 * load to be exact: a value that changed is simply written again.
 */
export interface HeadTail {
  binding?: unknown;
  context?: Record<string, unknown>;
  order?: string[];
}

/** The run context's settings, made when the run starts and kept (see {@link HeadTail}). */
export const TAIL_CONTEXT: readonly string[] = [
  'runId', 'maxSteps', 'maxOutputAttempts', 'maxVerifyAttempts', 'toolNames', 'outputMode', 'verify', 'deadlineAt', 'models', 'handoffs', 'plan',
];

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function contextOf(snapshot: unknown): Json | undefined {
  return isObject(snapshot) && isObject(snapshot.context) ? snapshot.context : undefined;
}

/** The machine a record was made by (`<id>@<version>`): a migrated machine may rewrite what the engine only appends to. */
export function lineageOf(envelope: Pick<AgentRunEnvelope, 'machine'>): string {
  return `${envelope.machine?.id}@${envelope.machine?.version}`;
}

/** Splits an envelope into its record. Reads the envelope, changes nothing in it. */
export function toRecord(envelope: AgentRunEnvelope, options?: { tail?: boolean }): RunRecord {
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
  const layout: RecordLayout = {};
  // An open receipt the head holds anyway (in its call's snapshot) is not written a second time as a part.
  const inHead = sources && sources.open.length > 0 ? headPlaces(snapshot, context!, sources.open) : undefined;
  if (inHead) layout.inHead = inHead.places;
  const open = inHead ? inHead.rest : sources?.open;
  // Not Object.values: on a run's many receipts (an object in dictionary mode) it is several times slower.
  const receipts = sources ? (open!.length > 0 ? sources.ended.concat(open!) : sources.ended) : allKeys.map((key) => all[key]!);

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
  let tail: HeadTail | undefined;
  if (options?.tail) {
    tail = {};
    if (Object.hasOwn(envelope, 'binding') && envelope.binding !== undefined) tail.binding = envelope.binding;
    if (headContext) {
      const moved: Json = {};
      for (const key of TAIL_CONTEXT) {
        if (!Object.hasOwn(headContext, key)) continue;
        moved[key] = headContext[key];
        delete headContext[key];
      }
      if (Object.keys(moved).length > 0) {
        tail.context = moved;
        tail.order = Object.keys(context!);
      }
    }
  }
  const head: Json = envelopeFields(envelope, {
    receipts: {}, ...(headContext ? { snapshot: { ...(snapshot as Json), context: headContext } } : {}),
    ...(tail && Object.hasOwn(tail, 'binding') ? { binding: 0 } : {}),
  });
  // Which save wrote each row is the rows' own business: a loaded envelope saved again does not carry it into the head.
  delete head.saves;
  if (envelope.result && sameMessages(envelope.result.messages, messages)) {
    head.result = { ...envelope.result, messages: { $transcript: messages.length } satisfies TranscriptRef };
  }
  return { head, layout, messages, receipts, currentStep, lineage: lineageOf(envelope), ...(tail ? { tail } : {}) };
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
 * Where in the run snapshot each open receipt is, by identity: the engine's receipts record is built from these very
 * objects (see runtime/record.ts), so the head, which holds them, holds each receipt's bytes. Undefined when none is
 * found there; `rest` are the open receipts found elsewhere, which stay parts.
 */
function headPlaces(snapshot: unknown, context: Json, open: readonly AgentToolReceipt[]) {
  const batch = Array.isArray(context.batch) ? context.batch : [];
  const outputs = isObject(context.outputs) ? context.outputs : {};
  const children = isObject(snapshot) && isObject(snapshot.children) ? snapshot.children : {};
  const places: InHeadReceipt[] = [];
  const rest: AgentToolReceipt[] = [];
  for (const receipt of open) {
    let place: InHeadReceipt | undefined;
    for (const callId of batch) {
      if (typeof callId !== 'string') continue;
      if (receiptAt(outputs, callId, 'output') === receipt) place = [receipt.key, 'output', callId];
      else if (receiptAt(children, callId, 'child') === receipt) place = [receipt.key, 'child', callId];
      if (place) break;
    }
    if (place) places.push(place);
    else rest.push(receipt);
  }
  return places.length > 0 ? { places, rest } : undefined;
}

/** The receipt at one of {@link InHeadReceipt}'s places, from the context's `outputs` or the snapshot's `children`. */
function receiptAt(from: Json, callId: string, where: InHeadReceipt[1]): unknown {
  const entry = Object.hasOwn(from, callId) ? from[callId] : undefined;
  if (!isObject(entry)) return undefined;
  if (where === 'output') return entry.receipt;
  const snapshot = entry.snapshot;
  return isObject(snapshot) && isObject(snapshot.context) ? snapshot.context.receipt : undefined;
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
  if (format >= 2 && isObject(head) && Object.hasOwn(head, 'tail')) putTail(envelope, head.tail, corrupt);
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
    if (layout.inHead !== undefined) open.push(...headReceipts(envelope, context, layout.inHead, outside, open, corrupt));
    // Parts come in key order; the run keeps its list by step, then call (a list already in that order sorts in one pass).
    context.receipts = (list as unknown as CallReceipt[]).sort(byStepThenCall);
    lazyReceipts(envelope, list, open);
    return envelope;
  }
  // Only the list shape above leaves receipts in the head (see toRecord).
  if (layout.inHead !== undefined) throw corrupt('receipts');
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

/**
 * The open receipts a head of format 4 holds in its calls' snapshots ({@link RecordLayout.inHead}), the very objects
 * found there (as in the engine's envelopes). Each must be where the layout says, carry its key, be an open call's
 * and be on no part.
 */
function headReceipts(
  envelope: AgentRunEnvelope, context: Json, places: unknown, outside: ReadonlySet<string>,
  parts: readonly AgentToolReceipt[], corrupt: (what: string) => StoredRecordError,
): AgentToolReceipt[] {
  if (!Array.isArray(places)) throw corrupt('receipts');
  const children = isObject(envelope.snapshot) && isObject((envelope.snapshot as Json).children) ? (envelope.snapshot as Json).children as Json : {};
  const outputs = isObject(context.outputs) ? context.outputs : {};
  const seen = new Set(parts.map((r) => r.key));
  const out: AgentToolReceipt[] = [];
  for (const place of places as unknown[]) {
    if (!Array.isArray(place) || place.length !== 3) throw corrupt('receipts');
    const [key, where, callId] = place as unknown[];
    if (typeof key !== 'string' || typeof callId !== 'string' || (where !== 'output' && where !== 'child')) throw corrupt('receipts');
    const receipt = receiptAt(where === 'output' ? outputs : children, callId, where);
    if (!isObject(receipt) || receipt.key !== key || !outside.has(key) || seen.has(key)) throw corrupt('receipts');
    seen.add(key);
    out.push(receipt as unknown as AgentToolReceipt);
  }
  return out;
}

/** Puts a head's {@link HeadTail} back into its envelope: the binding in its place, the context's settings where they were. */
function putTail(envelope: AgentRunEnvelope, tail: unknown, corrupt: (what: string) => StoredRecordError): void {
  if (!isObject(tail)) throw corrupt('head');
  if (Object.hasOwn(tail, 'binding')) envelope.binding = tail.binding as AgentRunEnvelope['binding'];
  if (!Object.hasOwn(tail, 'context')) return;
  const moved = tail.context;
  const order = tail.order;
  const snapshot = envelope.snapshot as unknown;
  const context = contextOf(snapshot);
  if (!isObject(moved) || !Array.isArray(order) || !context || !order.every((key) => typeof key === 'string')) throw corrupt('head');
  const out: Json = {};
  const put = (key: string, value: unknown) => Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  for (const key of order as string[]) {
    if (Object.hasOwn(moved, key)) put(key, moved[key]);
    else if (Object.hasOwn(context, key)) put(key, context[key]);
  }
  for (const key of Object.keys(moved)) if (!Object.hasOwn(out, key)) throw corrupt('head');
  for (const key of Object.keys(context)) if (!Object.hasOwn(out, key)) put(key, context[key]);
  (snapshot as Json).context = out;
}

/**
 * The copy the in-memory store keeps of a saved envelope, and the copy a load
 * hands out. Split from in-memory.ts so the store reads as a store.
 *
 * A save's copy shares every part equal to the run's previous copy (jsonCopy
 * with the previous copy). For an envelope the engine built, the transcript
 * and the ended receipts are not even compared: the engine only appends to
 * them and never edits one of their parts in place (the same rule the durable
 * stores' write planner relies on, see ../stores/write-plan.ts). When such a
 * list still starts with the object it started with at the last save, and
 * still has at the last save's last position the object it had there, the
 * copy is the previous copy with copies of the new parts after it. A save then
 * costs what the step added, not a walk of the whole history. Any other
 * envelope, and an engine envelope whose lists do not line up that way (a
 * resumed run's first save, a migrated machine version), is compared part by
 * part as before.
 */
import type { AgentRunEnvelope, AgentToolReceipt } from '../agent/types.js';
import { envelopeFields, unbuiltReceiptsOf, type ReceiptLists } from '../agent/envelope.js';
import { defineKey, jsonCopy } from '../agent/json.js';
import { lineageOf } from './record.js';

/** What a save left of an append-only list of the caller's (its length is the stored copy's): its first and last part, the caller's own objects, compared by identity. */
export interface ListEnds {
  first: unknown;
  last: unknown;
}

/** The two lists of a run's snapshot context the engine only ever appends to. */
const APPEND_ONLY = ['messages', 'receipts'] as const;
type AppendOnly = (typeof APPEND_ONLY)[number];

export interface StoredCopy {
  /**
   * The envelope as JSON would carry it: a copy no caller can reach (a load hands out a copy of it). When the
   * engine's envelope left its `receipts` record unbuilt (see lazyReceipts in ../agent/envelope.ts),
   * `envelope.receipts` is null and `receipts` holds the copies of the two lists it is built from, the ended one
   * being the copy's own `snapshot.context.receipts`: the run's receipts are held once.
   */
  envelope: AgentRunEnvelope;
  receipts?: ReceiptLists;
  /** For an engine envelope: where each append-only list of its context stood, and the machine that made it (see lineageOf). */
  ends?: { lineage: string; lists: Partial<Record<AppendOnly, ListEnds>> };
}

type Context = Record<string, unknown>;

const isPlain = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype && !Object.hasOwn(value, 'toJSON');
const isPlainArray = (value: unknown): value is unknown[] =>
  Array.isArray(value) && Object.getPrototypeOf(value) === Array.prototype && !Object.hasOwn(value, 'toJSON');
const contextOf = (envelope: { snapshot?: unknown } | undefined): Context | undefined => {
  const context = (envelope?.snapshot as { context?: unknown } | null | undefined)?.context;
  return typeof context === 'object' && context !== null ? context as Context : undefined;
};

/**
 * The copy a save keeps, sharing what did not change with `previous`. An engine envelope whose receipts record is
 * unbuilt is copied without it (null in its place, so the keys keep their order) and with its lists instead; a
 * result whose `messages` is the snapshot's transcript holds the copy's transcript, not a second copy of it.
 */
export function storedCopy(envelope: AgentRunEnvelope, previous: StoredCopy | undefined): StoredCopy {
  const lists = unbuiltReceiptsOf(envelope);
  const context = contextOf(envelope);
  // A terminal result whose transcript is the snapshot's own (as the engine saves it) shares the copy's transcript.
  const result = envelope.result as { messages?: unknown } | undefined;
  const sharesTranscript = result !== undefined && result !== null && Array.isArray(context?.messages) && result.messages === context.messages;
  if (lists === undefined && !sharesTranscript) return { envelope: jsonCopy(envelope, previous?.envelope) };
  const replace: Record<string, unknown> = lists === undefined ? {} : { receipts: null };
  if (sharesTranscript) replace.result = { ...result, messages: [] };

  // The engine's append-only lists, copied from where the previous copy left them; the rest is copied around them.
  const snapshot = envelope.snapshot as unknown;
  const appended: Partial<Record<AppendOnly, unknown[]>> = {};
  const ends: Partial<Record<AppendOnly, ListEnds>> = {};
  const lineage = lineageOf(envelope);
  if (lists !== undefined && isPlain(snapshot) && isPlain(context)) {
    const before = contextOf(previous?.envelope);
    const from = previous?.ends?.lineage === lineage ? previous.ends.lists : {};
    const holes: Context = {};
    for (const key of APPEND_ONLY) {
      const list = context[key];
      if (!isPlainArray(list)) continue;
      appended[key] = extendCopy(list, before?.[key], from[key]);
      ends[key] = { first: list[0], last: list[list.length - 1] };
      holes[key] = 0;
    }
    replace.snapshot = { ...snapshot, context: { ...context, ...holes } };
  }

  let copy = jsonCopy(envelopeFields(envelope, replace), previous?.envelope) as unknown as AgentRunEnvelope;
  if (Object.keys(appended).length > 0) {
    // The copy's context gets the lists; it and the objects above it are this copy's own, never the previous copy's.
    const own = ownPath(copy, previous?.envelope);
    copy = own.envelope;
    for (const key of APPEND_ONLY) if (appended[key] !== undefined) own.context[key] = appended[key];
  }
  const copiedContext = contextOf(copy);
  if (sharesTranscript && Array.isArray(copiedContext?.messages)) {
    const copiedResult = copy.result as { messages: unknown };
    if (copiedResult.messages !== copiedContext.messages) {
      (copy as { result: unknown }).result = copiedResult === previous?.envelope.result
        ? { ...copiedResult, messages: copiedContext.messages }
        : Object.assign(copiedResult, { messages: copiedContext.messages });
    }
  }
  const endsOut = Object.keys(ends).length > 0 ? { ends: { lineage, lists: ends } } : {};
  if (lists === undefined) return { envelope: copy, ...endsOut };
  const ended = context?.receipts === lists.ended && Array.isArray(copiedContext?.receipts)
    ? copiedContext.receipts as AgentToolReceipt[]
    : jsonCopy(lists.ended, previous?.receipts?.ended);
  return { envelope: copy, receipts: { ended, open: jsonCopy(lists.open, previous?.receipts?.open) }, ...endsOut };
}

/**
 * The previous copy of `list` with copies of the parts after where it ended, when `list` still lines up with it
 * (see the module comment); otherwise `list` compared and copied part by part against it.
 */
function extendCopy(list: unknown[], before: unknown, ends: ListEnds | undefined): unknown[] {
  if (ends !== undefined && isPlainArray(before) && before.length > 0 && list.length >= before.length
    && list[0] === ends.first && list[before.length - 1] === ends.last) {
    if (list.length === before.length) return before;
    const out = before.slice();
    for (let i = before.length; i < list.length; i++) {
      const part = list[i];
      // As JSON writes such an element of an array.
      out.push(part === undefined || typeof part === 'function' || typeof part === 'symbol' ? null : jsonCopy(part));
    }
    return out;
  }
  return jsonCopy(list, before);
}

/**
 * `copy`, with it, its snapshot and its snapshot's context objects of its own where they were `previous`'s, and that
 * context. The lists' places hold 0 in the copy where the previous copy held arrays, so the path is the copy's own
 * already, unless the previous copy was stored with a 0 there too (a caller's envelope, not the engine's).
 */
function ownPath(copy: AgentRunEnvelope, previous: AgentRunEnvelope | undefined): { envelope: AgentRunEnvelope; context: Context } {
  const before = previous as unknown as Record<string, unknown> | undefined;
  const beforeSnapshot = before?.snapshot as Record<string, unknown> | undefined;
  const envelope = copy === previous ? { ...copy } : copy;
  let snapshot = (envelope as { snapshot: Record<string, unknown> }).snapshot;
  const context = snapshot.context === beforeSnapshot?.context ? { ...(snapshot.context as Context) } : snapshot.context as Context;
  if (snapshot === beforeSnapshot || snapshot.context !== context) {
    snapshot = { ...snapshot };
    defineKey(snapshot, 'context', context);
  }
  (envelope as { snapshot: unknown }).snapshot = snapshot;
  return { envelope, context };
}

/** What a load hands out: a deep copy, the receipts record built from the lists as the engine's envelope would build it. */
export function thawRun(stored: StoredCopy): AgentRunEnvelope {
  if (stored.receipts === undefined) return thaw(stored.envelope) as AgentRunEnvelope;
  const out: Record<string, unknown> = {};
  const envelope = stored.envelope as unknown as Record<string, unknown>;
  for (const key of Object.keys(envelope)) {
    if (key !== 'receipts') defineKey(out, key, thaw(envelope[key]));
    else {
      const record: Record<string, unknown> = {};
      for (const receipt of stored.receipts.ended) defineKey(record, receipt.key, thaw(receipt));
      for (const receipt of stored.receipts.open) defineKey(record, receipt.key, thaw(receipt));
      out.receipts = record;
    }
  }
  return out as unknown as AgentRunEnvelope;
}

/** A deep copy of a stored (plain) copy: what a load hands out, shared with nothing. */
function thaw(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(thaw);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) defineKey(out, key, thaw((value as Record<string, unknown>)[key]));
  return out;
}

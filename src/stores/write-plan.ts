/**
 * The incremental write planner every row-based store shares (SQLite,
 * PostgreSQL, yours): from an envelope and what the store says it holds of
 * the run, what one save writes. It knows nothing of the snapshot's shape
 * (record.ts does) and nothing of SQL (the adapters do).
 *
 * A save encodes only what is new. The stored head carries a small index
 * (`PlanIndex`): the transcript's length and the sha256 of its first and last parts, the
 * model step from which receipts were still open, how many receipt parts
 * there are, and the record's lineage. From it:
 *
 *   - transcript: when the envelope's transcript is at least as long and its
 *     first message and its message at the stored length - 1 encode to the
 *     stored first and last parts, the save appends the messages after it;
 *     otherwise it rewrites them all.
 *   - receipts: those of a step before the stored `settledStep` are settled
 *     (the engine never changes them again); the save encodes the others,
 *     upserts the ones whose bytes changed and deletes open rows the envelope
 *     no longer has. When the settled ones are not as many as stored (one was
 *     added, or dropped), or the run went back a step, it rewrites them all.
 *   - a changed lineage (a migrated machine version), or a head of format 1
 *     (no index) or 2 (digests made the older way): every row is written
 *     again.
 *
 * Bytes and hashing per save are those of the head and the step's parts. What
 * the rules cannot see is a message in the middle of the transcript, or a
 * settled receipt, rewritten in place: the engine does neither, and an
 * envelope that does must come with a new lineage.
 */
import { StoredRecordError } from '../errors/index.js';
import type { AgentRunEnvelope, AgentRunStatus } from '../agent/types.js';
import {
  decodeFramed, encodePart, encodeWithTail, framedFormat, packTail, samePacked, sha256, sha256Text, unpackTail,
} from './codec.js';
import { emptyDigest, legacyJsonDigest, MIXED_DIGEST_FORMAT, sameDigest, xorRow, xorRowTextOf } from './digest.js';
import { joinRecord, toRecord, type RecordLayout } from './record.js';
import { receiptFromPart, receiptPartValue } from './receipt-part.js';

/** What a stored head says about its run's other rows. */
export interface PlanIndex {
  /** Transcript parts stored. */
  length: number;
  /** sha256 of the first and of the last transcript part's bytes; null for an empty transcript. */
  first: Uint8Array | null;
  tail: Uint8Array | null;
  /** Receipts of a model step before this one are settled. */
  settledStep: number;
  /** Receipt parts stored. */
  receiptCount: number;
  lineage: string;
}

/** What the store holds of a run, as the planner needs it. */
export interface StoredState {
  revision: number;
  /** From the stored head (see {@link readIndex}); null when a save cannot extend it (a head of format 1 or 2): the save rewrites every row. */
  index: PlanIndex | null;
  transcriptDigest: Uint8Array;
  receiptsDigest: Uint8Array;
  /** The stored receipt rows of a model step >= `index.settledStep`: key to the sha256 of the row's bytes. */
  unsettled: ReadonlyMap<string, Uint8Array>;
  /**
   * In memory only: the message objects whose bytes are the index's first and last parts, as the save (or load)
   * that left this state had them. An envelope whose transcript holds those very objects there is taken to hold
   * those bytes without encoding them again (a message is never edited in place once made).
   */
  ends?: { first: unknown; tail: unknown };
  /**
   * In memory only: the head tail (see record.ts, HeadTail) the last save wrote, as bytes and as the value those
   * bytes hold. A save whose tail is the same plain data (see codec.ts, samePacked) writes these bytes again
   * instead of packing it: a run's tail does not change while it runs, and packing it took about a third of a
   * head's encoding.
   */
  tail?: { value: unknown; bytes: Uint8Array };
}

export interface MessageRow {
  index: number;
  bytes: Uint8Array;
}

export interface ReceiptRow {
  key: string;
  modelStep: number;
  bytes: Uint8Array;
}

/** One save, as rows. Written in one transaction, it leaves exactly the envelope's record. */
export interface SavePlan {
  head: Uint8Array;
  /** Delete the stored transcript rows from this index on before writing `messages` (null: delete none). */
  trimMessagesFrom: number | null;
  /** Transcript rows to insert. */
  messages: MessageRow[];
  /** Delete every stored receipt row before writing `receipts`. */
  replaceReceipts: boolean;
  /** Receipt rows to delete, by key. */
  deleteReceipts: string[];
  /** Receipt rows to insert or replace. */
  receipts: ReceiptRow[];
  /** What the store holds once the plan is written (keep it to plan the next save without reading). */
  next: StoredState;
  /** Bytes of the head and of every row written. */
  bytes: number;
}

/**
 * The oldest head format whose index and digests a save extends: the first whose digests are made the way a save
 * makes them. A head of an older format (1: no index; 2: digests made the older way) is read as it is, and its run's
 * next save writes every row again.
 */
const INCREMENTAL_FORMAT = MIXED_DIGEST_FORMAT;

/** The head value a head of format 2 or later holds. */
interface Head {
  plan: PlanIndex;
  layout: RecordLayout;
  envelope: unknown;
}

/**
 * Plans a save. `stored` is what the store holds of the run (undefined: a new run). With `fillFor`, the head keeps
 * what the run never changes at its end, after a fill of zeros whose size `fillFor` decides (see record.ts,
 * HeadTail, and codec.ts, encodeWithTail): a store that lays rows out on pages puts those bytes on pages of their own.
 */
export function planSave(
  envelope: AgentRunEnvelope, stored: StoredState | undefined, fillFor?: (before: number, after: number) => number,
): SavePlan {
  const record = toRecord(envelope, fillFor ? { tail: true } : undefined);
  const index = stored?.index && sameLineage(stored.index.lineage, record.lineage) ? stored.index : null;

  // The transcript.
  const { messages } = record;
  let from = 0;
  let transcriptDigest = emptyDigest();
  if (index && stored && messages.length >= index.length && (index.length === 0 || (
    sameEnd(messages[0], stored.ends?.first, index.first)
    && (index.length === 1 || sameEnd(messages[index.length - 1], stored.ends?.tail, index.tail))))) {
    from = index.length;
    transcriptDigest = Buffer.from(stored.transcriptDigest);
  }
  const messageRows: MessageRow[] = [];
  let first = from > 0 ? index!.first : null;
  let tail = from > 0 ? index!.tail : null;
  for (let i = from; i < messages.length; i++) {
    const bytes = encodePart(messages[i]);
    tail = sha256(bytes);
    if (i === 0) first = tail;
    xorRow(transcriptDigest, i, tail);
    messageRows.push({ index: i, bytes });
  }

  // The receipts.
  const settledStep = index?.settledStep ?? 0;
  let replaceReceipts = !index || !stored || record.currentStep < settledStep;
  if (!replaceReceipts) {
    const settled = record.receipts.reduce((n, r) => n + (r.modelStep < settledStep ? 1 : 0), 0);
    replaceReceipts = settled !== index!.receiptCount - stored!.unsettled.size;
  }
  const receiptsDigest = replaceReceipts ? emptyDigest() : Buffer.from(stored!.receiptsDigest);
  const before = new Map(replaceReceipts ? [] : stored!.unsettled);
  const receiptRows: ReceiptRow[] = [];
  const unsettled = new Map<string, Uint8Array>();
  for (const receipt of record.receipts) {
    if (!replaceReceipts && receipt.modelStep < settledStep) continue;
    const bytes = encodePart(receiptPartValue(receipt));
    const sha = sha256(bytes);
    if (receipt.modelStep >= record.currentStep) unsettled.set(receipt.key, sha);
    const old = before.get(receipt.key);
    before.delete(receipt.key);
    if (old && sha.equals(old)) continue;
    if (old) xorRow(receiptsDigest, receipt.key, old);
    xorRow(receiptsDigest, receipt.key, sha);
    receiptRows.push({ key: receipt.key, modelStep: receipt.modelStep, bytes });
  }
  const deleteReceipts = [...before.keys()];
  for (const [key, sha] of before) xorRow(receiptsDigest, key, sha);

  const plan: PlanIndex = {
    length: messages.length, first, tail, settledStep: record.currentStep, receiptCount: record.receipts.length, lineage: record.lineage,
  };
  let headTail: StoredState['tail'];
  if (fillFor && record.tail) {
    headTail = stored?.tail && samePacked(stored.tail.value, record.tail) ? stored.tail : undefined;
    if (!headTail) {
      const bytes = packTail(record.tail);
      headTail = { value: unpackTail(bytes), bytes };
    }
  }
  const head = fillFor && headTail
    ? encodeWithTail({ plan, layout: record.layout, envelope: record.head } satisfies Head, headTail.bytes, fillFor)
    : encodePart({ plan, layout: record.layout, envelope: record.head } satisfies Head);
  let bytes = head.length;
  for (const row of messageRows) bytes += row.bytes.length;
  for (const row of receiptRows) bytes += row.bytes.length;
  return {
    head,
    // The stored rows are kept whole (appended to) or rewritten from the first.
    trimMessagesFrom: stored === undefined || (index !== null && from === index.length) ? null : 0,
    messages: messageRows,
    replaceReceipts: stored !== undefined && replaceReceipts,
    deleteReceipts,
    receipts: receiptRows,
    next: {
      revision: envelope.revision, index: plan, transcriptDigest, receiptsDigest, unsettled,
      ...(messages.length > 0 ? { ends: { first: messages[0], tail: messages[messages.length - 1] } } : {}),
      ...(headTail ? { tail: headTail } : {}),
    },
    bytes,
  };
}

/** Heads written before the lineage left out the envelope's version held `<version>/<machine>@<n>`: the same lineage. */
function sameLineage(stored: string, lineage: string): boolean {
  return stored === lineage || stored.replace(/^\d+\//, '') === lineage;
}

/** Whether `message` encodes to the stored part `sha`: the very object last seen there does, without encoding it. */
function sameEnd(message: unknown, seen: unknown, sha: Uint8Array | null): boolean {
  return (typeof message === 'object' && message !== null && message === seen) || sameSha(message, sha);
}

function sameSha(message: unknown, sha: Uint8Array | null): boolean {
  return sha !== null && sha256(encodePart(message)).equals(sha);
}

/**
 * The planner's index in a stored head, or null when a save cannot extend what the head describes: a head of format
 * 1 has no index, and one of format 2 has digests made the older way (see digest.ts). Refuses a head that does not
 * decode.
 */
export function readIndex(runId: string, head: Uint8Array): PlanIndex | null {
  const { format, value } = decodeFramed<Head>(runId, head);
  return format >= INCREMENTAL_FORMAT && value && typeof value === 'object' ? value.plan ?? null : null;
}

/** A run's rows as a store read them in one snapshot, for {@link loadRecord}. */
export interface StoredRows {
  head: Uint8Array;
  /** The transcript rows in index order; `revision`, when the store keeps it, is the save that wrote the row (null: unknown). */
  messages: readonly { index: number; bytes: Uint8Array; revision?: number | null }[];
  receipts: readonly { key: string; bytes: Uint8Array; revision?: number | null }[];
  /** The digests kept beside the head. */
  transcriptDigest: Uint8Array | null;
  receiptsDigest: Uint8Array | null;
}

/**
 * Reads a run back from its rows and checks them against the head and its
 * digests: a row lost, added, moved, swapped or changed is refused with
 * StoredRecordError (`record_corrupt`). `legacy` names how the store digested
 * rows of format-1 records: `'bytes'` (as now) or `'json'` (the SQLite store's
 * first digest, over each row's value). `withSaves` fills the envelope's
 * `saves` from the rows' revisions (null where a row has none).
 */
export function loadRecord(runId: string, rows: StoredRows, legacy: 'bytes' | 'json' = 'bytes', withSaves = false): AgentRunEnvelope {
  return readRecord(runId, rows, legacy, withSaves).envelope;
}

/** A run read back by {@link readRecord}: the envelope, and what its rows hold as the planner needs it. */
export interface ReadRecord {
  envelope: AgentRunEnvelope;
  /**
   * What the store holds of the run, for planning the next save without reading the rows again (see
   * {@link SaveMemory.loaded}); undefined for a record of format 1 or 2, whose next save rewrites every row.
   */
  stored: StoredState | undefined;
}

/**
 * {@link loadRecord}, also returning what the rows hold as the planner needs it, taken from the rows it has just
 * checked: a store that keeps it plans the resume's first save the way it plans the next save of a run it wrote.
 */
export function readRecord(runId: string, rows: StoredRows, legacy: 'bytes' | 'json' = 'bytes', withSaves = false): ReadRecord {
  const corrupt = () => new StoredRecordError('record_corrupt', runId, `Stored rows of run ${runId} do not match its head.`);
  const { format, value: head } = decodeFramed<unknown>(runId, rows.head);
  if (rows.messages.some((m, i) => m.index !== i)) {
    throw new StoredRecordError('record_corrupt', runId, `Stored transcript of run ${runId} is incomplete.`);
  }
  const json = format < 2 && legacy === 'json';
  // Rows digested by their bytes are matched against the head's digests before they are decoded: bytes that match
  // are the ones the last save framed, so their own checksums are not computed again. One pass per table: a long
  // run's load is mostly this loop.
  // The hashes as short strings (sha256Text), not Buffers: most are only mixed into a digest and dropped.
  const transcriptDigest = emptyDigest();
  for (const m of rows.messages) {
    framedFormat(runId, m.bytes);
    if (!json) xorRowTextOf(format, transcriptDigest, m.index, sha256Text(m.bytes));
  }
  const receiptShas: string[] = [];
  const receiptsDigest = emptyDigest();
  for (const r of rows.receipts) {
    framedFormat(runId, r.bytes);
    if (json) continue;
    const sha = sha256Text(r.bytes);
    receiptShas.push(sha);
    xorRowTextOf(format, receiptsDigest, r.key, sha);
  }
  if (!json && (!sameDigest(rows.transcriptDigest, transcriptDigest) || !sameDigest(rows.receiptsDigest, receiptsDigest))) throw corrupt();
  const messages = rows.messages.map((m) => decodeFramed<unknown>(runId, m.bytes, json));
  const receipts = rows.receipts.map((r) => {
    const part = decodeFramed<unknown>(runId, r.bytes, json);
    return { format: part.format, value: receiptFromPart(part.format, part.value) };
  });
  const envelope = joinRecord(runId, format, head, messages.map((m) => m.value), receipts.map((r) => r.value));
  // Each row holds the receipt of its own key, and no key is on two rows (which a table keyed by it cannot hold, but
  // a store of yours might hand over). Checked on the rows: the envelope's receipts record may not be built yet.
  const keys = new Set<string>();
  for (let i = 0; i < rows.receipts.length; i++) {
    const key = rows.receipts[i]!.key;
    if ((receipts[i]!.value as { key?: unknown }).key !== key || keys.has(key)) throw corrupt();
    keys.add(key);
  }
  if (json && (!sameDigest(rows.transcriptDigest, legacyJsonDigest(messages.map((m, i) => [i, m.value] as const)))
    || !sameDigest(rows.receiptsDigest, legacyJsonDigest(receipts.map((r, i) => [rows.receipts[i]!.key, r.value] as const))))) throw corrupt();
  if (withSaves) {
    const receipts: Record<string, number | null> = {};
    for (const r of rows.receipts) receipts[r.key] = r.revision ?? null;
    envelope.saves = { messages: rows.messages.map((m) => m.revision ?? null), receipts };
  }
  const plan = format >= INCREMENTAL_FORMAT && isRecord(head) && isRecord(head.plan) ? head.plan as unknown as PlanIndex : null;
  let stored: StoredState | undefined;
  if (plan) {
    const unsettled = new Map<string, Uint8Array>();
    receipts.forEach((r, i) => {
      if ((r.value as { modelStep?: unknown }).modelStep as number >= plan.settledStep) unsettled.set(rows.receipts[i]!.key, Buffer.from(receiptShas[i]!, 'latin1'));
    });
    // No `ends`: the loaded envelope is the caller's to edit, so its first save compares the transcript's ends by bytes.
    stored = {
      revision: envelope.revision, index: plan, unsettled,
      transcriptDigest: Buffer.from(rows.transcriptDigest!), receiptsDigest: Buffer.from(rows.receiptsDigest!),
    };
  }
  return { envelope, stored };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * What a store object's last save of each run left, so the next save plans
 * without reading the head back. A remembered state is used only while the
 * stored row still has its revision and digests (nobody else wrote since),
 * and only for running runs: a run at rest is not kept for a resume that may
 * never come.
 */
export class SaveMemory {
  private readonly states = new Map<string, StoredState>();
  /** Runs remembered from a load, oldest first; at most {@link SaveMemory.LOADED} of them. */
  private readonly fromLoads = new Set<string>();
  /** How many loaded runs are remembered at once: a load that is never followed by a save costs at most this much. */
  static readonly LOADED = 256;

  /** The remembered state, if the stored row is still what that save left. */
  recall(runId: string, row: { revision: number; transcriptDigest: Uint8Array | null; receiptsDigest: Uint8Array | null }): StoredState | undefined {
    const state = this.states.get(runId);
    return state && state.revision === row.revision && sameDigest(row.transcriptDigest, state.transcriptDigest)
      && sameDigest(row.receiptsDigest, state.receiptsDigest) ? state : undefined;
  }

  /** The state this object last saved, whatever is stored now. */
  last(runId: string): StoredState | undefined {
    return this.states.get(runId);
  }

  keep(runId: string, status: AgentRunStatus, state: StoredState | undefined): void {
    this.fromLoads.delete(runId);
    if (state && status === 'running') this.states.set(runId, state);
    else this.states.delete(runId);
  }

  /**
   * What a load just read and checked (see {@link readRecord}), whatever the run's status: a resume saves next.
   * The same checks as for a save's state apply when it is recalled; the oldest loaded run is forgotten past
   * {@link SaveMemory.LOADED}.
   */
  loaded(runId: string, state: StoredState | undefined): void {
    if (!state) return;
    this.fromLoads.delete(runId);
    this.fromLoads.add(runId);
    this.states.set(runId, state);
    if (this.fromLoads.size > SaveMemory.LOADED) {
      const oldest = this.fromLoads.values().next().value!;
      this.fromLoads.delete(oldest);
      this.states.delete(oldest);
    }
  }
}

/**
 * Bytes a save would write, for the benchmarks: the head, the transcript from
 * `storedLength` on, and the current step's receipts (all of them on a first save).
 */
export function splitEnvelope(envelope: AgentRunEnvelope, storedLength: number, firstSave: boolean): {
  head: Uint8Array; messages: MessageRow[]; transcriptLength: number; receipts: ReceiptRow[];
} {
  const record = toRecord(envelope);
  return {
    head: encodePart({ layout: record.layout, envelope: record.head }),
    messages: record.messages.slice(storedLength).map((message, i) => ({ index: storedLength + i, bytes: encodePart(message) })),
    transcriptLength: record.messages.length,
    receipts: record.receipts.filter((r) => firstSave || r.modelStep >= record.currentStep)
      .map((r) => ({ key: r.key, modelStep: r.modelStep, bytes: encodePart(receiptPartValue(r)) })),
  };
}

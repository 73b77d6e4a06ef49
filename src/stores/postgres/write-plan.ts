/**
 * What a save must write, and how it checks what it leaves alone, without
 * encoding or hashing the whole history again: a save encodes and hashes the
 * parts the step added, and checks the rest with the set digests the run's
 * row keeps (see digest.ts).
 *
 *   - `transcript_digest`: the digest of the stored transcript rows. A save
 *     appends only when the envelope's first `transcript_length` messages have
 *     that digest (they are the stored messages, byte for byte); otherwise it
 *     rewrites the transcript.
 *   - `settled_step`: receipts of model steps before it never change again
 *     (the codec's rule). The digest of those settled rows is
 *     `receipts_digest` with the unsettled rows' contributions taken out; a
 *     save checks that the envelope's settled receipts have it, and compares
 *     only the receipts from `settled_step` on row by row (by sha256), and
 *     upserts those that changed. Otherwise it rewrites the receipts.
 *   - `receipts_digest`: the digest of every receipt row.
 *
 * A load checks both digests, so a row swapped, lost or copied in behind the
 * store's back is refused. The engine's messages and receipts are frozen
 * copies (frozenJsonCopy): their encoding, hash and digest contribution are
 * computed once, so checking a long run's prefix costs one XOR per row.
 */
import type { AgentRunEnvelope, AgentToolReceipt } from '../../agent/types.js';
import { isFrozenJsonCopy } from '../../agent/json.js';
import { encodePartOnce, splitEnvelope } from '../codec.js';
import { emptyDigest, rowDigest, sha256, xorInto } from './digest.js';

/** What a run's row says about its other rows. */
export interface StoredState {
  transcript_length: number;
  transcript_digest: Buffer;
  receipts_digest: Buffer;
  settled_step: number;
}

export interface Row {
  bytes: Buffer;
  sha: Buffer;
}

/** A transcript row to write, with its digest contribution. */
export interface MessageRow {
  index: number;
  row: Row;
  digest: Buffer;
}

export interface ReceiptRow extends Row {
  key: string;
  modelStep: number;
  /** The row's digest contribution. */
  digest: Buffer;
}

/** A stored receipt row as a save knows it without its bytes: the sha256 of the bytes and the row's digest contribution. */
export interface StoredReceiptRow {
  sha: Buffer;
  digest: Buffer;
}

// Rows of the engine's frozen copies: encoded, hashed and digested once.
const rows = new WeakMap<object, { row: Row; identity: string | number; digest: Buffer }>();

/** A part's row and its digest contribution under `identity`. The returned buffers must not be changed. */
function rowOf(identity: string | number, value: unknown): { row: Row; digest: Buffer } {
  const frozen = isFrozenJsonCopy(value);
  const hit = frozen ? rows.get(value as object) : undefined;
  if (hit && hit.identity === identity) return hit;
  const bytes = hit?.row.bytes ?? encodePartOnce(value);
  const row = hit?.row ?? { bytes, sha: sha256(bytes) };
  const entry = { row, identity, digest: rowDigest(identity, row.sha) };
  if (frozen) rows.set(value as object, entry);
  return entry;
}

const byKey = (a: { key: string }, b: { key: string }) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

export class SavePlan {
  readonly head: Buffer;
  readonly messages: readonly unknown[];
  /** The model step whose receipts (and later ones) are not settled yet. */
  readonly currentStep: number;
  /** The envelope's receipts, in no particular order (a digest is a XOR; rows written are sorted by key). */
  readonly receipts: readonly AgentToolReceipt[];

  constructor(envelope: AgentRunEnvelope, first: boolean) {
    const context = (envelope.snapshot as { context?: { messages?: unknown } } | null)?.context;
    this.messages = Array.isArray(context?.messages) ? (context.messages as unknown[]) : [];
    // The head only: the transcript and receipt rows are planned below, from what the store holds.
    const split = splitEnvelope(envelope, this.messages.length, first, false);
    this.head = split.head;
    this.currentStep = split.currentStep;
    this.receipts = Object.values(envelope.receipts ?? {});
  }

  get length(): number {
    return this.messages.length;
  }

  /** The digest of the envelope's first `n` messages as transcript rows. */
  private prefixDigest(n: number): Buffer {
    const digest = emptyDigest();
    for (let i = 0; i < n; i++) xorInto(digest, rowOf(i, this.messages[i]).digest);
    return digest;
  }

  /** Whether the stored transcript is this envelope's first messages. */
  keepsTranscript(stored: StoredState): boolean {
    const n = stored.transcript_length;
    return n <= this.messages.length && this.prefixDigest(n).equals(stored.transcript_digest);
  }

  /** The message rows from `from` on, each framed. */
  messageRows(from: number): MessageRow[] {
    const written: MessageRow[] = [];
    for (let i = from; i < this.messages.length; i++) {
      const { row, digest } = rowOf(i, this.messages[i]);
      written.push({ index: i, row, digest });
    }
    return written;
  }

  /** The transcript digest once `rows` are written over a transcript whose digest is `base`. */
  static transcriptDigest(base: Buffer, written: readonly MessageRow[]): Buffer {
    const digest = Buffer.from(base);
    for (const row of written) xorInto(digest, row.digest);
    return digest;
  }

  /**
   * Whether the receipts before the stored `settled_step` are this envelope's:
   * their digest must be the stored `receipts_digest` without the unsettled
   * rows (`unsettled`: the stored rows from `settled_step` on, by key).
   */
  keepsSettled(stored: StoredState, unsettled: ReadonlyMap<string, StoredReceiptRow>): boolean {
    if (stored.settled_step > this.currentStep) return false;
    const settled = Buffer.from(stored.receipts_digest);
    for (const row of unsettled.values()) xorInto(settled, row.digest);
    const envelope = emptyDigest();
    for (const receipt of this.receipts) {
      if (receipt.modelStep < stored.settled_step) xorInto(envelope, rowOf(receipt.key, receipt).digest);
    }
    return envelope.equals(settled);
  }

  /**
   * Whether the receipts before `step` are the receipt objects of `previous`
   * before that step, in the same order (the engine keeps its receipts in the
   * order it made them), and `count` of them, and those are the engine's
   * frozen copies: then they hold what `previous`'s save stored, and no digest
   * needs computing. False says nothing: check with keepsSettled.
   */
  sameSettled(step: number, previous: readonly AgentToolReceipt[], count: number): boolean {
    if (step > this.currentStep) return false;
    let j = 0;
    let seen = 0;
    for (const receipt of this.receipts) {
      if (receipt.modelStep >= step) continue;
      while (j < previous.length && previous[j]!.modelStep >= step) j++;
      if (previous[j] !== receipt) return false;
      j++;
      seen++;
    }
    return seen === count;
  }

  /** Every receipt of step `step` or later, framed, by key. */
  receiptsFrom(step: number): ReceiptRow[] {
    const from: ReceiptRow[] = [];
    for (const receipt of this.receipts) if (receipt.modelStep >= step) from.push(this.row(receipt));
    return from.sort(byKey);
  }

  /** Every receipt, framed, by key, and the digest of them all. */
  allReceipts(): { rows: ReceiptRow[]; digest: Buffer } {
    const digest = emptyDigest();
    const all = this.receipts.map((r) => {
      const row = this.row(r);
      xorInto(digest, row.digest);
      return row;
    });
    return { rows: all.sort(byKey), digest };
  }

  private row(receipt: AgentToolReceipt): ReceiptRow {
    const { row, digest } = rowOf(receipt.key, receipt);
    return { key: receipt.key, modelStep: receipt.modelStep, bytes: row.bytes, sha: row.sha, digest };
  }
}

/**
 * What a save must write, and how it checks what it leaves alone, without
 * encoding the whole history again: a long run's save costs hashing its
 * transcript once (one msgpack pass), not encoding and hashing every message.
 *
 * The run's row keeps, besides the head:
 *   - `transcript_hash`: sha256 of the msgpack of the stored transcript. A save
 *     appends only when the envelope's first `transcript_length` messages hash
 *     to it (they are the stored messages, byte for byte); otherwise it
 *     rewrites the transcript.
 *   - `settled_step` and `settled_hash`: receipts of model steps before
 *     `settled_step` never change again (the codec's rule); their hash lets a
 *     save check that the envelope agrees, and only the receipts from
 *     `settled_step` on are compared row by row (by sha256, in the database)
 *     and upserted when they changed. Otherwise it rewrites the receipts.
 *   - `transcript_digest` and `receipts_digest`: set digests of the rows (see
 *     digest.ts), updated for the rows a save writes, that a load checks so a
 *     row swapped, lost or copied in behind the store's back is refused.
 */
import { createHash } from 'node:crypto';
import { Packr } from 'msgpackr';
import type { AgentRunEnvelope, AgentToolReceipt } from '../../agent/types.js';
import { encodePart, splitEnvelope } from '../codec.js';
import { emptyDigest, rowDigest, sha256, xorInto } from './digest.js';

// The codec's settings: equal hashes mean equal encodings of every message or receipt.
const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });
const hashOf = (value: unknown): Buffer => createHash('sha256').update(packr.pack(value)).digest();

/** What a run's row says about its other rows. */
export interface StoredState {
  transcript_length: number;
  transcript_hash: Buffer;
  transcript_digest: Buffer;
  receipts_digest: Buffer;
  settled_step: number;
  settled_hash: Buffer;
}

export interface Row {
  bytes: Buffer;
  sha: Buffer;
}

export interface ReceiptRow extends Row {
  key: string;
  modelStep: number;
}

export class SavePlan {
  readonly head: Buffer;
  readonly messages: readonly unknown[];
  readonly transcriptHash: Buffer;
  /** The model step whose receipts (and later ones) are not settled yet. */
  readonly currentStep: number;
  readonly settledHash: Buffer;
  private readonly receipts: AgentToolReceipt[];
  private readonly encoded = new Map<string, ReceiptRow>();

  constructor(envelope: AgentRunEnvelope, first: boolean) {
    const context = (envelope.snapshot as { context?: { messages?: unknown } } | null)?.context;
    this.messages = Array.isArray(context?.messages) ? (context.messages as unknown[]) : [];
    // The head, and the receipts the codec writes: all of them on a first save, else the current step's.
    const split = splitEnvelope(envelope, this.messages.length, first);
    this.head = split.head;
    this.currentStep = split.currentStep;
    for (const r of split.receipts) this.encoded.set(r.key, { ...r, sha: sha256(r.bytes) });
    this.receipts = Object.values(envelope.receipts ?? {}).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    this.transcriptHash = hashOf(this.messages);
    this.settledHash = this.settledHashBefore(this.currentStep);
  }

  get length(): number {
    return this.messages.length;
  }

  /** Whether the stored transcript is this envelope's first messages. */
  keepsTranscript(stored: StoredState): boolean {
    const n = stored.transcript_length;
    if (n > this.messages.length) return false;
    const hash = n === this.messages.length ? this.transcriptHash : hashOf(this.messages.slice(0, n));
    return hash.equals(stored.transcript_hash);
  }

  /** The message rows from `from` on, each framed. */
  messageRows(from: number): { index: number; row: Row }[] {
    return this.messages.slice(from).map((message, i) => {
      const bytes = encodePart(message);
      return { index: from + i, row: { bytes, sha: sha256(bytes) } };
    });
  }

  /** The transcript digest once `rows` are written over a transcript whose digest is `base`. */
  static transcriptDigest(base: Buffer, rows: { index: number; row: Row }[]): Buffer {
    const digest = Buffer.from(base);
    for (const { index, row } of rows) xorInto(digest, rowDigest(index, row.sha));
    return digest;
  }

  /** Whether the receipts before the stored `settled_step` are this envelope's. */
  keepsSettled(stored: StoredState): boolean {
    return stored.settled_step <= this.currentStep && this.settledHashBefore(stored.settled_step).equals(stored.settled_hash);
  }

  /** Every receipt of step `step` or later, framed. */
  receiptsFrom(step: number): ReceiptRow[] {
    return this.receipts.filter((r) => r.modelStep >= step).map((r) => this.row(r));
  }

  /** Every receipt, framed, and the digest of them all. */
  allReceipts(): { rows: ReceiptRow[]; digest: Buffer } {
    const rows = this.receipts.map((r) => this.row(r));
    const digest = emptyDigest();
    for (const r of rows) xorInto(digest, rowDigest(r.key, r.sha));
    return { rows, digest };
  }

  private row(receipt: AgentToolReceipt): ReceiptRow {
    let row = this.encoded.get(receipt.key);
    if (!row) {
      const bytes = encodePart(receipt);
      row = { key: receipt.key, modelStep: receipt.modelStep, bytes, sha: sha256(bytes) };
      this.encoded.set(receipt.key, row);
    }
    return row;
  }

  private settledHashBefore(step: number): Buffer {
    return hashOf(this.receipts.filter((r) => r.modelStep < step));
  }
}

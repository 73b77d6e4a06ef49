/**
 * What one save writes. The codec's split gives the head, the transcript from
 * the stored length on, and the current step's receipts: the common case,
 * where the engine appended to the transcript and settled the current step.
 * The digests in the head row check that this case holds (the stored
 * transcript is this envelope's prefix, the receipts the save leaves alone
 * are the envelope's); when it does not, the plan rewrites the transcript or
 * the receipts whole, so a save always stores exactly the envelope it was
 * given.
 */
import type { AgentRunEnvelope, AgentToolReceipt } from '../../agent/types.js';
import { encodePart, splitEnvelope } from '../codec.js';
import { EMPTY_DIGEST, digestOf, rowDigest, sameDigest, xorInto } from './digest.js';

export interface StoredHead {
  transcriptLength: number;
  transcriptDigest: Uint8Array | null;
  receiptsDigest: Uint8Array | null;
}

/** A stored receipt row: its bytes, and its value when they decode. */
export interface StoredReceipt {
  bytes: Uint8Array;
  value: AgentToolReceipt | undefined;
}

export interface WritePlan {
  head: Buffer;
  transcriptLength: number;
  transcriptDigest: Buffer;
  receiptsDigest: Buffer;
  /** Delete the stored transcript rows from this index on before writing `messages` (null: delete none). */
  trimMessagesFrom: number | null;
  messages: { index: number; bytes: Buffer }[];
  /** Delete every stored receipt row before writing `receipts`. */
  replaceReceipts: boolean;
  receipts: { key: string; modelStep: number; bytes: Buffer }[];
  /** Bytes of the head and of every row written. */
  bytes: number;
}

/**
 * Plans a save. `stored` is the run's head row (undefined for a new run);
 * `storedReceipt(key)` reads one stored receipt row.
 */
export function planWrite(
  envelope: AgentRunEnvelope,
  stored: StoredHead | undefined,
  storedReceipt: (key: string) => StoredReceipt | undefined,
): WritePlan {
  const transcript = transcriptOf(envelope);
  const storedLength = stored?.transcriptLength ?? 0;

  // Keep the stored transcript rows only when they are this envelope's first messages.
  let kept = 0;
  let transcriptDigest: Buffer = Buffer.from(EMPTY_DIGEST);
  if (stored && storedLength > 0 && transcript.length >= storedLength) {
    const prefix = digestOf(transcript.slice(0, storedLength).map((message, index) => [index, message] as const));
    if (sameDigest(stored.transcriptDigest, prefix)) {
      kept = storedLength;
      transcriptDigest = prefix;
    }
  }
  const split = splitEnvelope(envelope, kept, stored === undefined);
  for (let index = kept; index < transcript.length; index++) xorInto(transcriptDigest, rowDigest(index, transcript[index]));

  const all = Object.values(envelope.receipts ?? {});
  const byKey = new Map(all.map((r) => [r.key, r]));
  const receiptsDigest = digestOf(all.map((r) => [r.key, r] as const));
  let replaceReceipts = false;
  let receipts = split.receipts;
  if (stored) {
    // What the stored rows hold after the split's upserts; it must be what the envelope holds.
    const expected = Buffer.from(stored.receiptsDigest ?? EMPTY_DIGEST);
    const changed: typeof receipts = [];
    let unreadable = false;
    for (const receipt of split.receipts) {
      const before = storedReceipt(receipt.key);
      // An unchanged row is not written again.
      if (before && Buffer.compare(before.bytes, receipt.bytes) === 0) continue;
      if (before?.value) xorInto(expected, rowDigest(receipt.key, before.value));
      else if (before) unreadable = true;
      xorInto(expected, rowDigest(receipt.key, byKey.get(receipt.key)));
      changed.push(receipt);
    }
    receipts = changed;
    if (unreadable || !sameDigest(expected, receiptsDigest)) {
      replaceReceipts = true;
      const encoded = new Map(split.receipts.map((r) => [r.key, r]));
      receipts = all.map((r) => encoded.get(r.key) ?? { key: r.key, modelStep: r.modelStep, bytes: encodePart(r) });
    }
  }

  let bytes = split.head.length;
  for (const part of [...split.messages, ...receipts]) bytes += part.bytes.length;
  return {
    head: split.head,
    transcriptLength: split.transcriptLength,
    transcriptDigest,
    receiptsDigest,
    trimMessagesFrom: stored && kept < storedLength ? kept : null,
    messages: split.messages,
    replaceReceipts,
    receipts,
    bytes,
  };
}

export function transcriptOf(envelope: AgentRunEnvelope): unknown[] {
  const context = (envelope.snapshot as { context?: { messages?: unknown } } | null)?.context;
  return Array.isArray(context?.messages) ? context.messages : [];
}

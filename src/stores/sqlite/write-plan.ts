/**
 * What one save writes. The codec's split gives the head, the transcript from
 * the stored length on, and the current step's receipts: the common case,
 * where the engine appended to the transcript and settled the current step.
 * The digests in the head row check that this case holds (the stored
 * transcript is this envelope's prefix, the receipts the save leaves alone
 * are the envelope's); when it does not, the plan rewrites the transcript or
 * the receipts whole, so a save always stores exactly the envelope it was
 * given.
 *
 * A store object remembers what its last save of a run left (`WriteMemory`):
 * when the head row still says so, the next save checks the stored transcript
 * prefix by the identity of the engine's frozen messages and takes the old
 * receipt rows' digests from memory, instead of digesting the history again.
 */
import type { AgentRunEnvelope, AgentToolReceipt } from '../../agent/types.js';
import { isFrozenJsonCopy } from '../../agent/json.js';
import { encodePartOnce, splitEnvelope } from '../codec.js';
import { EMPTY_DIGEST, rowDigest, sameDigest, xorInto } from './digest.js';

export interface StoredHead {
  revision: number;
  transcriptLength: number;
  transcriptDigest: Uint8Array | null;
  receiptsDigest: Uint8Array | null;
}

/** A stored receipt row: its bytes, and its value when they decode. */
export interface StoredReceipt {
  bytes: Uint8Array;
  value: AgentToolReceipt | undefined;
}

/** What a save of this store object left in a run's rows. */
export interface WriteMemory {
  revision: number;
  transcriptDigest: Buffer;
  receiptsDigest: Buffer;
  /** The transcript as the envelope's message objects. */
  messages: readonly unknown[];
  /** The receipt rows that save upserted, by key: their bytes and digest contribution. */
  receipts: ReadonlyMap<string, { bytes: Uint8Array; digest: Buffer }>;
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
  /** What the rows hold once the plan is written, for the next save of this store object. */
  memory: WriteMemory;
}

/**
 * Plans a save. `stored` is the run's head row (undefined for a new run);
 * `storedReceipt(key)` reads one stored receipt row; `memory` is what this
 * store object's last save of the run left, if it made one.
 */
export function planWrite(
  envelope: AgentRunEnvelope,
  stored: StoredHead | undefined,
  storedReceipt: (key: string) => StoredReceipt | undefined,
  memory?: WriteMemory,
): WritePlan {
  const transcript = transcriptOf(envelope);
  const storedLength = stored?.transcriptLength ?? 0;
  // The memory holds only while the head row is the one that save left.
  const remembered = stored && memory && memory.revision === stored.revision
    && sameDigest(stored.transcriptDigest, memory.transcriptDigest) && sameDigest(stored.receiptsDigest, memory.receiptsDigest)
    ? memory : undefined;

  // Keep the stored transcript rows only when they are this envelope's first messages.
  let kept = 0;
  let transcriptDigest: Buffer = Buffer.from(EMPTY_DIGEST);
  if (stored && storedLength > 0 && transcript.length >= storedLength) {
    if (remembered && sameMessages(transcript, remembered.messages, storedLength)) {
      kept = storedLength;
      transcriptDigest = Buffer.from(remembered.transcriptDigest);
    } else {
      const prefix = Buffer.from(EMPTY_DIGEST);
      for (let index = 0; index < storedLength; index++) xorInto(prefix, rowDigest(index, transcript[index]));
      if (sameDigest(stored.transcriptDigest, prefix)) {
        kept = storedLength;
        transcriptDigest = prefix;
      }
    }
  }
  const split = splitEnvelope(envelope, kept, stored === undefined);
  for (let index = kept; index < transcript.length; index++) xorInto(transcriptDigest, rowDigest(index, transcript[index]));

  const all = Object.values(envelope.receipts ?? {});
  const byKey = new Map<string, AgentToolReceipt>();
  const receiptsDigest = Buffer.from(EMPTY_DIGEST);
  for (const receipt of all) {
    byKey.set(receipt.key, receipt);
    xorInto(receiptsDigest, rowDigest(receipt.key, receipt));
  }
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
      if (before) {
        const known = remembered?.receipts.get(receipt.key);
        if (known && Buffer.compare(known.bytes, before.bytes) === 0) xorInto(expected, known.digest);
        else if (before.value) xorInto(expected, rowDigest(receipt.key, before.value));
        else unreadable = true;
      }
      xorInto(expected, rowDigest(receipt.key, byKey.get(receipt.key)));
      changed.push(receipt);
    }
    receipts = changed;
    if (unreadable || !sameDigest(expected, receiptsDigest)) {
      replaceReceipts = true;
      const encoded = new Map(split.receipts.map((r) => [r.key, r]));
      receipts = all.map((r) => encoded.get(r.key) ?? { key: r.key, modelStep: r.modelStep, bytes: encodePartOnce(r) });
    }
  }

  let bytes = split.head.length;
  for (const part of split.messages) bytes += part.bytes.length;
  for (const part of receipts) bytes += part.bytes.length;
  const written = new Map<string, { bytes: Uint8Array; digest: Buffer }>();
  for (const receipt of split.receipts) written.set(receipt.key, { bytes: receipt.bytes, digest: rowDigest(receipt.key, byKey.get(receipt.key)) });
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
    memory: {
      revision: envelope.revision,
      transcriptDigest,
      receiptsDigest,
      messages: transcript.slice(),
      receipts: written,
    },
  };
}

/** Whether the first `n` messages are the same frozen objects: then they hold what they held. */
function sameMessages(transcript: readonly unknown[], before: readonly unknown[], n: number): boolean {
  if (before.length < n) return false;
  for (let i = 0; i < n; i++) {
    if (transcript[i] !== before[i] || !isFrozenJsonCopy(transcript[i])) return false;
  }
  return true;
}

export function transcriptOf(envelope: AgentRunEnvelope): unknown[] {
  const context = (envelope.snapshot as { context?: { messages?: unknown } } | null)?.context;
  return Array.isArray(context?.messages) ? context.messages : [];
}

/**
 * How a durable store writes a run: msgpackr-encoded parts, each framed with a
 * magic, a format version and a sha256 checksum, so a corrupt, truncated,
 * future-format or foreign record is refused before anything runs.
 *
 * A run is stored in three parts so that the bytes a save writes stay
 * proportional to what the step added:
 *   - the head: the envelope with its transcript (the run's `messages`, and a
 *     terminal result's) replaced by a length, and with only the receipts of
 *     the current model step (older steps' receipts never change again);
 *   - the transcript: one part per message, appended, never rewritten;
 *   - the receipts: one part per receipt, upserted while its step is current.
 */
import { createHash } from 'node:crypto';
import { Packr } from 'msgpackr';
import { StoredRecordError } from '../errors/index.js';
import { isFrozenJsonCopy } from '../agent/json.js';
import type { AgentRunEnvelope, AgentToolReceipt, JsonValue, Message } from '../agent/types.js';

const MAGIC = Buffer.from('CRN', 'ascii');
/** Format of the framed parts. A reader refuses a part whose format it does not know. */
export const RECORD_FORMAT = 1;
const HEADER = MAGIC.length + 1 + 32;

// Plain data only: no records/structures extension, so every part decodes on its own.
const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });
// msgpackr renames a `__proto__` key to `__proto_` when it builds objects; a
// payload holding that key is decoded through Maps instead, and the key kept as
// an own property (never the prototype).
const mapUnpackr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: false });
const PROTO_KEY = Buffer.from('__proto__', 'utf8');

function plainFromMaps(value: unknown): unknown {
  if (value instanceof Map) {
    const object: Record<string, unknown> = {};
    for (const [key, entry] of value) {
      Object.defineProperty(object, String(key), { value: plainFromMaps(entry), enumerable: true, writable: true, configurable: true });
    }
    return object;
  }
  return Array.isArray(value) ? value.map(plainFromMaps) : value;
}

/** Frames a value: magic, format, sha256 of the payload, payload. */
export function encodePart(value: unknown): Buffer {
  const payload = packr.pack(value);
  const checksum = createHash('sha256').update(payload).digest();
  return Buffer.concat([MAGIC, Buffer.from([RECORD_FORMAT]), checksum, payload]);
}

// Encodings of the engine's frozen copies (see frozenJsonCopy): such a value
// never changes, so it is encoded (and checksummed) once, however many saves
// carry it.
const encoded = new WeakMap<object, Buffer>();

/**
 * {@link encodePart}, made once per frozen JSON copy. The returned buffer is
 * shared: it must not be changed.
 */
export function encodePartOnce(value: unknown): Buffer {
  if (!isFrozenJsonCopy(value)) return encodePart(value);
  let bytes = encoded.get(value as object);
  if (bytes === undefined) {
    bytes = encodePart(value);
    encoded.set(value as object, bytes);
  }
  return bytes;
}

/** Reads a framed part back, or refuses it with StoredRecordError. */
export function decodePart<T>(runId: string, bytes: Uint8Array | null | undefined): T {
  const buf = bytes ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : Buffer.alloc(0);
  if (buf.length < HEADER || !buf.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new StoredRecordError('record_corrupt', runId, `Stored record of run ${runId} is not a Cairn record (or is truncated).`);
  }
  const format = buf[MAGIC.length]!;
  if (format !== RECORD_FORMAT) {
    throw new StoredRecordError('record_version_unsupported', runId,
      `Stored record of run ${runId} has format ${format}; this reader knows format ${RECORD_FORMAT}.`);
  }
  const checksum = buf.subarray(MAGIC.length + 1, HEADER);
  const payload = buf.subarray(HEADER);
  if (!createHash('sha256').update(payload).digest().equals(checksum)) {
    throw new StoredRecordError('record_corrupt', runId, `Stored record of run ${runId} fails its checksum.`);
  }
  try {
    return (payload.includes(PROTO_KEY) ? plainFromMaps(mapUnpackr.unpack(payload)) : packr.unpack(payload)) as T;
  } catch {
    throw new StoredRecordError('record_corrupt', runId, `Stored record of run ${runId} cannot be decoded.`);
  }
}

/** Marks where a transcript was taken out of the head. */
interface TranscriptRef {
  $transcript: number;
}

export interface SplitRecord {
  head: Buffer;
  /** Messages from `fromIndex` on, each framed, to append. */
  messages: { index: number; bytes: Buffer }[];
  /** How long the transcript is after this save. */
  transcriptLength: number;
  /** Receipts of the current model step, each framed, to upsert. */
  receipts: { key: string; modelStep: number; bytes: Buffer }[];
  /** The model step whose receipts the head leaves to the receipt parts. */
  currentStep: number;
}

function contextOf(envelope: AgentRunEnvelope): { messages?: unknown; lastTurn?: { step: number } | null; step?: number } {
  const snapshot = envelope.snapshot as { context?: Record<string, unknown> } | null;
  return (snapshot?.context ?? {}) as never;
}

/**
 * Splits an envelope for writing. `storedLength` is how much of the transcript
 * the store already holds; only the messages after it are written. The run's
 * transcript only ever grows (the run machine appends), so the stored prefix
 * is the same messages. With `parts` false, only the head is encoded.
 */
export function splitEnvelope(envelope: AgentRunEnvelope, storedLength: number, firstSave: boolean, parts = true): SplitRecord {
  const context = contextOf(envelope);
  const transcript = Array.isArray(context.messages) ? (context.messages as Message[]) : [];
  const currentStep = Math.max(0, (context.step ?? 1) - 1);
  // A new object along the path to what the head replaces; the rest is shared with the envelope, only read by the encoder.
  const ref: TranscriptRef = { $transcript: transcript.length };
  const snapshot = envelope.snapshot as { context?: Record<string, unknown> } | null;
  const head: AgentRunEnvelope = {
    ...envelope,
    snapshot: (snapshot?.context ? { ...snapshot, context: { ...snapshot.context, messages: ref } } : snapshot) as AgentRunEnvelope['snapshot'],
    receipts: {},
  };
  if (envelope.result && sameMessages(envelope.result.messages, transcript)) {
    head.result = { ...envelope.result, messages: ref as never };
  }
  const receipts = !parts ? [] : Object.values(envelope.receipts)
    .filter((r) => firstSave || r.modelStep >= currentStep)
    .map((r) => ({ key: r.key, modelStep: r.modelStep, bytes: encodePartOnce(r) }));
  const from = parts ? Math.min(storedLength, transcript.length) : transcript.length;
  return {
    head: encodePart(head),
    messages: transcript.slice(from).map((message, i) => ({ index: from + i, bytes: encodePartOnce(message) })),
    transcriptLength: transcript.length,
    receipts,
    currentStep,
  };
}

function sameMessages(a: unknown, b: Message[]): boolean {
  return Array.isArray(a) && a.length === b.length && JSON.stringify(a) === JSON.stringify(b);
}

/** Puts a stored run back together. `messages` are the transcript parts in order, `receipts` every stored receipt part. */
export function joinEnvelope(runId: string, head: Uint8Array, messages: Uint8Array[], receipts: Uint8Array[]): AgentRunEnvelope {
  const envelope = decodePart<AgentRunEnvelope>(runId, head);
  const transcript = messages.map((bytes) => decodePart<JsonValue>(runId, bytes));
  const context = contextOf(envelope) as Record<string, unknown>;
  const ref = context.messages as TranscriptRef | undefined;
  if (!ref || typeof ref.$transcript !== 'number' || ref.$transcript !== transcript.length) {
    throw new StoredRecordError('record_corrupt', runId, `Stored transcript of run ${runId} is incomplete.`);
  }
  context.messages = transcript;
  if (envelope.result && (envelope.result.messages as unknown as TranscriptRef)?.$transcript !== undefined) {
    (envelope.result as { messages: unknown }).messages = structuredClone(transcript);
  }
  envelope.receipts = {};
  for (const bytes of receipts) {
    const receipt = decodePart<AgentToolReceipt>(runId, bytes);
    envelope.receipts[receipt.key] = receipt;
  }
  return envelope;
}

/**
 * How a durable store frames what it writes: each part (a run's head, one
 * transcript message, one receipt) is msgpackr-encoded and framed with a
 * magic, a format number and a sha256 checksum, so a corrupt, truncated,
 * future-format or foreign part is refused before anything runs.
 *
 * What the parts of a run are is record.ts's business; this module only
 * frames and unframes values.
 */
import * as crypto from 'node:crypto';
import { createHash } from 'node:crypto';
import { Packr, RESET_BUFFER_MODE } from 'msgpackr';
import { StoredRecordError } from '../errors/index.js';

const MAGIC = Buffer.from('CRN', 'ascii');
/**
 * Format of the parts this code writes. 1: the first layout (the head is the
 * envelope with its transcript taken out). 2: the head also carries what the
 * planner needs to write the next save incrementally (see write-plan.ts), and
 * the run's ended receipts are taken out of the snapshot (see record.ts).
 * 3: the same layout; the digests kept beside the head are made the cheaper
 * way (see digest.ts). 4: the same, except that an open call's receipt the
 * head already holds (in the call's snapshot) is not also a part of its own
 * (see record.ts); a reader of format 3 would miss it, so it is refused there.
 * 5: the same, except that a receipt part whose `modelOutput` is the same
 * plain data as its `rawResult` holds it once (see receipt-part.ts).
 * Message parts are the same in all five.
 */
export const RECORD_FORMAT = 5;
/** Formats a reader of this code accepts. A part of any other format is refused. */
export const READABLE_FORMATS: readonly number[] = [1, 2, 3, 4, 5];
const HEADER = MAGIC.length + 1 + 32;

// Plain data only: no records/structures extension, so every part decodes on its own.
const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });
// msgpackr renames a `__proto__` key to `__proto_` when it builds objects; a
// payload holding that key is decoded through Maps instead, and the key kept as
// an own property (never the prototype).
const mapUnpackr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: false });
const PROTO_KEY = Buffer.from('__proto__', 'utf8');
/** The keys encodeWithTail adds to a map, packed once. */
const FILL_KEY = Buffer.from(packr.pack('fill'));
const TAIL_KEY = Buffer.from(packr.pack('tail'));

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

/** node:crypto's one-shot `hash` (Node 20.12 and later): about a third cheaper than a Hash object for a small part. */
const oneShot = (crypto as { hash?: (algorithm: string, data: Uint8Array, encoding: 'buffer') => Buffer }).hash;

/**
 * The sha256 of some bytes.
 * @internal A Node Buffer in its type; kept out of the published declarations, which need no @types/node.
 */
export function sha256(bytes: Uint8Array): Buffer {
  return oneShot ? oneShot('sha256', bytes, 'buffer') : createHash('sha256').update(bytes).digest();
}

/**
 * The sha256 of some bytes as a string of 32 one-byte characters (latin1), character i being byte i. A load hashes
 * every row and keeps none of the hashes for long: a short string costs the heap far less than a Buffer, which
 * needs a backing store of its own (a 1,000-step run's 3,000 hashes: about 1.3 ms instead of 3.0 ms).
 */
export function sha256Text(bytes: Uint8Array): string {
  const hash = oneShot as ((algorithm: string, data: Uint8Array, encoding: 'latin1') => string) | undefined;
  return hash ? hash('sha256', bytes, 'latin1') : createHash('sha256').update(bytes).digest().toString('latin1');
}

/**
 * A value's msgpack bytes, valid until the next pack: the packer writes each value over the space the last one took
 * in its own buffer (RESET_BUFFER_MODE), and a caller copies the bytes into its frame at once. A frame is then one
 * allocation and one copy of the payload, where a concatenation made a copy of every part and a new buffer for each.
 */
function packed(value: unknown): Buffer {
  return packr.pack(value, RESET_BUFFER_MODE);
}

/** A frame of `payloadLength` bytes after the header (magic and format written; the checksum is the caller's). */
function frame(payloadLength: number): Buffer {
  const out = Buffer.allocUnsafe(HEADER + payloadLength);
  MAGIC.copy(out, 0);
  out[MAGIC.length] = RECORD_FORMAT;
  return out;
}

/** Writes the sha256 of the frame's payload into its header. */
function seal(out: Buffer): Buffer {
  sha256(out.subarray(HEADER)).copy(out, MAGIC.length + 1);
  return out;
}

/**
 * Frames a value: magic, format, sha256 of the payload, payload.
 * @internal As {@link sha256}: its Buffer type stays out of the published declarations.
 */
export function encodePart(value: unknown): Buffer {
  const payload = packed(value);
  const out = frame(payload.length);
  payload.copy(out, HEADER);
  return seal(out);
}

/**
 * A head tail's bytes for {@link encodeWithTail}: its own copy, which a planner keeps while the run's tail stays the
 * same (see {@link samePacked}), so a save does not pack the same values again.
 * @internal As {@link sha256}: its Buffer type stays out of the published declarations.
 */
export function packTail(tail: unknown): Buffer {
  return Buffer.from(packed(tail));
}

/** The value {@link packTail}'s bytes hold, as a load would read it: what {@link samePacked} compares a later tail with. */
export function unpackTail(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}

/**
 * Whether two values are the same plain data, so that they pack to the same bytes: objects of Object.prototype with
 * the same keys in the same order, arrays, and primitives that are === (NaN is not). Anything else (a Buffer, a
 * Date, a class instance) is taken to differ, and so is a `__proto__` key, which the packer renames as it reads it.
 * A planner compares a later head tail with the value {@link packTail}'s bytes decode to; a receipt part compares a
 * receipt's `modelOutput` with its `rawResult` (see receipt-part.ts).
 */
export function samePacked(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return a === b;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || Object.getPrototypeOf(a) !== Array.prototype || Object.getPrototypeOf(b) !== Array.prototype
      || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!samePacked(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b) || Object.getPrototypeOf(a) !== Object.prototype || Object.getPrototypeOf(b) !== Object.prototype) return false;
  const keys = Object.keys(a);
  const others = Object.keys(b);
  if (keys.length !== others.length) return false;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (key !== others[i] || key === '__proto__'
      || !samePacked((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false;
  }
  return true;
}

/**
 * Frames a map `value` with two entries more at its end: `fill`, zeros, and `tail` (bytes from {@link packTail}), as
 * one part (its value decodes as `{ ...value, fill, tail }`). `fillFor(before, after)` says how many bytes the fill
 * entry's value takes (its header and its zeros, at least 2), given the part's bytes before it and after it: a store
 * that lays the part out on pages puts the tail's bytes where it wants them (see sqlite/run-rows.ts).
 * @internal As {@link sha256}: its Buffer type stays out of the published declarations.
 */
export function encodeWithTail(value: Record<string, unknown>, tailBytes: Uint8Array, fillFor: (before: number, after: number) => number): Buffer {
  const body = packed(value);
  // The map's count, two more: a fixmap of up to 13 keys or a map 16 (which msgpackr writes for an object).
  let count: number;
  if (body[0] === 0xde && body.readUInt16BE(1) <= 0xfffd) count = body.readUInt16BE(1) + 2;
  else if (body.length > 0 && (body[0]! & 0xf0) === 0x80 && (body[0]! & 0x0f) <= 13) count = (body[0]! & 0x0f) + 2;
  else throw new TypeError('encodeWithTail takes a map.');
  const before = HEADER + body.length + FILL_KEY.length;
  const after = TAIL_KEY.length + tailBytes.length;
  const total = Math.max(2, Math.floor(fillFor(before, after)));
  const out = frame(body.length + FILL_KEY.length + total + after);
  let at = HEADER;
  at += body.copy(out, at);
  if (body[0] === 0xde) out.writeUInt16BE(count, HEADER + 1);
  else out[HEADER] = 0x80 | count;
  at += FILL_KEY.copy(out, at);
  // bin 8, 16 or 32: the header is 2, 3 or 5 bytes.
  if (total - 2 <= 0xff) {
    out[at++] = 0xc4;
    out[at++] = total - 2;
  } else if (total - 3 <= 0xffff) {
    out[at++] = 0xc5;
    at = out.writeUInt16BE(total - 3, at);
  } else {
    out[at++] = 0xc6;
    at = out.writeUInt32BE(total - 5, at);
  }
  const zerosEnd = HEADER + body.length + FILL_KEY.length + total;
  out.fill(0, at, zerosEnd);
  at = zerosEnd;
  at += TAIL_KEY.copy(out, at);
  out.set(tailBytes, at);
  return seal(out);
}

/** A framed part's format, read from its header alone; refuses bytes that are no Cairn part, or a format this code cannot read. */
export function framedFormat(runId: string, bytes: Uint8Array | null | undefined): number {
  // Byte by byte: a load checks every row's header, and a native compare costs more than these three reads.
  if (!bytes || bytes.length < HEADER || bytes[0] !== MAGIC[0] || bytes[1] !== MAGIC[1] || bytes[2] !== MAGIC[2]) {
    throw new StoredRecordError('record_corrupt', runId, `Stored record of run ${runId} is not a Cairn record (or is truncated).`);
  }
  const format = bytes[MAGIC.length]!;
  if (!READABLE_FORMATS.includes(format)) {
    throw new StoredRecordError('record_version_unsupported', runId,
      `Stored record of run ${runId} has format ${format}; this reader knows formats ${READABLE_FORMATS.slice(0, -1).join(', ')} and ${READABLE_FORMATS.at(-1)}.`);
  }
  return format;
}

/**
 * Reads a framed part back with its format, or refuses it with StoredRecordError. `checked` false skips the
 * checksum, for a caller that has already matched the part's whole bytes against a digest of its own.
 */
export function decodeFramed<T>(runId: string, bytes: Uint8Array | null | undefined, checked = true): { format: number; value: T } {
  const format = framedFormat(runId, bytes);
  // The rows a driver hands over are Buffers already; the payload is read in place, not through a view of it.
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes!.buffer, bytes!.byteOffset, bytes!.byteLength);
  if (checked && !sha256(buf.subarray(HEADER)).equals(buf.subarray(MAGIC.length + 1, HEADER))) {
    throw new StoredRecordError('record_corrupt', runId, `Stored record of run ${runId} fails its checksum.`);
  }
  try {
    const value = (buf.indexOf(PROTO_KEY, HEADER) !== -1
      ? plainFromMaps(mapUnpackr.unpack(buf.subarray(HEADER)))
      : packr.unpack(buf, { start: HEADER })) as T;
    return { format, value };
  } catch {
    throw new StoredRecordError('record_corrupt', runId, `Stored record of run ${runId} cannot be decoded.`);
  }
}

/** Reads a framed part's value back, or refuses it with StoredRecordError. */
export function decodePart<T>(runId: string, bytes: Uint8Array | null | undefined): T {
  return decodeFramed<T>(runId, bytes).value;
}

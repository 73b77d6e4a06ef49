/**
 * Set digests of a run's rows, kept beside its head (the SQLite and
 * PostgreSQL stores keep them in the run's row), so a load can tell whether
 * the transcript and receipt rows it read are the ones the last save left: a
 * row deleted, changed, moved, or copied in from elsewhere behind the store's
 * back is refused.
 *
 * A digest is the XOR of one 32-byte contribution per row, made from the
 * row's identity (the transcript index or the receipt key) and the sha256 of
 * its bytes. XOR lets a save update it for the rows it writes without
 * touching the others, and the inner sha256 is what PostgreSQL's
 * `sha256(body)` returns, so a store can hash a row where it lives. It
 * detects mistakes, not an adversary.
 *
 * How a contribution is made depends on the head's record format:
 *
 *   - format 3 and later ({@link xorRow}): each 32-bit word of the body's
 *     sha256 is mixed, through a bijective integer mixer, with a word derived
 *     from a 64-bit hash of the identity. No second sha256: a load checks a
 *     row with one hash call, not two.
 *   - formats 1 and 2 ({@link shaRowDigest}): the sha256 of the identity, a
 *     zero byte and the body's sha256. Only records written before format 3
 *     are checked this way; their next save rewrites every row under the
 *     format-3 digest.
 */
import { createHash } from 'node:crypto';
import { RECORD_FORMAT, sha256 } from './codec.js';

export const DIGEST_BYTES = 32;

/** The first record format whose digests are made with {@link xorRow}; older ones used {@link shaRowDigest}. */
export const MIXED_DIGEST_FORMAT = 3;

/**
 * The digest of no rows. A new buffer: the caller may XOR into it.
 * @internal Its Buffer type stays out of the published declarations (they need no @types/node).
 */
export const emptyDigest = (): Buffer => Buffer.alloc(DIGEST_BYTES);

/** Scratch for one row's hash input (identity, a zero byte, the body's sha256); grown for a longer identity. */
let scratch = Buffer.alloc(256);

/** One row's contribution as records before format 3 made it: the sha256 of its identity, a zero byte and its body's sha256. */
function shaRowDigest(identity: string | number, bodySha: Uint8Array): Buffer {
  const id = String(identity);
  const need = Buffer.byteLength(id) + 1 + bodySha.length;
  if (need > scratch.length) scratch = Buffer.alloc(need * 2);
  const n = scratch.write(id, 0, 'utf8');
  scratch[n] = 0;
  scratch.set(bodySha, n + 1);
  return sha256(scratch.subarray(0, need));
}

/** MurmurHash3's 32-bit finalizer: a bijective mix of one 32-bit word. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The golden-ratio constant, to give each word of a contribution a tweak of its own. */
const GOLDEN = 0x9e3779b9;

/**
 * XORs one row's format-3 contribution into `acc` in place: for word k (0 to 7, big-endian) of the body's sha256,
 * `fmix32(word ^ fmix32(h ^ (k + 1) * GOLDEN))`, where h is the first (even k) or second (odd k) of two FNV-1a hashes
 * of the identity written as a string (its UTF-16 code units), from two different offset bases, each finished with
 * fmix32 over its length. Swapping two rows' bodies, or moving a row to another identity, changes the digest unless
 * 32-bit words collide; a changed body changes it through its sha256.
 */
export function xorRow(acc: Uint8Array, identity: string | number, bodySha: Uint8Array): void {
  hashIdentity(identity);
  for (let k = 0, i = 0; k < 8; k++, i += 4) {
    mixWord(acc, k, ((bodySha[i]! << 24) | (bodySha[i + 1]! << 16) | (bodySha[i + 2]! << 8) | bodySha[i + 3]!) >>> 0);
  }
}

/** {@link xorRow} for a sha256 given as {@link sha256Text} gives it (character i is byte i): the same contribution. */
export function xorRowText(acc: Uint8Array, identity: string | number, bodySha: string): void {
  hashIdentity(identity);
  for (let k = 0, i = 0; k < 8; k++, i += 4) {
    mixWord(acc, k, ((bodySha.charCodeAt(i) << 24) | (bodySha.charCodeAt(i + 1) << 16)
      | (bodySha.charCodeAt(i + 2) << 8) | bodySha.charCodeAt(i + 3)) >>> 0);
  }
}

/** The two identity hashes of the row {@link mixWord} is mixing, set by {@link hashIdentity} (module state: no pair allocated per row). */
let idA = 0;
let idB = 0;

function hashIdentity(identity: string | number): void {
  const id = typeof identity === 'string' ? identity : String(identity);
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
  idA = fmix32(a ^ id.length);
  idB = fmix32(b ^ Math.imul(id.length, GOLDEN));
}

/** XORs word k of a row's contribution, from word k of its body's sha256, into `acc`. */
function mixWord(acc: Uint8Array, k: number, word: number): void {
  const c = fmix32(word ^ fmix32((k & 1 ? idB : idA) ^ Math.imul(k + 1, GOLDEN)));
  const i = k * 4;
  acc[i] = acc[i]! ^ (c >>> 24);
  acc[i + 1] = acc[i + 1]! ^ ((c >>> 16) & 0xff);
  acc[i + 2] = acc[i + 2]! ^ ((c >>> 8) & 0xff);
  acc[i + 3] = acc[i + 3]! ^ (c & 0xff);
}

/** XORs one row's contribution, as a record of `format` makes it, into `acc` (see the module's comment). */
export function xorRowOf(format: number, acc: Uint8Array, identity: string | number, bodySha: Uint8Array): void {
  if (format >= MIXED_DIGEST_FORMAT) xorRow(acc, identity, bodySha);
  else xorInto(acc, shaRowDigest(identity, bodySha));
}

/** {@link xorRowOf} for a sha256 given as {@link sha256Text} gives it. */
export function xorRowTextOf(format: number, acc: Uint8Array, identity: string | number, bodySha: string): void {
  if (format >= MIXED_DIGEST_FORMAT) xorRowText(acc, identity, bodySha);
  else xorInto(acc, shaRowDigest(identity, Buffer.from(bodySha, 'latin1')));
}

/** XORs `b` into `acc` in place. */
function xorInto(acc: Uint8Array, b: Uint8Array): void {
  for (let i = 0; i < DIGEST_BYTES; i++) acc[i] = acc[i]! ^ b[i]!;
}

/**
 * The digest of rows given as [identity, sha256 of the row's bytes], as a record of `format` makes it (this code's by default).
 * @internal Its Buffer type stays out of the published declarations (they need no @types/node).
 */
export function digestOf(rows: Iterable<readonly [identity: string | number, bodySha: Uint8Array]>, format = RECORD_FORMAT): Buffer {
  const acc = emptyDigest();
  for (const [identity, sha] of rows) xorRowOf(format, acc, identity, sha);
  return acc;
}

export function sameDigest(a: Uint8Array | null | undefined, b: Uint8Array): boolean {
  return a instanceof Uint8Array && a.length === b.length && Buffer.compare(a, b) === 0;
}

/**
 * The digest the SQLite store kept for records of format 1: one sha256 per
 * row over its identity and its value as JSON. Only a load of such a record
 * reads it; the first save after rewrites the run's rows under the digest
 * above.
 * @internal Its Buffer type stays out of the published declarations (they need no @types/node).
 */
export function legacyJsonDigest(rows: Iterable<readonly [identity: string | number, value: unknown]>): Buffer {
  const acc = emptyDigest();
  for (const [identity, value] of rows) {
    xorInto(acc, createHash('sha256').update(`${identity}\u0000${JSON.stringify(value)}`).digest());
  }
  return acc;
}

/**
 * Set digests of a run's rows, kept in its head row, so a save can tell,
 * without reading the rows back, whether the rows it does not rewrite still
 * hold what the envelope says, and a load can tell whether the rows it read
 * are the ones the last save left.
 *
 * A digest is the XOR of one sha256 per row, over the row's identity (the
 * transcript index or the receipt key) and its value as JSON. XOR lets a save
 * update it for the rows it writes without touching the others. It detects
 * mistakes (an envelope whose transcript prefix or older receipts differ from
 * what is stored, a row deleted, changed, moved or added behind the store's
 * back), not an adversary.
 */
import * as crypto from 'node:crypto';
import { isFrozenJsonCopy } from '../../agent/json.js';

export const EMPTY_DIGEST: Buffer = Buffer.alloc(32);

// crypto.hash (Node 20.12+) is a one-shot, several times cheaper than createHash per row.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'buffer') => Buffer }).hash;

function sha256(text: string): Buffer {
  return oneShot ? oneShot('sha256', text, 'buffer') : crypto.createHash('sha256').update(text).digest();
}

// Contributions of the engine's frozen copies (see frozenJsonCopy): such a
// value never changes, so a long run's save hashes only the rows the step added.
const known = new WeakMap<object, { identity: string | number; digest: Buffer }>();

/** The digest contribution of one row. The returned buffer must not be changed. */
export function rowDigest(identity: string | number, value: unknown): Buffer {
  if (!isFrozenJsonCopy(value)) return sha256(`${identity}\u0000${JSON.stringify(value)}`);
  const hit = known.get(value as object);
  if (hit && hit.identity === identity) return hit.digest;
  const digest = sha256(`${identity}\u0000${JSON.stringify(value)}`);
  known.set(value as object, { identity, digest });
  return digest;
}

/** XORs `b` into `acc` (32 bytes each) in place and returns `acc`. */
export function xorInto(acc: Buffer, b: Uint8Array): Buffer {
  for (let i = 0; i < acc.length; i++) acc[i] = acc[i]! ^ b[i]!;
  return acc;
}

/** The digest of rows, from nothing. */
export function digestOf(rows: Iterable<readonly [identity: string | number, value: unknown]>): Buffer {
  const acc = Buffer.alloc(32);
  for (const [identity, value] of rows) xorInto(acc, rowDigest(identity, value));
  return acc;
}

export function sameDigest(a: Uint8Array | null | undefined, b: Uint8Array): boolean {
  return a instanceof Uint8Array && a.length === b.length && Buffer.compare(a, b) === 0;
}

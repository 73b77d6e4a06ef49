/**
 * Set digests of a run's rows, kept beside its head (the SQLite and
 * PostgreSQL stores keep them in the run's row), so a load can tell whether
 * the transcript and receipt rows it read are the ones the last save left: a
 * row deleted, changed, moved, or copied in from elsewhere behind the store's
 * back is refused.
 *
 * A digest is the XOR of one sha256 per row, over the row's identity (the
 * transcript index or the receipt key) and the sha256 of its bytes. XOR lets
 * a save update it for the rows it writes without touching the others, and
 * the inner sha256 is what PostgreSQL's `sha256(body)` returns, so a store
 * can hash a row where it lives. It detects mistakes, not an adversary.
 */
import { createHash } from 'node:crypto';
import { sha256 } from './codec.js';

export const DIGEST_BYTES = 32;

/** The digest of no rows. A new buffer: the caller may XOR into it. */
export const emptyDigest = (): Buffer => Buffer.alloc(DIGEST_BYTES);

/** Scratch for one row's hash input (identity, a zero byte, the body's sha256); grown for a longer identity. */
let scratch = Buffer.alloc(256);

/** One row's contribution, from its identity and the sha256 of its bytes. */
export function rowDigest(identity: string | number, bodySha: Uint8Array): Buffer {
  const id = String(identity);
  const need = Buffer.byteLength(id) + 1 + bodySha.length;
  if (need > scratch.length) scratch = Buffer.alloc(need * 2);
  const n = scratch.write(id, 0, 'utf8');
  scratch[n] = 0;
  scratch.set(bodySha, n + 1);
  return sha256(scratch.subarray(0, need));
}

/** XORs `b` into `acc` in place and returns `acc`. */
export function xorInto(acc: Buffer, b: Uint8Array): Buffer {
  for (let i = 0; i < DIGEST_BYTES; i++) acc[i] = acc[i]! ^ b[i]!;
  return acc;
}

/** The digest of rows given as [identity, sha256 of the row's bytes]. */
export function digestOf(rows: Iterable<readonly [identity: string | number, bodySha: Uint8Array]>): Buffer {
  const acc = emptyDigest();
  for (const [identity, sha] of rows) xorInto(acc, rowDigest(identity, sha));
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
 */
export function legacyJsonDigest(rows: Iterable<readonly [identity: string | number, value: unknown]>): Buffer {
  const acc = emptyDigest();
  for (const [identity, value] of rows) {
    xorInto(acc, createHash('sha256').update(`${identity}\u0000${JSON.stringify(value)}`).digest());
  }
  return acc;
}

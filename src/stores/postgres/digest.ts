/**
 * Set digests of a run's transcript and receipt rows, kept in its `cairn_runs`
 * row, so a save can tell, without reading the rows back, whether the rows it
 * leaves alone hold what the envelope says (the stored transcript is the
 * envelope's prefix; the receipts it does not rewrite are the envelope's).
 *
 * A digest is the XOR of one sha256 per row, over the row's identity (the
 * transcript index or the receipt key) and the sha256 of its bytes: XOR lets
 * a save update it for the rows it writes only, and the inner sha256 is what
 * PostgreSQL's `sha256(body)` returns, so the database never sends a body to
 * compare it. It detects mistakes and tampering by accident, not an adversary.
 */
import { createHash } from 'node:crypto';

export const DIGEST_BYTES = 32;

export const emptyDigest = (): Buffer => Buffer.alloc(DIGEST_BYTES);

export const sha256 = (bytes: Uint8Array): Buffer => createHash('sha256').update(bytes).digest();

/** One row's contribution, from its identity and the sha256 of its bytes. */
export function rowDigest(identity: string | number, bodySha: Uint8Array): Buffer {
  return createHash('sha256').update(String(identity)).update('\u0000').update(bodySha).digest();
}

/** XORs `b` into `acc` in place and returns `acc`. */
export function xorInto(acc: Buffer, b: Uint8Array): Buffer {
  for (let i = 0; i < DIGEST_BYTES; i++) acc[i] = acc[i]! ^ b[i]!;
  return acc;
}

export function sameDigest(a: Uint8Array | null | undefined, b: Uint8Array): boolean {
  return a instanceof Uint8Array && a.length === b.length && Buffer.compare(a, b) === 0;
}

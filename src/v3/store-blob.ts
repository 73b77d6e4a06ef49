/**
 * Content addressing of context packages: the digest is `sha256:` of the
 * canonical JSON (keys sorted) of the package's blocks, and every package a
 * store takes is checked against it first.
 */
import { createHash } from 'node:crypto';
import { canonicalDigest, sortedCopy } from '../sdk/canonical.js';
import { InvalidOptionsError } from '../errors/index.js';
import type { JsonValue } from '../agent/json.js';
import { ContextBlobError } from './store-errors.js';
import type { ContextBlobContent, ContextBlobInput, ContextBlobRecordRef } from './store-types.js';

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** The digest a package of these blocks is stored under. */
export function contextBlobDigest(blocks: readonly JsonValue[]): string {
  return canonicalDigest(blocks);
}

export function isBlobDigest(value: unknown): value is string {
  return typeof value === 'string' && DIGEST.test(value);
}

/** A digest a caller asks about: refused unless it is `sha256:<64 hex>`. */
export function checkDigest(digest: unknown, what: string): string {
  if (!isBlobDigest(digest)) {
    throw new ContextBlobError('blob_digest_mismatch', String(digest), `${what}: a blob digest is sha256:<64 lowercase hex>, got ${JSON.stringify(digest)}.`);
  }
  return digest;
}

/** A checked, JSON-copied package: its digest matches its content, its records are well formed. */
export interface CheckedBlob {
  digest: string;
  content: ContextBlobContent;
  records: ContextBlobRecordRef[];
  /** The content's JSON text, as stored. */
  json: string;
}

/** Checks a package before anything is written; a copy shares nothing with the caller's object. */
export function checkBlob(blob: ContextBlobInput, what = 'putBlob'): CheckedBlob {
  if (blob === null || typeof blob !== 'object') throw new InvalidOptionsError(`${what}: a blob is { digest, content: { blocks }, records? }.`);
  const digest = checkDigest(blob.digest, what);
  const content = blob.content as unknown;
  if (content === null || typeof content !== 'object' || !Array.isArray((content as ContextBlobContent).blocks)
    || Object.keys(content).some((k) => k !== 'blocks')) {
    throw new InvalidOptionsError(`${what}: content must be { blocks: [...] } (the blocks alone are hashed, so nothing else is kept).`);
  }
  // One key-sorted copy (shared with nothing the caller holds), one stringify, one hash: the text hashed is the
  // canonical JSON of the blocks, and the content stored is that same text under `blocks`.
  let text: string;
  try {
    text = JSON.stringify(sortedCopy((content as ContextBlobContent).blocks));
  } catch (error) {
    throw new InvalidOptionsError(`${what}: the blocks are not JSON (${(error as Error).message}).`);
  }
  const actual = `sha256:${createHash('sha256').update(text).digest('hex')}`;
  if (actual !== digest) {
    throw new ContextBlobError('blob_digest_mismatch', digest,
      `${what}: the content hashes to ${actual}, not to its digest ${digest}; nothing was stored.`);
  }
  const json = `{"blocks":${text}}`;
  const copy = JSON.parse(json) as ContextBlobContent;
  const records = blob.records ?? [];
  if (!Array.isArray(records) || !records.every(isRecordRef)) {
    throw new InvalidOptionsError(`${what}: records must be a list of { recordId: string, revision: integer }.`);
  }
  return { digest, content: copy, json, records: records.map((r) => ({ recordId: r.recordId, revision: r.revision })) };
}

export function isRecordRef(value: unknown): value is ContextBlobRecordRef {
  const r = value as ContextBlobRecordRef | null;
  return r !== null && typeof r === 'object' && typeof r.recordId === 'string' && r.recordId !== ''
    && Number.isInteger(r.revision);
}

/** The key of one record revision in the forgotten sets. */
export const recordKey = (r: ContextBlobRecordRef) => `${r.recordId}\u0000${r.revision}`;

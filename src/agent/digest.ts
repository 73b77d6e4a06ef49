import { createHash } from 'node:crypto';
import { canonicalJson } from './json.js';

/** sha256 of a value's canonical JSON, as `sha256:<hex>`. */
export function digestOf(value: unknown): string {
  return digestOfText(canonicalJson(value));
}

function digestOfText(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

const MAX_MEMO = 256;
const MAX_MEMO_TEXT = 4_096;
const memo = new Map<string, string>();

/**
 * digestOf for configuration a run is bound to (tool schemas, limits, settings): the same text gives the same
 * digest without hashing it again, so a resume that passes the same options hashes nothing. Only texts up to
 * {@link MAX_MEMO_TEXT} characters are kept, at most {@link MAX_MEMO} of them, and never a run's data.
 */
export function configDigestOf(value: unknown): string {
  const text = canonicalJson(value);
  const known = memo.get(text);
  if (known !== undefined) return known;
  const digest = digestOfText(text);
  if (text.length <= MAX_MEMO_TEXT) {
    if (memo.size >= MAX_MEMO) memo.clear();
    memo.set(text, digest);
  }
  return digest;
}

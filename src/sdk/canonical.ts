/**
 * The digest of a state: sha256 of its canonical JSON (object keys sorted).
 * A state holds its whole run (the record with its snapshot, receipts and
 * transcript), so this runs over tens of kilobytes at the end of every Agent
 * leg. The state is therefore built as a key-sorted copy in the first place
 * (the one copy it needs anyway, so it shares nothing with the engine's
 * objects), and its canonical text is then `JSON.stringify` of that copy, at
 * native speed. A state read back in any key order (a database that reorders
 * JSON keys, say) is copied the same way before its digest is checked.
 */
import { createHash } from 'node:crypto';

/**
 * A copy of plain data as JSON would carry it (undefined and functions left
 * out, `null` for them in arrays, `toJSON` honoured), with every object's keys
 * inserted in sorted order, so `JSON.stringify(copy)` is canonical JSON: the
 * text digestOf (src/agent/digest.ts) hashes.
 */
export function sortedCopy(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      out[i] = v === undefined || typeof v === 'function' || typeof v === 'symbol' ? null : sortedCopy(v);
    }
    return out;
  }
  const record = value as Record<string, unknown>;
  if (typeof (record as { toJSON?: unknown }).toJSON === 'function') return sortedCopy((record as { toJSON(): unknown }).toJSON());
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(record).sort()) {
    const v = record[key];
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    // defineProperty: a `__proto__` key stays a key instead of setting the copy's prototype.
    if (key === '__proto__') Object.defineProperty(out, key, { value: sortedCopy(v), enumerable: true, writable: true, configurable: true });
    else out[key] = sortedCopy(v);
  }
  return out;
}

/** `sha256:<hex>` of the JSON text of a value that is already a {@link sortedCopy}. */
export function digestOfSorted(sorted: unknown): string {
  return `sha256:${createHash('sha256').update(JSON.stringify(sorted)).digest('hex')}`;
}

/** `sha256:<hex>` of the canonical JSON of any plain value. */
export function canonicalDigest(value: unknown): string {
  return digestOfSorted(sortedCopy(value));
}

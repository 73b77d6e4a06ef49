/**
 * How a receipt is written as a part (record format 5 on). A tool's receipt
 * most often holds its result twice: `rawResult`, what the tool returned, and
 * `modelOutput`, what the model was shown, which is the same value unless the
 * tool projects it. Such a receipt's part leaves `modelOutput` out: its value
 * is `[receipt without modelOutput, the key's position among its keys]`, and
 * reading it puts back the decoded `rawResult` at that position (the same
 * object: no part of a run is edited in place once made). Any other receipt
 * is written as it is; a receipt is a map, so the pair is never mistaken for
 * one. Parts of format 4 and before hold the receipt as it is.
 */
import { samePacked } from './codec.js';

/** The first record format whose receipt parts may leave out a `modelOutput` equal to their `rawResult`. */
export const SHARED_OUTPUT_FORMAT = 5;

type Json = Record<string, unknown>;

/** The value a receipt's part holds (see the module's comment). */
export function receiptPartValue(receipt: unknown): unknown {
  if (typeof receipt !== 'object' || receipt === null || Array.isArray(receipt)) return receipt;
  const r = receipt as Json;
  if (!Object.hasOwn(r, 'modelOutput') || !Object.hasOwn(r, 'rawResult')) return receipt;
  const output = r.modelOutput;
  const raw = r.rawResult;
  // Plain data on both sides, the same keys in the same order: the one packs to the other's bytes (codec.ts).
  if (typeof output !== 'object' || output === null || !samePacked(raw, output)) return receipt;
  const rest: Json = {};
  let at = -1;
  let i = 0;
  for (const key of Object.keys(r)) {
    if (key === 'modelOutput') at = i;
    else if (key === '__proto__') return receipt;
    else rest[key] = r[key];
    i++;
  }
  return [rest, at];
}

/** The receipt a part of `format` holds: {@link receiptPartValue} read back. Anything else is returned as it is (the caller checks it). */
export function receiptFromPart(format: number, value: unknown): unknown {
  if (format < SHARED_OUTPUT_FORMAT || !Array.isArray(value) || value.length !== 2) return value;
  const [rest, at] = value as [unknown, unknown];
  if (typeof rest !== 'object' || rest === null || Array.isArray(rest) || !Number.isInteger(at) || !Object.hasOwn(rest, 'rawResult')) return value;
  const r = rest as Json;
  const keys = Object.keys(r);
  if ((at as number) < 0 || (at as number) > keys.length) return value;
  const out: Json = {};
  for (let i = 0; i <= keys.length; i++) {
    if (i === at) out.modelOutput = r.rawResult;
    if (i < keys.length) out[keys[i]!] = r[keys[i]!];
  }
  return out;
}

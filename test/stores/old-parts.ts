/**
 * Parts as an older Cairn wrote them, made from this code's: the format byte
 * set back, and a receipt part holding its receipt whole (record format 5
 * leaves out a `modelOutput` equal to the `rawResult`, see
 * src/stores/receipt-part.ts, which a part of format 4 or before never does).
 */
import { decodeFramed, encodePart } from '../../src/stores/codec.js';
import { receiptFromPart } from '../../src/stores/receipt-part.js';

/** A head or message part of this code with its format byte set to `format` (these parts are the same in every format). */
export function partAs(body: Uint8Array, format: number): Buffer {
  const copy = Buffer.from(body);
  copy[3] = format;
  return copy;
}

/** The receipt a receipt part holds, as a load reads it. */
export function receiptOf<T = Record<string, unknown>>(body: Uint8Array): T {
  const { format, value } = decodeFramed<unknown>('old-parts', body);
  return receiptFromPart(format, value) as T;
}

/** A receipt part of this code as a Cairn writing `format` (4 or before) made it: the receipt whole. */
export function receiptPartAs(body: Uint8Array, format: number): Buffer {
  return partAs(encodePart(receiptOf(body)), format);
}

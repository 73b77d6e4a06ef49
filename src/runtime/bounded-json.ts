/**
 * JSON.stringify with a byte limit that is checked while the text is written,
 * so that a value whose JSON is over the limit is refused without its JSON
 * ever being made: a tool that returns 50 MB costs the run its own 50 MB, not
 * another copy (or two, once a rope string is flattened) per result.
 *
 * JSON.stringify itself writes the text, with a replacer that returns every
 * value as it is (so the text, the getters and toJSON methods called and the
 * errors thrown are JSON.stringify's own) and keeps a floor under the bytes
 * written so far. When the floor passes the limit the walk is stopped, before
 * the value that passed it is written; a string is counted by its length
 * alone, without being read, since each of its UTF-16 units is at least one
 * byte of JSON. A text that ends under the floor's limit is then measured.
 */

/** Returned when the JSON would be over the limit. */
export const OVER_LIMIT: unique symbol = Symbol('over the limit');

/** Thrown by the replacer to end the walk; never escapes {@link jsonWithin}. */
const STOP = { stop: true };

/**
 * `JSON.stringify(value)` when its UTF-8 encoding is at most `maxBytes`,
 * {@link OVER_LIMIT} when it would be longer, `undefined` where
 * JSON.stringify returns undefined (a function, a symbol, undefined).
 */
export function jsonWithin(value: unknown, maxBytes: number): string | undefined | typeof OVER_LIMIT {
  let floor = 0;
  let top = true;
  // Called by JSON.stringify with each value it is about to write (after toJSON), the holder as `this`.
  const count = function (this: unknown, key: string, v: unknown): unknown {
    const skipped = v === undefined || typeof v === 'function' || typeof v === 'symbol';
    const inArray = Array.isArray(this);
    // An object's member is written as "key":value unless its value is left out (an array writes null there).
    if (skipped && !inArray) return v;
    // (After an array's first element, a comma before each; an object's commas are not counted.)
    if (!top) floor += inArray ? (key === '0' ? 0 : 1) : key.length + 3;
    top = false;
    // A string is at least its length and two quotes; anything else written is at least one byte
    // (a boxed string is counted so too: reading its text would call its toString a second time).
    floor += typeof v === 'string' ? v.length + 2 : 1;
    if (floor > maxBytes) throw STOP;
    return v;
  };
  let text: string | undefined;
  try {
    text = JSON.stringify(value, count);
  } catch (error) {
    if (error === STOP) return OVER_LIMIT;
    throw error;
  }
  if (text === undefined) return undefined;
  // Length in UTF-16 units is at most the byte length and a third of it at least, so most texts need no count.
  if (text.length > maxBytes) return OVER_LIMIT;
  if (text.length * 3 > maxBytes && Buffer.byteLength(text, 'utf8') > maxBytes) return OVER_LIMIT;
  return text;
}

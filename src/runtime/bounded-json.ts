/**
 * JSON.stringify with a byte limit that is checked while the text is written,
 * so that a value whose JSON is over the limit is refused without its JSON
 * ever being made: a tool that returns 50 MB costs the run its own 50 MB, not
 * another copy (or two, once a rope string is flattened) per result. A string
 * is refused unread when its length alone cannot fit, since every UTF-16 unit
 * is at least one byte of JSON.
 *
 * It calls what JSON.stringify calls (getters, toJSON, a boxed primitive's
 * value), once each and in the same order, throws what it throws (a cycle, a
 * BigInt), and writes the same text, so that the caller can treat its result
 * exactly as before; only the way it stops is new.
 */
import { types } from 'node:util';

/** Returned when the JSON would be over the limit. */
export const OVER_LIMIT: unique symbol = Symbol('over the limit');

/** Thrown inside the walk to leave it at once; never escapes {@link jsonWithin}. */
const STOP = { stop: true };
/** A property JSON.stringify leaves out (undefined, a function, a symbol), after toJSON. */
const SKIP: unique symbol = Symbol('skip');

type RawJsonApi = { isRawJSON?: (value: unknown) => boolean };
const isRawJson = (JSON as unknown as RawJsonApi).isRawJSON;

/**
 * `JSON.stringify(value)` when its UTF-8 encoding is at most `maxBytes`,
 * {@link OVER_LIMIT} when it would be longer, `undefined` where
 * JSON.stringify returns undefined (a function, a symbol, undefined).
 */
export function jsonWithin(value: unknown, maxBytes: number): string | undefined | typeof OVER_LIMIT {
  const parts: string[] = [];
  const onPath = new Set<object>();
  let bytes = 0;

  const put = (text: string, size = text.length) => {
    bytes += size;
    if (bytes > maxBytes) throw STOP;
    parts.push(text);
  };
  const putString = (text: string) => {
    if (bytes + text.length + 2 > maxBytes) throw STOP;
    const quoted = JSON.stringify(text);
    put(quoted, Buffer.byteLength(quoted, 'utf8'));
  };

  // What JSON.stringify does to a value before writing it: toJSON, then a boxed primitive's own value.
  const prepare = (input: unknown, key: string): unknown => {
    let v = input;
    if ((typeof v === 'object' && v !== null) || typeof v === 'bigint') {
      const toJSON = (v as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === 'function') v = toJSON.call(v, key);
    }
    if (typeof v === 'object' && v !== null) {
      if (types.isNumberObject(v)) v = Number(v);
      else if (types.isStringObject(v)) v = String(v);
      else if (types.isBooleanObject(v)) v = Boolean.prototype.valueOf.call(v);
      else if (types.isBigIntObject(v)) v = BigInt.prototype.valueOf.call(v);
    }
    return v === undefined || typeof v === 'function' || typeof v === 'symbol' ? SKIP : v;
  };

  const write = (v: unknown): void => {
    switch (typeof v) {
      case 'string': return putString(v);
      case 'number': return put(Number.isFinite(v) ? String(v) : 'null');
      case 'boolean': return put(v ? 'true' : 'false');
      case 'bigint': throw new TypeError('Do not know how to serialize a BigInt');
      default: break;
    }
    if (v === null) return put('null');
    const object = v as object;
    if (isRawJson?.(object)) return put((object as { rawJSON: string }).rawJSON, Buffer.byteLength((object as { rawJSON: string }).rawJSON));
    if (onPath.has(object)) throw new TypeError('Converting circular structure to JSON');
    onPath.add(object);
    if (Array.isArray(object)) {
      put('[');
      const { length } = object;
      for (let i = 0; i < length; i++) {
        if (i > 0) put(',');
        const item = prepare(object[i], String(i));
        if (item === SKIP) put('null');
        else write(item);
      }
      put(']');
    } else {
      put('{');
      let first = true;
      const record = object as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        const item = prepare(record[key], key);
        if (item === SKIP) continue;
        if (!first) put(',');
        first = false;
        putString(key);
        put(':');
        write(item);
      }
      put('}');
    }
    onPath.delete(object);
  };

  try {
    const top = prepare(value, '');
    if (top === SKIP) return undefined;
    write(top);
  } catch (error) {
    if (error === STOP) return OVER_LIMIT;
    throw error;
  }
  return parts.join('');
}

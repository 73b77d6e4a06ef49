/** Plain JSON: the only kind of value a checkpoint may hold. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Key-sorted JSON: the same value always encodes to the same bytes. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      // defineProperty: a `__proto__` key stays a key instead of setting the prototype.
      if (v !== undefined) Object.defineProperty(out, key, { value: sortKeys(v), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

/**
 * Copies a value through JSON, so functions, class instances and `undefined` cannot reach a snapshot. The result
 * is exactly `JSON.parse(JSON.stringify(value))` (null for undefined), made without the text in between for plain
 * data: a value with anything JSON treats specially (a `toJSON` method, a prototype other than Object's or null, a
 * BigInt, nesting deeper than {@link COPY_DEPTH}) is copied through the text instead, with JSON's own errors.
 */
export function toJson<T = JsonValue>(value: unknown): T {
  if (value === undefined) return null as T;
  try {
    const copy = plainCopy(value, 0);
    // A function or a symbol: JSON writes no text, which JSON.parse refuses.
    if (copy === undefined) throw NOT_PLAIN;
    return copy as T;
  } catch (error) {
    if (error !== NOT_PLAIN) throw error;
    return JSON.parse(JSON.stringify(value)) as T;
  }
}

/** Thrown inside {@link plainCopy} when the value needs JSON's own rules. */
const NOT_PLAIN = Symbol('not plain JSON data');
/** Deeper than this, the copy goes through the text (which also reports a cycle as JSON does). */
const COPY_DEPTH = 200;

const isRawJson = (value: unknown): boolean =>
  (JSON as { isRawJSON?: (value: unknown) => boolean }).isRawJSON?.(value) === true;

/**
 * A string, boolean or number as JSON carries it: the value itself, -0 as 0, NaN and the infinities as null.
 * `undefined` for every other value (objects, null included, are the caller's).
 */
export function jsonScalar(value: unknown): string | boolean | number | null | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : null;
    default:
      return undefined;
  }
}

/** A JSON copy of `value`, which is not undefined at the top; `undefined` for a value JSON leaves out. */
function plainCopy(value: unknown, depth: number): unknown {
  const scalar = jsonScalar(value);
  if (scalar !== undefined) return scalar;
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return undefined;
  if (typeof value === 'bigint') throw NOT_PLAIN;
  if (value === null) return null;
  if (depth >= COPY_DEPTH || typeof (value as { toJSON?: unknown }).toJSON === 'function') throw NOT_PLAIN;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) throw NOT_PLAIN;
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      const entry = plainCopy(value[i], depth + 1);
      out[i] = entry === undefined ? null : entry;
    }
    return out;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  // A raw JSON object (JSON.rawJSON, where the runtime has it) has a null prototype and serializes as its text.
  if (proto !== Object.prototype && (proto !== null || isRawJson(value))) throw NOT_PLAIN;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value as object)) {
    const entry = plainCopy((value as Record<string, unknown>)[key], depth + 1);
    if (entry === undefined) continue;
    // defineProperty: a `__proto__` key stays a key, as JSON.parse makes it.
    if (key === '__proto__') Object.defineProperty(out, key, { value: entry, writable: true, enumerable: true, configurable: true });
    else out[key] = entry;
  }
  return out;
}

const copies = new WeakMap<object, object>();
const frozen = new WeakSet<object>();

function deepFreeze(value: unknown): void {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const entry of Object.values(value)) deepFreeze(entry);
}

/**
 * A deep-frozen JSON copy of `value`, made once per object. For the parts of a
 * run that are replaced but never edited once made (its messages, its
 * receipts), each save then reuses the copy of an old part instead of copying
 * the whole history again, and a store can tell an unchanged part by identity
 * ({@link isFrozenJsonCopy}): a frozen copy cannot have changed since.
 */
export function frozenJsonCopy<T>(value: T): T {
  if (value === null || typeof value !== 'object') return toJson<T>(value);
  if (frozen.has(value)) return value;
  let copy = copies.get(value);
  if (copy === undefined) {
    copy = toJson<object>(value);
    deepFreeze(copy);
    frozen.add(copy);
    copies.set(value, copy);
  }
  return copy as T;
}

/** Whether `value` is a copy {@link frozenJsonCopy} made: plain JSON that can never change. */
export function isFrozenJsonCopy(value: unknown): boolean {
  return typeof value === 'object' && value !== null && frozen.has(value);
}

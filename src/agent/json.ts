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
      if (v === undefined) continue;
      // defineProperty: a `__proto__` key stays a key instead of setting the prototype (any other key is a plain set).
      if (key === '__proto__') Object.defineProperty(out, key, { value: sortKeys(v), enumerable: true, writable: true, configurable: true });
      else out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

/**
 * Copies a value through JSON, so functions, class instances and `undefined` cannot reach a snapshot: exactly
 * `JSON.parse(JSON.stringify(value))` (null for undefined), made without the text in between for plain data
 * (see {@link jsonCopy}).
 */
export function toJson<T = JsonValue>(value: unknown): T {
  return value === undefined ? (null as T) : (jsonCopy(value) as unknown as T);
}

const isRawJson = (value: unknown): boolean =>
  (JSON as { isRawJSON?: (value: unknown) => boolean }).isRawJSON?.(value) === true;

/** Thrown inside {@link shareCopy} at a value JSON would not carry as it is: the value is copied through JSON instead. */
const NOT_PLAIN: unique symbol = Symbol('not plain JSON');
/** Deeper than this, a value is copied through JSON (which refuses a cycle with its own TypeError). */
const MAX_DEPTH = 1_000;

/**
 * A copy of `value` exactly as `JSON.parse(JSON.stringify(value))` would give
 * it, sharing every part equal to the same part of `previous` (an earlier copy
 * made here, or undefined: a copy shared with nothing). Plain data (plain
 * objects and arrays, strings, booleans, null, numbers, and `undefined`,
 * functions and symbols where JSON drops them or writes null) is copied
 * directly; anything else (a `toJSON`, a class instance, a BigInt, a raw JSON
 * object, a cycle) sends the whole value through JSON first, and JSON's result
 * is compared and shared the same way. So JSON's errors (a cycle, a BigInt, a
 * lone function) are this copy's errors.
 *
 * The copies are not frozen (a frozen object's keys are several times slower
 * to walk): a caller that shares them keeps them to itself.
 */
export function jsonCopy<T>(value: T, previous?: unknown): T {
  // A toJSON every object or array inherits: JSON's way for all of it.
  const inherited = typeof (Object.prototype as { toJSON?: unknown }).toJSON === 'function'
    || typeof (Array.prototype as { toJSON?: unknown }).toJSON === 'function';
  // A getter that makes a copy while this one runs gets buffers of its own.
  const scratch: Scratch = copying ? { keys: [], values: [], ownOnly: false } : SCRATCH;
  scratch.ownOnly = inheritsEnumerable();
  copying = true;
  try {
    if (!inherited) {
      try {
        return shareCopy(value, previous, 0, scratch) as T;
      } catch (error) {
        // A copy that stopped half-way leaves the caller's values in the buffers: nothing of theirs is held past it.
        // (A depth where only arrays were met has no buffer.)
        for (const values of scratch.values) values?.fill(undefined);
        if (error !== NOT_PLAIN) throw error;
      }
    }
    // JSON.stringify gives undefined for a lone function or symbol, which JSON.parse refuses, as JSON would.
    const parsed = JSON.parse(JSON.stringify(value) as string) as T;
    return previous === undefined ? parsed : shareCopy(parsed, previous, 0, scratch) as T;
  } finally {
    if (scratch === SCRATCH) copying = false;
  }
}

/** Whether a plain object inherits an enumerable key (someone added one to Object.prototype): for-in then needs an own-key check. */
function inheritsEnumerable(): boolean {
  // eslint-disable-next-line no-unreachable-loop
  for (const _ in {}) return true;
  return false;
}

/**
 * `value` as JSON would carry it. Where that equals `previous` (a copy made
 * here, or undefined), `previous` itself is returned: what did not
 * change costs a comparison and allocates nothing.
 */
function shareCopy(value: unknown, previous: unknown, depth: number, scratch: Scratch): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      // JSON writes -0 as 0, and NaN and the infinities as null.
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : null;
    case 'object':
      if (value === null) return null;
      if (depth > MAX_DEPTH) throw NOT_PLAIN;
      return Array.isArray(value)
        ? shareArray(value, previous, depth, scratch)
        : shareObject(value as Record<string, unknown>, previous, depth, scratch);
    default:
      // undefined, functions and symbols are handled by their parent (dropped, or null); a BigInt goes to JSON.
      throw NOT_PLAIN;
  }
}

/** Whether JSON leaves this property out of an object (and writes null for it in an array). */
function isDropped(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

function shareArray(value: unknown[], previous: unknown, depth: number, scratch: Scratch): unknown[] {
  if (Object.getPrototypeOf(value) !== Array.prototype || Object.hasOwn(value, 'toJSON')) throw NOT_PLAIN;
  const prev = Array.isArray(previous) ? previous : null;
  // null while every element so far is the previous copy's own: the previous copy is then the answer.
  let out: unknown[] | null = prev !== null && prev.length === value.length ? null : [];
  for (let i = 0; i < value.length; i++) {
    const element = value[i];
    const child = isDropped(element) ? null : shareCopy(element, prev !== null && i < prev.length ? prev[i] : undefined, depth + 1, scratch);
    if (out !== null) out.push(child);
    else if (child !== prev![i]) {
      out = prev!.slice(0, i);
      out.push(child);
    }
  }
  return out === null ? prev! : out;
}

/**
 * The keys and values of the object being copied at each depth, reused from
 * copy to copy (a depth's entries are read only while that depth's object is
 * copied), so comparing an unchanged object allocates nothing.
 */
interface Scratch {
  keys: string[][];
  values: unknown[][];
  /** for-in also yields inherited keys: check each one is own. */
  ownOnly: boolean;
}
const SCRATCH: Scratch = { keys: [], values: [], ownOnly: false };
/** Whether {@link SCRATCH} is in use. */
let copying = false;

function shareObject(value: Record<string, unknown>, previous: unknown, depth: number, scratch: Scratch): Record<string, unknown> {
  const proto: unknown = Object.getPrototypeOf(value);
  // A raw JSON object (JSON.rawJSON, where the runtime has it) has a null prototype and serializes as its text.
  if (proto !== Object.prototype && (proto !== null || isRawJson(value))) throw NOT_PLAIN;
  const keys = scratch.keys[depth] ?? (scratch.keys[depth] = []);
  const values = scratch.values[depth] ?? (scratch.values[depth] = []);
  const ownOnly = scratch.ownOnly;
  // The properties JSON writes, in its order (for-in's, own keys only), each read once as JSON reads it.
  let n = 0;
  for (const key in value) {
    if (ownOnly && !Object.hasOwn(value, key)) continue;
    const property = value[key];
    if (isDropped(property)) {
      if (key === 'toJSON' && typeof property === 'function') throw NOT_PLAIN;
      continue;
    }
    keys[n] = key;
    values[n] = property;
    n++;
  }
  const prev = previous !== null && typeof previous === 'object' && !Array.isArray(previous) ? previous as Record<string, unknown> : null;
  // The previous copy stands in while it has the same keys in the same order, until a value differs.
  let sameKeys = prev !== null;
  if (prev !== null) {
    let i = 0;
    for (const key in prev) {
      if (ownOnly && !Object.hasOwn(prev, key)) continue;
      if (i >= n || keys[i] !== key) {
        sameKeys = false;
        break;
      }
      i++;
    }
    if (i !== n) sameKeys = false;
  }
  let out: Record<string, unknown> | null = sameKeys ? null : {};
  for (let i = 0; i < n; i++) {
    const key = keys[i]!;
    const before = sameKeys ? prev![key] : prev !== null && Object.hasOwn(prev, key) ? prev[key] : undefined;
    const child = shareCopy(values[i], before, depth + 1, scratch);
    if (out !== null) defineKey(out, key, child);
    else if (child !== before) {
      out = {};
      for (let k = 0; k < i; k++) defineKey(out, keys[k]!, prev![keys[k]!]);
      defineKey(out, key, child);
    }
  }
  // Its entries are read no more: cleared, so nothing of the caller's is held after the copy.
  values.fill(undefined, 0, n);
  return out === null ? prev! : out;
}

/** Sets an own data property, `__proto__` included (an assignment to it would set the prototype instead). */
export function defineKey(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  else target[key] = value;
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

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

/** Copies a value through JSON, so functions, class instances and `undefined` cannot reach a snapshot. */
export function toJson<T = JsonValue>(value: unknown): T {
  return value === undefined ? (null as T) : (JSON.parse(JSON.stringify(value)) as T);
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

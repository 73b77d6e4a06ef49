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

/**
 * Memory scopes: checked on every store call, turned into the canonical key
 * a backend stores, and compared (a read's scope matches a record's when the
 * record's holds every field of the read's; a child run may only narrow).
 */
import { MemoryError } from './errors.js';
import type { MemoryScope } from './types.js';

/** The keys a scope may have, in the order the canonical key lists them. */
export const MEMORY_SCOPE_KEYS = ['userId', 'agentId', 'chatId'] as const;
const KNOWN: ReadonlySet<string> = new Set(MEMORY_SCOPE_KEYS);

/**
 * Checks a scope and returns a clean copy (own keys only, in a fresh object).
 * Refuses anything but a plain object of non-empty strings under the known
 * keys, with at least one key: an unknown key or a prototype name
 * (`__proto__`, `constructor`) is `memory_scope_invalid`, never ignored.
 */
export function checkMemoryScope(scope: unknown, where = 'memory'): MemoryScope {
  if (typeof scope !== 'object' || scope === null || Array.isArray(scope)) {
    throw new MemoryError('memory_scope_invalid', `${where}: scope must be an object such as { userId: 'ada' }.`);
  }
  const proto = Object.getPrototypeOf(scope);
  if (proto !== Object.prototype && proto !== null) {
    throw new MemoryError('memory_scope_invalid', `${where}: scope must be a plain object.`);
  }
  const clean: MemoryScope = {};
  const keys = Reflect.ownKeys(scope);
  for (const key of keys) {
    if (typeof key !== 'string' || !KNOWN.has(key)) {
      throw new MemoryError('memory_scope_invalid', `${where}: scope key ${JSON.stringify(String(key))} is not one of ${MEMORY_SCOPE_KEYS.join(', ')}.`);
    }
    const descriptor = Object.getOwnPropertyDescriptor(scope, key)!;
    const value = descriptor.value as unknown;
    if (!('value' in descriptor) || typeof value !== 'string' || value === '') {
      throw new MemoryError('memory_scope_invalid', `${where}: scope.${key} must be a non-empty string.`);
    }
    clean[key as keyof MemoryScope] = value;
  }
  if (keys.length === 0) {
    throw new MemoryError('memory_scope_invalid', `${where}: scope must name at least one of ${MEMORY_SCOPE_KEYS.join(', ')}.`);
  }
  return clean;
}

/** The canonical text of a checked scope: the same for the same scope whatever its key order. */
export function memoryScopeKey(scope: MemoryScope): string {
  return JSON.stringify(MEMORY_SCOPE_KEYS.map((key) => scope[key] ?? null));
}

/** The scope a canonical key was made from. */
export function memoryScopeFromKey(key: string): MemoryScope {
  const values = JSON.parse(key) as (string | null)[];
  const scope: MemoryScope = {};
  MEMORY_SCOPE_KEYS.forEach((name, index) => {
    const value = values[index];
    if (typeof value === 'string') scope[name] = value;
  });
  return scope;
}

/** True when a record written under `recordScope` is seen by a read with `query`: every field of the query is the record's. */
export function memoryScopeMatches(query: MemoryScope, recordScope: MemoryScope): boolean {
  return MEMORY_SCOPE_KEYS.every((key) => query[key] === undefined || query[key] === recordScope[key]);
}

/**
 * True when `child` only narrows `parent`: it keeps every field the parent
 * pins, with the same value, and may pin more. A child that drops a field or
 * changes a user, agent or chat is wider (or elsewhere) and is refused by the run.
 */
export function narrowsMemoryScope(parent: MemoryScope, child: MemoryScope): boolean {
  return memoryScopeMatches(parent, child);
}

import {
  AgentRunLeaseError, InvalidOptionsError, RevisionConflictError, RunIdentityError,
} from '../errors/index.js';
import type {
  AgentRunEnvelope, AgentRunListPage, AgentRunListQuery, AgentRunStatus, AgentRunStore, AgentRunSummary,
  Lease, LeaseProvider,
} from '../agent/types.js';
import { jsonScalar } from '../agent/json.js';
import { peekInMemoryLease } from './in-memory-leases.js';
import { decodeCursor, encodeCursor, listLimit, listStatuses, type ListPosition } from './list-query.js';

export interface InMemoryAgentRunStore extends AgentRunStore {
  /** Every stored run id, in insertion order. */
  runIds(): string[];
  list(query?: AgentRunListQuery): Promise<AgentRunListPage>;
  prune(options: { terminalBefore: number }): Promise<number>;
}

export interface InMemoryAgentRunStoreOptions {
  /** The clock a lease's expiry is read on; use the lease provider's clock. @default Date.now */
  clock?: { now(): number };
  /**
   * The provider the executors take their leases from. With it, a save that
   * carries a lease is refused with AgentRunLeaseError (`lease_lost`) unless
   * the provider still holds that lease (same owner and token) unexpired.
   * Without it, a save's lease is not checked.
   */
  leases?: LeaseProvider;
}

interface StoredRun {
  /**
   * The envelope as JSON would carry it: a copy no caller can reach (a
   * load hands out a copy of it). Its parts that a save left as they were (each transcript message,
   * each receipt) are the previous revision's objects, so a save copies only
   * what changed (see {@link shareCopy}).
   */
  envelope: AgentRunEnvelope;
  summary: AgentRunSummary;
}

/** Every status, and whether prune may delete a run in it. A Record, so a new status cannot be left out. */
const IS_TERMINAL: Record<AgentRunStatus, boolean> = {
  running: false, suspended: false, drained: false, completed: true, stopped: true, failed: true,
};

/**
 * A volatile store for tests and demos: nothing survives the process. It keeps
 * a deep copy of each envelope, as JSON would carry it (so later changes by
 * the caller cannot reach it), and fences saves by revision like the durable
 * stores. `seed` envelopes are stored as they are, revisions kept.
 *
 * A save compares the envelope with the run's stored copy and copies only
 * what differs; the rest of the new copy is the old copy's objects
 * (strings, being immutable, are kept as the caller's). So a run's saves
 * cost the walk of its record but allocate only what each save added, not
 * its whole history again. A load hands out a fresh copy of everything.
 *
 * Listing and pruning go by each envelope's `updatedAt` (the engine's clock);
 * `options.clock` only decides whether a lease has expired.
 *
 * @example
 * ```ts
 * const clock = { now: () => Date.now() };
 * const leases = createInMemoryLeaseProvider({ clock });
 * const store = createInMemoryAgentRunStore([], { clock, leases });
 * const page = await store.list({ status: 'suspended', scope: 'tenant-a' });
 * ```
 */
export function createInMemoryAgentRunStore(
  seed: Iterable<AgentRunEnvelope> = [],
  options: InMemoryAgentRunStoreOptions = {},
): InMemoryAgentRunStore {
  const clock = options.clock ?? { now: () => Date.now() };
  const leases = options.leases;
  const records = new Map<string, StoredRun>();
  const put = (copy: AgentRunEnvelope) => records.set(copy.runId, { envelope: copy, summary: summarize(copy) });
  for (const envelope of seed) put(copyAgainst(envelope, records.get(envelope.runId)?.envelope));

  return {
    async load(runId, loadOptions = {}) {
      const stored = records.get(runId);
      if (stored === undefined) return undefined;
      if (loadOptions.scope !== undefined && stored.summary.scope !== loadOptions.scope) {
        throw new RunIdentityError('scope_mismatch', runId);
      }
      return thaw(stored.envelope) as AgentRunEnvelope;
    },

    async save(envelope, saveOptions = {}) {
      // Copied before anything waits, so a caller changing the object later changes nothing here.
      const copy = copyAgainst(envelope, records.get(envelope.runId)?.envelope);
      const { runId, revision } = copy;
      const lease = saveOptions.lease;
      if (lease && leases) {
        // An in-memory provider is read synchronously: nothing can take the lease between check and write.
        const peeked = peekInMemoryLease(leases, lease.key);
        const current = peeked !== undefined ? peeked : await leases.inspect(lease.key);
        if (!stillHeld(current, lease, clock.now())) throw new AgentRunLeaseError('lease_lost', lease.key);
      }
      // From here to the write nothing awaits: the fence and the write are one step.
      const stored = records.get(runId);
      const storedRevision = stored === undefined ? null : stored.summary.revision;
      if (revision !== (storedRevision ?? 0) + 1) {
        throw new RevisionConflictError(runId, revision - 1, storedRevision);
      }
      put(copy);
    },

    async list(query = {}) {
      const { statuses, limit, after } = normalizeQuery(query);
      const matches = [...records.values()]
        .map((r) => r.summary)
        .filter((s) =>
          (statuses === null || statuses.has(s.status))
          && (query.scope === undefined || s.scope === query.scope)
          && (query.updatedBefore === undefined || s.updatedAt < query.updatedBefore)
          && (query.updatedAfter === undefined || s.updatedAt >= query.updatedAfter)
          && (after === null || compareSummaries(s, after) > 0))
        .sort(compareSummaries);
      const runs = matches.slice(0, limit).map((s) => ({ ...s }));
      const last = runs[runs.length - 1];
      return matches.length > limit && last ? { runs, nextCursor: encodeCursor(last) } : { runs };
    },

    async prune(pruneOptions) {
      const terminalBefore = pruneOptions?.terminalBefore;
      if (typeof terminalBefore !== 'number' || Number.isNaN(terminalBefore)) {
        throw new InvalidOptionsError('prune needs terminalBefore: a time in milliseconds.');
      }
      let pruned = 0;
      for (const [runId, { summary }] of records) {
        if (IS_TERMINAL[summary.status] && summary.updatedAt < terminalBefore) {
          records.delete(runId);
          pruned += 1;
        }
      }
      return pruned;
    },

    runIds: () => [...records.keys()],
  };
}

function stillHeld(current: Lease | null, lease: Lease, now: number): boolean {
  return current !== null && current.owner === lease.owner && current.token === lease.token && now < current.expiresAt;
}

function summarize(envelope: AgentRunEnvelope): AgentRunSummary {
  return {
    runId: envelope.runId,
    scope: envelope.scope,
    status: envelope.status,
    revision: envelope.revision,
    bindingId: envelope.bindingId ?? null,
    createdAt: envelope.createdAt,
    updatedAt: envelope.updatedAt,
    pendingApprovals: Array.isArray(envelope.pendingApprovals) ? envelope.pendingApprovals.length : 0,
    pendingClientCalls: Array.isArray(envelope.pendingClientCalls) ? envelope.pendingClientCalls.length : 0,
  };
}

/** List order: newest `updatedAt` first, then runId descending (so a cursor is one `(updatedAt, runId) <` comparison). */
function compareSummaries(a: { updatedAt: number; runId: string }, b: { updatedAt: number; runId: string }): number {
  if (a.updatedAt !== b.updatedAt) return b.updatedAt - a.updatedAt;
  return a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0;
}

function normalizeQuery(query: AgentRunListQuery): { statuses: Set<AgentRunStatus> | null; limit: number; after: ListPosition | null } {
  const statuses = listStatuses(query.status);
  for (const field of ['updatedBefore', 'updatedAfter'] as const) {
    const value = query[field];
    if (value !== undefined && (typeof value !== 'number' || Number.isNaN(value))) {
      throw new InvalidOptionsError(`list: ${field} must be a time in milliseconds.`);
    }
  }
  return {
    statuses: statuses === null ? null : new Set(statuses),
    limit: listLimit(query.limit),
    after: query.cursor === undefined ? null : decodeCursor(query.cursor),
  };
}

/** Thrown inside {@link shareCopy} at a value JSON would not carry as it is: the save is copied through JSON instead. */
const NOT_PLAIN: unique symbol = Symbol('not plain JSON');
/** Deeper than this, a value is copied through JSON (which refuses a cycle with its own TypeError). */
const MAX_DEPTH = 1_000;

/**
 * A copy of `envelope` exactly as `JSON.parse(JSON.stringify(envelope))`
 * would give it, sharing every part equal to the same part of `previous`
 * (the run's stored copy). Plain data (plain objects and arrays, strings,
 * booleans, null, numbers, and `undefined`, functions and symbols where JSON
 * drops them or writes null) is copied directly; anything else (a `toJSON`,
 * a class instance, a BigInt, a cycle) sends the whole envelope through JSON
 * first, and JSON's result is compared and shared the same way. So
 * JSON.stringify's errors (a cycle, a BigInt) are the save's errors, as they were.
 *
 * The copies are not frozen (a frozen object's keys are several times slower
 * to walk, and every save walks them): nothing outside this file ever sees
 * one, and a load hands out a fresh copy ({@link thaw}).
 */
function copyAgainst(envelope: AgentRunEnvelope, previous: AgentRunEnvelope | undefined): AgentRunEnvelope {
  // A toJSON every object or array inherits: JSON's way for all of it.
  const inherited = typeof (Object.prototype as { toJSON?: unknown }).toJSON === 'function'
    || typeof (Array.prototype as { toJSON?: unknown }).toJSON === 'function';
  // A getter that saves while this save is being copied gets buffers of its own.
  const scratch: Scratch = copying ? { keys: [], values: [], ownOnly: false } : SCRATCH;
  scratch.ownOnly = inheritsEnumerable();
  copying = true;
  try {
    if (!inherited) {
      try {
        return shareCopy(envelope, previous, 0, scratch) as AgentRunEnvelope;
      } catch (error) {
        if (error !== NOT_PLAIN) throw error;
      }
    }
    return shareCopy(JSON.parse(JSON.stringify(envelope)), previous, 0, scratch) as AgentRunEnvelope;
  } finally {
    if (scratch === SCRATCH) copying = false;
    // Nothing of the caller's is held past the save (a copy that stopped half-way leaves values behind).
    // (A depth where only arrays were met has no buffer.)
    for (const values of scratch.values) values?.fill(undefined);
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
 * here, or undefined), `previous` itself is returned: what a save did not
 * change costs a comparison and allocates nothing.
 */
function shareCopy(value: unknown, previous: unknown, depth: number, scratch: Scratch): unknown {
  const scalar = jsonScalar(value);
  if (scalar !== undefined) return scalar;
  if (typeof value === 'object') {
    if (value === null) return null;
    if (depth > MAX_DEPTH) throw NOT_PLAIN;
    return Array.isArray(value)
      ? shareArray(value, previous, depth, scratch)
      : shareObject(value as Record<string, unknown>, previous, depth, scratch);
  }
  // undefined, functions and symbols are handled by their parent (dropped, or null); a BigInt goes to JSON.
  throw NOT_PLAIN;
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
 * save to save (a depth's entries are read only while that depth's object is
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
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) throw NOT_PLAIN;
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
    if (out !== null) define(out, key, child);
    else if (child !== before) {
      out = {};
      for (let k = 0; k < i; k++) define(out, keys[k]!, prev![keys[k]!]);
      define(out, key, child);
    }
  }
  return out === null ? prev! : out;
}

/** Sets an own data property, `__proto__` included (an assignment to it would set the prototype instead). */
function define(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  else target[key] = value;
}

/** A deep copy of a stored (plain) copy: what a load hands out, shared with nothing. */
function thaw(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(thaw);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) define(out, key, thaw((value as Record<string, unknown>)[key]));
  return out;
}

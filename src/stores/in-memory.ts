import {
  AgentRunLeaseError, InvalidOptionsError, RevisionConflictError, RunIdentityError,
} from '../errors/index.js';
import type {
  AgentRunEnvelope, AgentRunListPage, AgentRunListQuery, AgentRunStatus, AgentRunStore, AgentRunSummary,
  Lease, LeaseProvider,
} from '../agent/types.js';
import { storedCopy, thawRun, type StoredCopy } from './in-memory-copy.js';
import { peekInMemoryLease } from './in-memory-leases.js';
import { decodeCursor, encodeCursor, listLimit, listStatuses, summaryOf, type ListPosition } from './list-query.js';

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

/** A run's copy (see ./in-memory-copy.ts) and its summary, which list and the scope check read. */
interface StoredRun extends StoredCopy {
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
 * (strings, being immutable, are kept as the caller's). An envelope the
 * engine made is not even compared where the engine only appends (its
 * transcript and ended receipts): a save then costs what the step added,
 * not its whole history again. A load hands out a fresh copy of everything.
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
  const put = (stored: Omit<StoredRun, 'summary'>) => records.set(stored.envelope.runId, { ...stored, summary: summaryOf(stored.envelope) });
  for (const envelope of seed) put(storedCopy(envelope, records.get(envelope.runId)));

  return {
    async load(runId, loadOptions = {}) {
      const stored = records.get(runId);
      if (stored === undefined) return undefined;
      if (loadOptions.scope !== undefined && stored.summary.scope !== loadOptions.scope) {
        throw new RunIdentityError('scope_mismatch', runId);
      }
      return thawRun(stored);
    },

    async save(envelope, saveOptions = {}) {
      // Copied before anything waits, so a caller changing the object later changes nothing here.
      const copy = storedCopy(envelope, records.get(envelope.runId));
      const { runId, revision } = copy.envelope;
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

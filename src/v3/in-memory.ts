/**
 * `createInMemoryAgentRunStoreV3`: a volatile AgentRunStoreV3 for tests and
 * demos. It fences saves by revision, stores each package once by digest,
 * and keeps times on its clock, like the durable V3 stores.
 */
import {
  AgentRunLeaseError, InvalidOptionsError, RevisionConflictError, RunIdentityError,
} from '../errors/index.js';
import type { AgentRunListQuery, Lease, LeaseProvider } from '../stores/types.js';
import type { AgentRunSummary } from '../stores/types.js';
import { peekInMemoryLease } from '../stores/in-memory-leases.js';
import { decodeCursor, encodeCursor, listLimit, listStatuses } from '../stores/list-query.js';
import { jsonCopy } from '../agent/json.js';
import type { AgentRunEnvelopeV3 } from './envelope.js';
import { checkBlob, checkDigest, isRecordRef, recordKey, type CheckedBlob } from './store-blob.js';
import { ContextBlobError } from './store-errors.js';
import {
  checkLoadedV3, checkSaveV3, checkTerminalBefore, summarizeV3, TERMINAL_STATUSES,
} from './store-checks.js';
import { decorateLoaded, stripStoreFields } from './store-load.js';
import type { AgentRunStoreV3, ContextBlobRecordRef, ForgetEventV3 } from './store-types.js';
import { recordTargets, rewriteRecordCopies, saveMatcher, type RedactedPackage } from './forget.js';

export interface InMemoryAgentRunStoreV3Options {
  /** The store's clock: the times of saves (and so of list and prune), and lease expiry. @default Date.now */
  clock?: { now(): number };
  /** As createInMemoryAgentRunStore's: with it, a save's lease is checked against this provider. */
  leases?: LeaseProvider;
}

export interface InMemoryAgentRunStoreV3 extends AgentRunStoreV3 {
  /** Every stored run id, in insertion order. */
  runIds(): string[];
  /** Every stored package digest (redacted ones included), sorted. */
  blobDigests(): string[];
}

interface StoredRunV3 {
  /**
   * The envelope as saved, a JSON copy nothing a caller holds can reach: it shares the parts equal to the
   * previous save's copy (jsonCopy), so a step's save copies what the step changed, not the whole record.
   */
  envelope: AgentRunEnvelopeV3;
  summary: AgentRunSummary;
  digests: string[];
}

interface StoredBlob {
  /** The content's JSON text; null once a forget redacted it. */
  json: string | null;
  records: ContextBlobRecordRef[];
}

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_STATUSES);

/**
 * @example
 * ```ts
 * const runs = createInMemoryAgentRunStoreV3();
 * const result = await runAgent({ checkpointVersion: 3, model, prompt, session: { store: runs, runId: 'r-1', scope: 'acme' } });
 * ```
 */
export function createInMemoryAgentRunStoreV3(options: InMemoryAgentRunStoreV3Options = {}): InMemoryAgentRunStoreV3 {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('createInMemoryAgentRunStoreV3: options must be an object.');
  if (options.clock !== undefined && typeof options.clock?.now !== 'function') {
    throw new InvalidOptionsError('createInMemoryAgentRunStoreV3: clock must have a now() method.');
  }
  const clock = options.clock ?? { now: () => Date.now() };
  const leases = options.leases;
  const runs = new Map<string, StoredRunV3>();
  const blobs = new Map<string, StoredBlob>();
  const forgotten = new Set<string>();

  const isForgotten = (records: readonly ContextBlobRecordRef[]) => records.some((r) => forgotten.has(recordKey(r)));
  const putChecked = (blob: CheckedBlob): boolean => {
    if (blobs.has(blob.digest)) return false;
    // A package that holds a record forgotten earlier is redacted as it arrives.
    blobs.set(blob.digest, { json: isForgotten(blob.records) ? null : blob.json, records: blob.records });
    return true;
  };

  /** The envelope with its copies of the redacted packages' blocks as stand-ins (exact text for a package this save carries). */
  const redactedCopies = (envelope: AgentRunEnvelopeV3, digests: readonly string[], incoming: readonly CheckedBlob[]) => {
    const redacted = new Map<string, RedactedPackage>();
    for (const d of digests) {
      const blob = blobs.get(d);
      if (blob?.json !== null || blob === undefined || redacted.has(d)) continue;
      const carried = incoming.find((b) => b.digest === d);
      redacted.set(d, {
        ...(carried ? { blocks: (JSON.parse(carried.json) as { blocks?: unknown }).blocks } : {}),
        forgottenIds: blob.records.filter((r) => forgotten.has(recordKey(r))).map((r) => r.recordId),
      });
    }
    return redacted.size === 0 ? envelope : rewriteRecordCopies(envelope, saveMatcher(envelope.context?.steps, redacted)).record;
  };

  return {
    checkpointVersion: 3,

    async load(runId, loadOptions = {}) {
      const stored = runs.get(runId);
      if (stored === undefined) return undefined;
      if (loadOptions.scope !== undefined && stored.summary.scope !== loadOptions.scope) throw new RunIdentityError('scope_mismatch', runId);
      const record = checkLoadedV3(jsonCopy(stored.envelope), runId, loadOptions.scope);
      const redacted = new Set(stored.digests.filter((d) => blobs.get(d)?.json === null));
      return decorateLoaded(record, stored.summary.createdAt, stored.summary.updatedAt, redacted);
    },

    async save(envelope, saveOptions = {}) {
      const digests = checkSaveV3(envelope);
      const incoming = (saveOptions.blobs ?? []).map((b) => checkBlob(b, 'save'));
      const { runId, revision } = envelope;
      const copy = jsonCopy(stripStoreFields(envelope), runs.get(runId)?.envelope);
      const lease = saveOptions.lease;
      if (lease && leases) {
        const peeked = peekInMemoryLease(leases, lease.key);
        const current = peeked !== undefined ? peeked : await leases.inspect(lease.key);
        if (!stillHeld(current, lease, clock.now())) throw new AgentRunLeaseError('lease_lost', lease.key);
      }
      // From here to the write nothing awaits: the fences and the write are one step.
      const stored = runs.get(runId);
      if (stored && stored.summary.scope !== envelope.scope) throw new RunIdentityError('scope_mismatch', runId);
      const storedRevision = stored === undefined ? null : stored.summary.revision;
      if (revision !== (storedRevision ?? 0) + 1) throw new RevisionConflictError(runId, revision - 1, storedRevision);
      const coming = new Set(incoming.map((b) => b.digest));
      const missing = digests.find((d) => !blobs.has(d) && !coming.has(d));
      if (missing !== undefined) {
        throw new ContextBlobError('blob_missing', missing, `save: run ${runId}: its context points to package ${missing}, which is neither stored nor in this save.`);
      }
      for (const blob of incoming) putChecked(blob);
      // A save that points to a redacted package stores its copies of the package's block as stand-ins.
      const kept = redactedCopies(copy, digests, incoming);
      const now = clock.now();
      runs.set(runId, { envelope: kept, digests, summary: summarizeV3(kept, stored?.summary.createdAt ?? now, now) });
    },

    async list(query: AgentRunListQuery = {}) {
      const statuses = listStatuses(query.status);
      for (const field of ['updatedBefore', 'updatedAfter'] as const) {
        const value = query[field];
        if (value !== undefined && (typeof value !== 'number' || Number.isNaN(value))) {
          throw new InvalidOptionsError(`list: ${field} must be a time in milliseconds.`);
        }
      }
      const limit = listLimit(query.limit);
      const after = query.cursor === undefined ? null : decodeCursor(query.cursor);
      const matches = [...runs.values()].map((r) => r.summary).filter((s) =>
        (statuses === null || statuses.includes(s.status))
        && (query.scope === undefined || s.scope === query.scope)
        && (query.updatedBefore === undefined || s.updatedAt < query.updatedBefore)
        && (query.updatedAfter === undefined || s.updatedAt >= query.updatedAfter)
        && (after === null || compare(s, after) > 0)).sort(compare);
      const page = matches.slice(0, limit).map((s) => ({ ...s }));
      const last = page[page.length - 1];
      return matches.length > limit && last ? { runs: page, nextCursor: encodeCursor(last) } : { runs: page };
    },

    async putBlob(blob) {
      const checked = checkBlob(blob);
      return { digest: checked.digest, stored: putChecked(checked) };
    },

    async getBlob(digest) {
      const stored = blobs.get(checkDigest(digest, 'getBlob'));
      if (stored === undefined) return { status: 'missing' };
      if (stored.json === null) return { status: 'redacted' };
      return { status: 'found', content: JSON.parse(stored.json) };
    },

    async prune(pruneOptions) {
      const terminalBefore = checkTerminalBefore(pruneOptions);
      let pruned = 0;
      for (const [runId, { summary }] of runs) {
        if (TERMINAL.has(summary.status) && summary.updatedAt < terminalBefore) {
          runs.delete(runId);
          pruned += 1;
        }
      }
      const kept = new Set<string>();
      for (const run of runs.values()) for (const d of run.digests) kept.add(d);
      for (const digest of blobs.keys()) if (!kept.has(digest)) blobs.delete(digest);
      return pruned;
    },

    async redactForgotten(event: ForgetEventV3) {
      const records = checkForgetEvent(event);
      for (const r of records) forgotten.add(recordKey(r));
      // The blocks of each package to redact, read before they go: the exact text of each copy to rewrite.
      const gone = new Map<string, unknown>();
      for (const [digest, blob] of blobs) {
        if (blob.json !== null && isForgotten(blob.records)) gone.set(digest, (JSON.parse(blob.json) as { blocks?: unknown }).blocks);
      }
      for (const [runId, run] of runs) {
        if (!run.digests.some((d) => gone.has(d))) continue;
        const { record, rewritten } = rewriteRecordCopies(run.envelope, recordTargets(run.envelope.context?.steps, gone));
        // In place: the run keeps its revision and its last-save time.
        if (rewritten > 0) runs.set(runId, { ...run, envelope: record });
      }
      for (const digest of gone.keys()) blobs.get(digest)!.json = null;
      return gone.size;
    },

    async now() {
      return clock.now();
    },

    runIds: () => [...runs.keys()],
    blobDigests: () => [...blobs.keys()].sort(),
  };
}

/** The records of a forget event, checked. */
export function checkForgetEvent(event: ForgetEventV3): ContextBlobRecordRef[] {
  const records = (event as ForgetEventV3 | null)?.records;
  if (!Array.isArray(records) || !records.every(isRecordRef)) {
    throw new InvalidOptionsError('redactForgotten: the event must be { records: [{ recordId, revision }] }.');
  }
  return records.map((r) => ({ recordId: r.recordId, revision: r.revision }));
}

function stillHeld(current: Lease | null, lease: Lease, now: number): boolean {
  return current !== null && current.owner === lease.owner && current.token === lease.token && now < current.expiresAt;
}

/** Newest `updatedAt` first, then runId descending: the order every run store lists in. */
function compare(a: { updatedAt: number; runId: string }, b: { updatedAt: number; runId: string }): number {
  if (a.updatedAt !== b.updatedAt) return b.updatedAt - a.updatedAt;
  return a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0;
}

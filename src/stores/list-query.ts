/**
 * What every run store's `list` shares: page sizes, the statuses a query may
 * name, the opaque cursor, and (for the SQL stores) the summary row.
 * Every store lists in one order, newest `updatedAt` first, then runId
 * descending, so a cursor is one `(updatedAt, runId) <` comparison.
 */
import type { AgentRunEnvelope, AgentRunListPage, AgentRunListQuery, AgentRunStatus, AgentRunSummary } from '../agent/types.js';
import { InvalidOptionsError } from '../errors/index.js';

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 1000;
/** Every status. A Record, so a new status cannot be left out. */
const KNOWN_STATUSES: Record<AgentRunStatus, true> = {
  running: true, suspended: true, drained: true, completed: true, stopped: true, failed: true,
};
/** The prefix SQLite cursors carried before the stores shared this module; still read, no longer written. */
const LEGACY_PREFIX = 'c1.';

/** A run's place in the list order: what a cursor holds. */
export interface ListPosition {
  updatedAt: number;
  runId: string;
}

export function isAgentRunStatus(value: unknown): value is AgentRunStatus {
  return typeof value === 'string' && Object.hasOwn(KNOWN_STATUSES, value);
}

/** The statuses a query asks for (null: any). An unknown one is a caller's typo, refused rather than matching nothing. */
export function listStatuses(status: AgentRunListQuery['status']): AgentRunStatus[] | null {
  if (status === undefined) return null;
  const statuses = Array.isArray(status) ? status : [status];
  for (const s of statuses) {
    if (!isAgentRunStatus(s)) throw new InvalidOptionsError(`list: unknown status ${JSON.stringify(s)}.`);
  }
  return statuses;
}

/** The page size: 50 when not given, at most 1000; anything but a positive integer is refused. */
export function listLimit(limit: unknown): number {
  if (limit === undefined) return DEFAULT_LIMIT;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1) {
    throw new InvalidOptionsError(`list: limit must be a positive integer, got ${String(limit)}.`);
  }
  return Math.min(limit, MAX_LIMIT);
}

// The cursor is the last run's place in the order, not an offset: runs saved
// between two pages neither repeat nor push others out of the next page.
export function encodeCursor(position: ListPosition): string {
  return Buffer.from(JSON.stringify([position.updatedAt, position.runId]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: unknown): ListPosition {
  if (typeof cursor === 'string') {
    const body = cursor.startsWith(LEGACY_PREFIX) ? cursor.slice(LEGACY_PREFIX.length) : cursor;
    try {
      const value: unknown = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
      if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'number' && Number.isFinite(value[0])
        && typeof value[1] === 'string') {
        return { updatedAt: value[0], runId: value[1] };
      }
    } catch {
      // Falls through to the refusal below.
    }
  }
  throw new InvalidOptionsError('list: cursor is not one this store issued (pass a nextCursor back unchanged).');
}

/** The columns a SQL store's list selects. */
export interface SummaryRow {
  run_id: string;
  scope: string;
  status: AgentRunStatus;
  revision: number;
  binding_id: string | null;
  created_at: number;
  updated_at: number;
  pending_approvals: number;
  pending_client_calls: number;
}

export function toSummary(row: SummaryRow): AgentRunSummary {
  return {
    runId: row.run_id,
    scope: row.scope,
    status: row.status,
    revision: row.revision,
    bindingId: row.binding_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    pendingApprovals: row.pending_approvals,
    pendingClientCalls: row.pending_client_calls,
  };
}

/**
 * The page a list returns from up to `limit + 1` summaries in list order: the first `limit`, and a cursor after the
 * last of them when there was one more (so a next page exists).
 */
export function listPage(found: readonly AgentRunSummary[], limit: number): AgentRunListPage {
  const runs = found.slice(0, limit);
  const last = runs[runs.length - 1];
  return found.length > limit && last ? { runs, nextCursor: encodeCursor(last) } : { runs };
}

/** A time bound of a list or prune query, in ms: anything but a finite number is refused. */
export function finiteTime(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidOptionsError(`${name} must be a finite number (ms), got ${JSON.stringify(value)}.`);
  }
  return value;
}

/**
 * What a store that keeps the envelope's fields in columns or hash fields (PostgreSQL, Redis) checks before a save
 * reads or writes anything: the fields it stores beside the record. Refused with `invalid_envelope`.
 */
export function checkSaveEnvelope(envelope: AgentRunEnvelope): void {
  const e = envelope as Partial<AgentRunEnvelope> | null;
  const problem =
    !e || typeof e !== 'object' ? 'is not an object'
      : e.kind !== 'cairn-agent-run' ? 'is not a cairn-agent-run envelope'
        : typeof e.runId !== 'string' || e.runId === '' ? 'has no runId'
          : typeof e.scope !== 'string' ? 'has no scope'
            // A revision below 1 gets past here and is refused as a revision conflict.
            : !Number.isSafeInteger(e.revision) ? 'has no integer revision'
              : !isAgentRunStatus(e.status) ? 'has an unknown status'
                : !Number.isFinite(e.createdAt) || !Number.isFinite(e.updatedAt) ? 'has no createdAt/updatedAt'
                  : !Array.isArray(e.pendingApprovals) || !Array.isArray(e.pendingClientCalls) ? 'has no pending lists'
                    : null;
  if (problem) throw new InvalidOptionsError(`save: the envelope ${problem}.`, 'invalid_envelope');
}

/** The fields of a run's envelope its list summary is made of (an engine envelope and a V3 one both have them). */
type SummarySource = Pick<AgentRunEnvelope, 'runId' | 'scope' | 'status' | 'revision' | 'bindingId' | 'createdAt' | 'updatedAt'>
  & { pendingApprovals?: unknown; pendingClientCalls?: unknown };

/**
 * The summary a list shows of a run, from its envelope (as a store files it when it saves). A store that keeps the
 * run's times itself passes them instead of the envelope's.
 */
export function summaryOf(envelope: SummarySource, createdAt = envelope.createdAt, updatedAt = envelope.updatedAt): AgentRunSummary {
  return {
    runId: envelope.runId,
    scope: envelope.scope,
    status: envelope.status,
    revision: envelope.revision,
    bindingId: envelope.bindingId ?? null,
    createdAt,
    updatedAt,
    pendingApprovals: Array.isArray(envelope.pendingApprovals) ? envelope.pendingApprovals.length : 0,
    pendingClientCalls: Array.isArray(envelope.pendingClientCalls) ? envelope.pendingClientCalls.length : 0,
  };
}

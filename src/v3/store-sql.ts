/**
 * What the SQLite and the PostgreSQL V3 run stores do alike once their SQL
 * has run: turn the rows a load read into the record, remember what a
 * committed save wrote (and forget it after a failed one), and cut a list
 * page. The SQL itself, which differs by dialect, stays in each store.
 */
import { InvalidOptionsError, StoredRecordError } from '../errors/index.js';
import { readRecord, type SaveMemory, type StoredRows, type StoredState } from '../stores/write-plan.js';
import { encodeCursor, toSummary, type SummaryRow } from '../stores/list-query.js';
import type { AgentRunListPage, AgentRunListQuery, AgentRunLoadOptions } from '../stores/types.js';
import type { AgentRunEnvelopeV3 } from './envelope.js';
import { checkLoadedV3 } from './store-checks.js';
import { decorateLoaded, type RefMemory } from './store-load.js';
import { joinSteps, type StepMemory } from './store-steps.js';

/** The three caches a V3 store keeps of its own last saves, so the next save writes only what changed. */
export interface V3StoreMemory {
  memory: SaveMemory;
  refMemory: RefMemory;
  stepMemory: StepMemory;
}

/** What a load read of one run, in one consistent view. */
export interface LoadedV3Rows extends StoredRows {
  /** The run row's own columns. */
  scope: string;
  revision: number;
  createdAt: number;
  updatedAt: number;
  contextSteps: number | null;
  /** The context step rows, in index order. */
  steps: readonly string[];
  /** Digests of the packages the record points to whose content was redacted. */
  redacted: readonly string[];
}

/** The record the rows hold, checked against its run row, with the fields a load fills in. */
export function assembleLoadedV3(runId: string, rows: LoadedV3Rows, loadOptions: AgentRunLoadOptions, memory: SaveMemory): AgentRunEnvelopeV3 {
  const { envelope, stored } = readRecord(runId, rows, 'bytes', loadOptions.saves === true);
  const record = checkLoadedV3(envelope, runId, loadOptions.scope);
  joinSteps(record, runId, rows.contextSteps, rows.steps);
  if (record.scope !== rows.scope || record.revision !== rows.revision) {
    throw new StoredRecordError('record_corrupt', runId, `Stored record under run ${runId} belongs to another run.`);
  }
  memory.loaded(runId, stored);
  return decorateLoaded(record, rows.createdAt, rows.updatedAt, new Set(rows.redacted));
}

/** Called once a save has ended: `saved` when it committed, undefined when it threw. */
export function rememberSaveV3(
  memories: V3StoreMemory,
  envelope: AgentRunEnvelopeV3,
  digests: readonly string[],
  saved: { next: StoredState; steps: unknown[] | null; jsons: string[] } | undefined,
): void {
  const { runId, revision, status } = envelope;
  memories.memory.keep(runId, status, saved?.next);
  if (saved) {
    memories.refMemory.keep(runId, revision, digests, status);
    memories.stepMemory.keep(runId, revision, saved.steps, saved.jsons, status);
  } else {
    memories.refMemory.forget(runId);
    memories.stepMemory.forget(runId);
  }
}

/** The query's updatedBefore / updatedAfter bounds, checked, with the comparison each one asks for. */
export function updatedBounds(query: AgentRunListQuery): { op: '<' | '>='; value: number }[] {
  const bounds: { op: '<' | '>='; value: number }[] = [];
  for (const [field, op] of [['updatedBefore', '<'], ['updatedAfter', '>=']] as const) {
    const value = query[field];
    if (value === undefined) continue;
    if (typeof value !== 'number' || Number.isNaN(value)) throw new InvalidOptionsError(`list: ${field} must be a time in milliseconds.`);
    bounds.push({ op, value });
  }
  return bounds;
}

/** A page of at most `limit` runs from `limit + 1` rows read, with a cursor when there are more. */
export function listPageOf(rows: readonly SummaryRow[], limit: number): AgentRunListPage {
  const runs = rows.slice(0, limit).map(toSummary);
  const last = runs[runs.length - 1];
  return rows.length > limit && last ? { runs, nextCursor: encodeCursor(last) } : { runs };
}

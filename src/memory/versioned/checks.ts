/**
 * What every versioned memory store shares: the input checks (a refused call
 * writes nothing), the commit plan (which errors a commit raises and which
 * revisions it writes, decided before any write, so the three stores refuse
 * and write alike), copies, and the search ranking.
 */
import { CairnError, PersistenceError } from '../../errors/index.js';
import { MemoryError } from '../errors.js';
import { checkMemoryScope, memoryScopeFromKey, memoryScopeKey } from '../scope.js';
import type {
  MemoryScope, VersionedMemoryCommitInput, VersionedMemoryMutation, VersionedMemoryReceipt, VersionedMemoryRecord,
  VersionedMemorySearchHit, VersionedMemorySource,
} from './types.js';

/** The longest id or operation id a store takes (they are keys, not texts). */
export const MAX_ID_LENGTH = 512;
/** The most records one call may list or search for. */
export const MAX_LIMIT = 1000;
const DIGEST = /^sha256:[0-9a-f]{64}$/;

const invalid = (where: string, message: string) => new MemoryError('memory_record_invalid', `${where}: ${message}`);

function plainObject(value: unknown, where: string, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(where, `${what} must be an object.`);
  return value as Record<string, unknown>;
}

function checkId(value: unknown, where: string, what: string): string {
  if (typeof value !== 'string' || value === '' || value.length > MAX_ID_LENGTH) {
    throw invalid(where, `${what} must be a non-empty string of at most ${MAX_ID_LENGTH} characters.`);
  }
  return value;
}

function checkText(value: unknown, where: string, what: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw invalid(where, `${what} must be a non-empty string.`);
  return value;
}

function checkTime(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw invalid(where, 'at must be a finite number of ms, 0 or more.');
  return value;
}

function checkLimit(value: unknown, where: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_LIMIT) {
    throw invalid(where, `limit must be an integer from 1 to ${MAX_LIMIT}.`);
  }
  return value;
}

function checkFlag(value: unknown, where: string, what: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw invalid(where, `${what} must be a boolean.`);
  return value;
}

function checkSources(value: unknown, where: string): VersionedMemorySource[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw invalid(where, 'sources must be an array of { messageId }.');
  return value.map((source, i) => ({ messageId: checkId(plainObject(source, where, `sources[${i}]`).messageId, where, `sources[${i}].messageId`) }));
}

/** A checked scope and the key a store files it under. */
export interface ScopeOf {
  scope: MemoryScope;
  key: string;
}

/** Checks a call's input object and its scope (`memory_scope_invalid`, compared exactly: a versioned store does not narrow). */
export function checkScopeOf(input: unknown, where: string): ScopeOf & { input: Record<string, unknown> } {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw invalid(where, 'input must be an object.');
  const fields = input as Record<string, unknown>;
  const scope = checkMemoryScope(fields.scope, where);
  return { scope, key: memoryScopeKey(scope), input: fields };
}

export interface CheckedCommit extends ScopeOf {
  operationId: string;
  requestDigest: string;
  mutations: VersionedMemoryMutation[];
  at: number;
}

function checkMutation(value: unknown, index: number, where: string): VersionedMemoryMutation {
  const m = plainObject(value, where, `mutations[${index}]`);
  const id = checkId(m.id, where, `mutations[${index}].id`);
  switch (m.op) {
    case 'add': {
      if (m.origin !== 'explicit' && m.origin !== 'inferred') throw invalid(where, `mutations[${index}].origin must be 'explicit' or 'inferred'.`);
      const sources = checkSources(m.sources, where);
      return { op: 'add', id, text: checkText(m.text, where, `mutations[${index}].text`), origin: m.origin, ...(sources ? { sources } : {}) };
    }
    case 'revise': {
      const sources = checkSources(m.sources, where);
      return { op: 'revise', id, text: checkText(m.text, where, `mutations[${index}].text`), ...(sources ? { sources } : {}) };
    }
    case 'retract':
      return { op: 'retract', id };
    default:
      throw invalid(where, `mutations[${index}].op must be 'add', 'revise' or 'retract', got ${JSON.stringify(String(m.op))}.`);
  }
}

/** Checks a commit and returns clean copies of its fields. A commit changes each record at most once. */
export function checkCommit(input: VersionedMemoryCommitInput, where = 'commit'): CheckedCommit {
  const { scope, key, input: fields } = checkScopeOf(input, where);
  const operationId = checkId(fields.operationId, where, 'operationId');
  if (typeof fields.requestDigest !== 'string' || !DIGEST.test(fields.requestDigest)) {
    throw invalid(where, 'requestDigest must be sha256:<64 lowercase hex>.');
  }
  if (!Array.isArray(fields.mutations)) throw invalid(where, 'mutations must be an array.');
  const mutations = fields.mutations.map((m, i) => checkMutation(m, i, where));
  const seen = new Set<string>();
  for (const m of mutations) {
    if (seen.has(m.id)) throw invalid(where, `record ${JSON.stringify(m.id)} is changed twice in one commit; a commit changes each record at most once.`);
    seen.add(m.id);
  }
  return { scope, key, operationId, requestDigest: fields.requestDigest, mutations, at: checkTime(fields.at, where) };
}

export function checkIdRead(input: { scope: MemoryScope; id: string }, where: string): ScopeOf & { id: string } {
  const { scope, key, input: fields } = checkScopeOf(input, where);
  return { scope, key, id: checkId(fields.id, where, 'id') };
}

export function checkReceiptRead(input: { scope: MemoryScope; operationId: string }, where = 'receipt'): ScopeOf & { operationId: string } {
  const { scope, key, input: fields } = checkScopeOf(input, where);
  return { scope, key, operationId: checkId(fields.operationId, where, 'operationId') };
}

export interface CheckedList extends ScopeOf {
  includeRetracted: boolean;
  includeForgotten: boolean;
  limit: number | undefined;
}

export function checkList(input: { scope: MemoryScope; includeRetracted?: boolean; includeForgotten?: boolean; limit?: number }, where = 'list'): CheckedList {
  const { scope, key, input: fields } = checkScopeOf(input, where);
  return {
    scope, key,
    includeRetracted: checkFlag(fields.includeRetracted, where, 'includeRetracted'),
    includeForgotten: checkFlag(fields.includeForgotten, where, 'includeForgotten'),
    limit: fields.limit === undefined ? undefined : checkLimit(fields.limit, where, MAX_LIMIT),
  };
}

export function checkSearch(input: { scope: MemoryScope; text: string; limit?: number }, where = 'search'): ScopeOf & { text: string; limit: number } {
  const { scope, key, input: fields } = checkScopeOf(input, where);
  if (typeof fields.text !== 'string') throw invalid(where, 'text must be a string.');
  return { scope, key, text: fields.text, limit: checkLimit(fields.limit, where, 10) };
}

export interface CheckedForget extends ScopeOf {
  id: string;
  revision: number | undefined;
  at: number;
}

export function checkForget(input: { scope: MemoryScope; id: string; revision?: number; at: number }, where = 'forget'): CheckedForget {
  const { scope, key, input: fields } = checkScopeOf(input, where);
  const id = checkId(fields.id, where, 'id');
  const revision = fields.revision;
  if (revision !== undefined && (typeof revision !== 'number' || !Number.isInteger(revision) || revision < 1)) {
    throw invalid(where, 'revision must be an integer of 1 or more.');
  }
  return { scope, key, id, revision: revision as number | undefined, at: checkTime(fields.at, where) };
}

/** A fresh copy of a record revision (its scope and sources too). */
export function copyRecord(record: VersionedMemoryRecord): VersionedMemoryRecord {
  return { ...record, scope: { ...record.scope }, sources: record.sources.map((s) => ({ messageId: s.messageId })) };
}

export function copyReceipt(receipt: VersionedMemoryReceipt): VersionedMemoryReceipt {
  return { ...receipt, scope: { ...receipt.scope }, records: receipt.records.map((r) => ({ ...r })) };
}

/** The stored receipt answered to a commit of its operation id: replayed, or `memory_receipt_mismatch`. */
export function replayOf(stored: VersionedMemoryReceipt, commit: CheckedCommit): { receipt: VersionedMemoryReceipt; replayed: true } {
  if (stored.requestDigest !== commit.requestDigest) {
    throw new MemoryError('memory_receipt_mismatch',
      `commit: operation ${JSON.stringify(commit.operationId)} committed for request ${stored.requestDigest}, not ${commit.requestDigest}; nothing was applied.`);
  }
  return { receipt: copyReceipt(stored), replayed: true };
}

/** What a commit writes: one new revision per mutation (all at the scope's next revision) and its receipt. */
export interface CommitPlan {
  scopeRevision: number;
  writes: { record: VersionedMemoryRecord; op: VersionedMemoryMutation['op'] }[];
  receipt: VersionedMemoryReceipt;
}

/**
 * Decides a commit against the latest revisions of the records it names
 * (`latest.get(id)`, undefined when the scope does not hold the id). Throws
 * the commit's error before anything is written.
 */
export function planCommit(commit: CheckedCommit, scopeRevision: number, latest: ReadonlyMap<string, VersionedMemoryRecord>): CommitPlan {
  const revision = scopeRevision + 1;
  const writes: CommitPlan['writes'] = [];
  for (const m of commit.mutations) {
    const held = latest.get(m.id);
    if (m.op === 'add') {
      if (held) throw new MemoryError('memory_record_exists', `commit: the scope holds record ${JSON.stringify(m.id)} already; nothing was applied.`);
      writes.push({
        op: 'add',
        record: {
          id: m.id, scope: { ...commit.scope }, text: m.text, revision, origin: m.origin,
          sources: (m.sources ?? []).map((s) => ({ ...s })), status: 'active', operationId: commit.operationId,
          createdAt: commit.at, updatedAt: commit.at,
        },
      });
      continue;
    }
    if (!held) throw new MemoryError('memory_record_not_found', `commit: the scope holds no record ${JSON.stringify(m.id)}; nothing was applied.`);
    if (held.status === 'forgotten') throw new MemoryError('memory_record_forgotten', `commit: record ${JSON.stringify(m.id)} was forgotten; nothing was applied.`);
    if (held.status === 'retracted') throw new MemoryError('memory_record_retracted', `commit: record ${JSON.stringify(m.id)} is retracted and cannot be changed; nothing was applied.`);
    const base = copyRecord(held);
    const next: VersionedMemoryRecord = m.op === 'revise'
      ? { ...base, text: m.text, sources: m.sources ? m.sources.map((s) => ({ ...s })) : base.sources, status: 'active' }
      : { ...base, status: 'retracted' };
    writes.push({ op: m.op, record: { ...next, revision, operationId: commit.operationId, updatedAt: commit.at } });
  }
  return {
    scopeRevision: revision,
    writes,
    receipt: {
      operationId: commit.operationId, scope: { ...commit.scope }, requestDigest: commit.requestDigest, planned: commit.mutations.length,
      scopeRevision: revision, committedAt: commit.at, records: writes.map((w) => ({ id: w.record.id, revision, op: w.op })),
    },
  };
}

/** The revisions a forget takes: every revision of the record, or the one named (`memory_revision_unknown` when it has none such). */
export function forgetRevisions(forget: CheckedForget, revisions: readonly number[]): number[] {
  if (revisions.length === 0) throw new MemoryError('memory_record_not_found', `forget: the scope holds no record ${JSON.stringify(forget.id)}.`);
  if (forget.revision === undefined) return [...revisions].sort((a, b) => a - b);
  if (!revisions.includes(forget.revision)) {
    throw new MemoryError('memory_revision_unknown', `forget: record ${JSON.stringify(forget.id)} has no revision ${forget.revision}.`);
  }
  return [forget.revision];
}

function words(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
}

/**
 * Ranks a scope's active records (in record order, oldest first) for a text:
 * the share of the query's words the text holds, best first; ties go to the
 * newest revision, then to the older record.
 */
export function rankVersioned(records: readonly VersionedMemoryRecord[], text: string, limit: number): VersionedMemorySearchHit[] {
  const asked = words(text);
  if (asked.size === 0) return [];
  const hits: { hit: VersionedMemorySearchHit; order: number }[] = [];
  records.forEach((record, order) => {
    if (record.status !== 'active' || record.text === null) return;
    const held = words(record.text);
    let found = 0;
    for (const word of asked) if (held.has(word)) found++;
    if (found > 0) hits.push({ hit: { record, score: found / asked.size }, order });
  });
  hits.sort((a, b) => b.hit.score - a.hit.score || b.hit.record.revision - a.hit.record.revision || a.order - b.order);
  return hits.slice(0, limit).map((h) => ({ record: copyRecord(h.hit.record), score: h.hit.score }));
}

/** A failure of the database under a store, as a typed error (a Cairn error is kept as it is). */
export function storeFailure(what: string, error: unknown): CairnError {
  if (CairnError.isInstance(error)) return error;
  return new PersistenceError(`${what} failed: ${error instanceof Error ? error.message : String(error)}`, error);
}

/**
 * The versioned memory tables were set up by a newer Cairn (their version
 * table, `cairn_memory_versioned_schema`, holds a version this code does not
 * know): refused, nothing changed. Named like the ops stores' error, so
 * `StoreSchemaVersionError.isInstance` of either recognizes it.
 */
export class VersionedMemorySchemaError extends CairnError {
  readonly table = 'cairn_memory_versioned_schema';
  constructor(readonly backend: 'sqlite' | 'postgres', readonly found: number, readonly supported: number) {
    super('record_version_unsupported',
      `The versioned memory tables have schema version ${found} (cairn_memory_versioned_schema); this Cairn knows versions up to ${supported}. Upgrade Cairn to open them; nothing was changed.`,
      { fault: 'user' });
    this.name = 'StoreSchemaVersionError';
  }
}

/** A revision row as the SQL stores keep it (scope by its key, sources as JSON text). */
export interface RevisionRow {
  scope_key: string;
  record_id: string;
  revision: number;
  text: string | null;
  origin: string;
  sources: string;
  status: string;
  operation_id: string;
  created_at: number;
  updated_at: number;
}

/** A stored revision row as the record the contract answers. */
export function recordOfRow(row: RevisionRow): VersionedMemoryRecord {
  return {
    id: row.record_id, scope: memoryScopeFromKey(row.scope_key), text: row.text, revision: row.revision,
    origin: row.origin as VersionedMemoryRecord['origin'], sources: JSON.parse(row.sources) as VersionedMemoryRecord['sources'],
    status: row.status as VersionedMemoryRecord['status'], operationId: row.operation_id, createdAt: row.created_at, updatedAt: row.updated_at,
  };
}

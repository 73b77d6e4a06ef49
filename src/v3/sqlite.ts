/**
 * `createSqliteAgentRunStoreV3`: V3 runs in the file of a SQLite ops store,
 * in tables of their own (see sqlite-schema.ts), on the ops store's
 * connection, so a save checks the ops store's lease in its own transaction.
 * A run is one row holding its framed record; each package is one row, stored
 * once by digest.
 */
import type Database from 'better-sqlite3';
import {
  AgentRunLeaseError, InvalidOptionsError, RevisionConflictError, RunIdentityError, StoredRecordError,
} from '../errors/index.js';
import { decodePart, encodePart } from '../stores/codec.js';
import { decodeCursor, encodeCursor, listLimit, listStatuses, toSummary, type SummaryRow } from '../stores/list-query.js';
import { connectionOf, type SqliteOpsStore } from '../stores/sqlite/index.js';
import { checkForgetEvent } from './in-memory.js';
import { checkBlob, checkDigest, type CheckedBlob } from './store-blob.js';
import { checkLoadedV3, checkSaveV3, checkTerminalBefore } from './store-checks.js';
import { ContextBlobError } from './store-errors.js';
import { decorateLoaded, stripStoreFields } from './store-load.js';
import type { Lease } from '../stores/types.js';
import type { AgentRunStoreV3 } from './store-types.js';
import { migrateV3, V3_SCHEMA_VERSION, v3SchemaVersion } from './sqlite-schema.js';
import { V3SchemaVersionError } from './store-errors.js';

export interface SqliteAgentRunStoreV3Options {
  /** The store's clock: the times of saves (list, prune) and of lease expiry. Pass the ops store's clock. @default Date.now */
  clock?: { now(): number };
}

export interface SqliteAgentRunStoreV3 extends AgentRunStoreV3 {
  /** How many rows each V3 table holds now (for tests and operators: a package stored once is one row). */
  rowCounts(): { runs: number; blobs: number; blobRecords: number; blobRefs: number; forgotten: number };
}

interface RunRow {
  scope: string;
  revision: number;
  created_at: number;
}

/**
 * The V3 store in the file of `ops` (a store of createSqliteOpsStore). Its
 * tables are created or migrated here, idempotently; an ops store opened
 * read-only gets a store that reads what is there and refuses writes.
 *
 * @example
 * ```ts
 * const ops = createSqliteOpsStore({ path: './runs.sqlite' });
 * const runs = createSqliteAgentRunStoreV3(ops);
 * await runAgent({ checkpointVersion: 3, model, prompt, session: { store: runs, runId: 'r-1', scope: 'acme' } });
 * ```
 */
export function createSqliteAgentRunStoreV3(ops: SqliteOpsStore, options: SqliteAgentRunStoreV3Options = {}): SqliteAgentRunStoreV3 {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('createSqliteAgentRunStoreV3: options must be an object.');
  if (options.clock !== undefined && typeof options.clock?.now !== 'function') {
    throw new InvalidOptionsError('createSqliteAgentRunStoreV3: clock must have a now() method.');
  }
  const db = connectionOf(ops);
  const clock = options.clock ?? { now: () => Date.now() };
  if (!db.readonly) migrateV3(db);
  else if (v3SchemaVersion(db) === 0) return emptyReadOnly(clock);
  else migrateV3Check(db);
  const hasLeases = Boolean(db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cairn_leases'").get());

  const s = {
    run: db.prepare<[string], RunRow>('SELECT scope, revision, created_at FROM cairn_runs_v3 WHERE run_id = ?'),
    load: db.prepare<[string], RunRow & { record: unknown; updated_at: number }>(
      'SELECT scope, revision, created_at, updated_at, record FROM cairn_runs_v3 WHERE run_id = ?'),
    redactedOf: db.prepare<[string], string>(`SELECT r.digest FROM cairn_runs_v3_blob_refs r
  JOIN cairn_runs_v3_blobs b ON b.digest = r.digest WHERE r.run_id = ? AND b.content IS NULL ORDER BY r.digest`).pluck(),
    upsert: db.prepare(`INSERT INTO cairn_runs_v3 (run_id, scope, status, revision, binding_id, created_at, updated_at,
    pending_approvals, pending_client_calls, record)
  VALUES (@runId, @scope, @status, @revision, @bindingId, @createdAt, @updatedAt, @pendingApprovals, @pendingClientCalls, @record)
  ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, revision = excluded.revision, binding_id = excluded.binding_id,
    updated_at = excluded.updated_at, pending_approvals = excluded.pending_approvals,
    pending_client_calls = excluded.pending_client_calls, record = excluded.record`),
    lease: hasLeases
      ? db.prepare<[string, string, number, number], { ok: number }>(
        'SELECT 1 AS ok FROM cairn_leases WHERE lease_key = ? AND owner = ? AND token = ? AND expires_at > ?')
      : null,
    blobExists: db.prepare<[string], number>('SELECT 1 FROM cairn_runs_v3_blobs WHERE digest = ?').pluck(),
    blob: db.prepare<[string], { content: string | null }>('SELECT content FROM cairn_runs_v3_blobs WHERE digest = ?'),
    insertBlob: db.prepare<[string, string | null, number, number, number | null]>(
      'INSERT OR IGNORE INTO cairn_runs_v3_blobs (digest, content, bytes, created_at, redacted_at) VALUES (?, ?, ?, ?, ?)'),
    insertBlobRecord: db.prepare<[string, string, number]>(
      'INSERT OR IGNORE INTO cairn_runs_v3_blob_records (digest, record_id, revision) VALUES (?, ?, ?)'),
    isForgotten: db.prepare<[string, number], number>('SELECT 1 FROM cairn_runs_v3_forgotten WHERE record_id = ? AND revision = ?').pluck(),
    refCount: db.prepare<[string], number>('SELECT COUNT(*) FROM cairn_runs_v3_blob_refs WHERE run_id = ?').pluck(),
    deleteRefs: db.prepare<[string]>('DELETE FROM cairn_runs_v3_blob_refs WHERE run_id = ?'),
    insertRef: db.prepare<[string, string]>('INSERT OR IGNORE INTO cairn_runs_v3_blob_refs (run_id, digest) VALUES (?, ?)'),
    pruneRuns: db.prepare<[number]>(`DELETE FROM cairn_runs_v3 WHERE status IN ('completed', 'failed', 'stopped') AND updated_at < ?`),
    pruneBlobs: db.prepare(`DELETE FROM cairn_runs_v3_blobs
  WHERE NOT EXISTS (SELECT 1 FROM cairn_runs_v3_blob_refs r WHERE r.digest = cairn_runs_v3_blobs.digest)`),
    forget: db.prepare<[string, number, number]>(
      'INSERT OR IGNORE INTO cairn_runs_v3_forgotten (record_id, revision, forgotten_at) VALUES (?, ?, ?)'),
    redact: db.prepare<[number, string, number]>(`UPDATE cairn_runs_v3_blobs SET content = NULL, redacted_at = ?
  WHERE content IS NOT NULL AND digest IN (SELECT digest FROM cairn_runs_v3_blob_records WHERE record_id = ? AND revision = ?)`),
    count: (table: string) => db.prepare<[], number>(`SELECT COUNT(*) FROM ${table}`).pluck(),
  };

  /** Stores a checked package unless its digest is there; a package holding a forgotten record arrives redacted. */
  const putChecked = (blob: CheckedBlob, now: number): boolean => {
    const forgotten = blob.records.some((r) => s.isForgotten.get(r.recordId, r.revision) !== undefined);
    const inserted = s.insertBlob.run(blob.digest, forgotten ? null : blob.json, Buffer.byteLength(blob.json), now, forgotten ? now : null).changes > 0;
    if (inserted) for (const r of blob.records) s.insertBlobRecord.run(blob.digest, r.recordId, r.revision);
    return inserted;
  };

  const saveTx = db.transaction((envelope: Parameters<AgentRunStoreV3['save']>[0], digests: string[], incoming: CheckedBlob[],
    record: Buffer, lease: Lease | undefined) => {
    const { runId } = envelope;
    const row = s.run.get(runId);
    if (row && row.scope !== envelope.scope) throw new RunIdentityError('scope_mismatch', runId);
    if (envelope.revision !== (row?.revision ?? 0) + 1) throw new RevisionConflictError(runId, envelope.revision - 1, row ? row.revision : null);
    const now = clock.now();
    if (lease && s.lease && !s.lease.get(lease.key, lease.owner, lease.token, now)) throw new AgentRunLeaseError('lease_lost', lease.key);
    const coming = new Set(incoming.map((b) => b.digest));
    const missing = digests.find((d) => !coming.has(d) && s.blobExists.get(d) === undefined);
    if (missing !== undefined) {
      throw new ContextBlobError('blob_missing', missing, `save: run ${runId}: its context points to package ${missing}, which is neither stored nor in this save.`);
    }
    for (const blob of incoming) putChecked(blob, now);
    s.upsert.run({
      runId, scope: envelope.scope, status: envelope.status, revision: envelope.revision, bindingId: envelope.bindingId ?? null,
      createdAt: row?.created_at ?? now, updatedAt: now,
      pendingApprovals: envelope.pendingApprovals?.length ?? 0, pendingClientCalls: envelope.pendingClientCalls?.length ?? 0,
      record,
    });
    // A record's context only grows, so its refs are only added to; a record that points to fewer is written again.
    if (row && (s.refCount.get(runId) ?? 0) > digests.length) s.deleteRefs.run(runId);
    for (const digest of digests) s.insertRef.run(runId, digest);
  });

  const loadTx = db.transaction((runId: string) => {
    const row = s.load.get(runId);
    return row && { row, redacted: s.redactedOf.all(runId) };
  });

  const pruneTx = db.transaction((before: number) => {
    const pruned = s.pruneRuns.run(before).changes;
    s.pruneBlobs.run();
    return pruned;
  });

  const forgetTx = db.transaction((records: { recordId: string; revision: number }[]) => {
    const now = clock.now();
    let redacted = 0;
    for (const r of records) {
      s.forget.run(r.recordId, r.revision, now);
      redacted += s.redact.run(now, r.recordId, r.revision).changes;
    }
    return redacted;
  });

  return {
    checkpointVersion: 3,

    async load(runId, loadOptions = {}) {
      if (typeof runId !== 'string' || runId === '') throw new InvalidOptionsError('load needs a run id.');
      const read = loadTx.deferred(runId);
      if (!read) return undefined;
      if (loadOptions.scope !== undefined && read.row.scope !== loadOptions.scope) throw new RunIdentityError('scope_mismatch', runId);
      const record = checkLoadedV3(decodePart(runId, bytesOf(read.row.record)), runId, loadOptions.scope);
      if (record.scope !== read.row.scope || record.revision !== read.row.revision) {
        throw new StoredRecordError('record_corrupt', runId, `Stored record under run ${runId} belongs to another run.`);
      }
      return decorateLoaded(record, read.row.created_at, read.row.updated_at, new Set(read.redacted));
    },

    async save(envelope, saveOptions = {}) {
      const digests = checkSaveV3(envelope);
      const incoming = (saveOptions.blobs ?? []).map((b) => checkBlob(b, 'save'));
      const record = encodePart(stripStoreFields(envelope));
      // IMMEDIATE: the write lock is taken before the revision is read.
      saveTx.immediate(envelope, digests, incoming, record, saveOptions.lease);
    },

    async list(query = {}) {
      const limit = listLimit(query.limit);
      const statuses = listStatuses(query.status);
      if (statuses !== null && statuses.length === 0) return { runs: [] };
      const where: string[] = ['1 = 1'];
      const params: unknown[] = [];
      if (statuses !== null) {
        where.push(`status IN (${statuses.map(() => '?').join(', ')})`);
        params.push(...statuses);
      }
      if (query.scope !== undefined) {
        where.push('scope = ?');
        params.push(query.scope);
      }
      for (const [field, op] of [['updatedBefore', '<'], ['updatedAfter', '>=']] as const) {
        const value = query[field];
        if (value === undefined) continue;
        if (typeof value !== 'number' || Number.isNaN(value)) throw new InvalidOptionsError(`list: ${field} must be a time in milliseconds.`);
        where.push(`updated_at ${op} ?`);
        params.push(value);
      }
      if (query.cursor !== undefined) {
        const after = decodeCursor(query.cursor);
        where.push('(updated_at < ? OR (updated_at = ? AND run_id < ?))');
        params.push(after.updatedAt, after.updatedAt, after.runId);
      }
      const rows = db.prepare<unknown[], SummaryRow>(`SELECT run_id, scope, status, revision, binding_id, created_at, updated_at,
  pending_approvals, pending_client_calls FROM cairn_runs_v3 WHERE ${where.join(' AND ')}
  ORDER BY updated_at DESC, run_id DESC LIMIT ?`).all(...params, limit + 1);
      const runs = rows.slice(0, limit).map(toSummary);
      const last = runs[runs.length - 1];
      return rows.length > limit && last ? { runs, nextCursor: encodeCursor(last) } : { runs };
    },

    async putBlob(blob) {
      const checked = checkBlob(blob);
      return { digest: checked.digest, stored: db.transaction(() => putChecked(checked, clock.now())).immediate() };
    },

    async getBlob(digest) {
      const row = s.blob.get(checkDigest(digest, 'getBlob'));
      if (row === undefined) return { status: 'missing' };
      if (row.content === null) return { status: 'redacted' };
      return { status: 'found', content: JSON.parse(row.content) };
    },

    async prune(pruneOptions) {
      return pruneTx.immediate(checkTerminalBefore(pruneOptions));
    },

    async redactForgotten(event) {
      return forgetTx.immediate(checkForgetEvent(event));
    },

    async now() {
      return clock.now();
    },

    rowCounts() {
      return {
        runs: s.count('cairn_runs_v3').get()!, blobs: s.count('cairn_runs_v3_blobs').get()!,
        blobRecords: s.count('cairn_runs_v3_blob_records').get()!, blobRefs: s.count('cairn_runs_v3_blob_refs').get()!,
        forgotten: s.count('cairn_runs_v3_forgotten').get()!,
      };
    },
  };
}

/** A read-only file whose V3 tables are newer than this code: refused (an older version is read as it is). */
function migrateV3Check(db: Database.Database): void {
  const version = v3SchemaVersion(db);
  if (version > V3_SCHEMA_VERSION) throw new V3SchemaVersionError('sqlite', version, V3_SCHEMA_VERSION);
}

/** The V3 store of a read-only file that has no V3 tables: nothing stored, every write refused. */
function emptyReadOnly(clock: { now(): number }): SqliteAgentRunStoreV3 {
  const refuse = async (): Promise<never> => {
    throw new InvalidOptionsError('The ops store was opened read-only: its V3 run store cannot write.');
  };
  return {
    checkpointVersion: 3,
    load: async () => undefined,
    save: refuse,
    list: async () => ({ runs: [] }),
    putBlob: refuse,
    getBlob: async (digest) => {
      checkDigest(digest, 'getBlob');
      return { status: 'missing' };
    },
    prune: refuse,
    redactForgotten: refuse,
    now: async () => clock.now(),
    rowCounts: () => ({ runs: 0, blobs: 0, blobRecords: 0, blobRefs: 0, forgotten: 0 }),
  };
}

/** A BLOB column as bytes; anything else reads as no bytes, which the codec refuses. */
function bytesOf(value: unknown): Uint8Array {
  return value instanceof Uint8Array ? value : new Uint8Array(0);
}

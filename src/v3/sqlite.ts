/**
 * `createSqliteAgentRunStoreV3`: V3 runs in the file of a SQLite ops store,
 * in tables of their own (see sqlite-schema.ts), on the ops store's
 * connection, so a save checks the ops store's lease in its own transaction.
 * A run is kept as the ops run store keeps one (a head row, transcript rows
 * appended, receipt rows upserted: a save writes what the step added; see
 * ../stores/write-plan.ts); each package is one row, stored once by digest.
 */
import type Database from 'better-sqlite3';
import {
  AgentRunLeaseError, InvalidOptionsError, RevisionConflictError, RunIdentityError,
} from '../errors/index.js';
import { sha256 } from '../stores/codec.js';
import { planSave, readIndex, SaveMemory, type PlanIndex, type StoredState } from '../stores/write-plan.js';
import type { AgentRunEnvelope } from '../agent/record-types.js';
import { decodeCursor, listLimit, listStatuses, type SummaryRow } from '../stores/list-query.js';
import { connectionOf, type SqliteOpsStore } from '../stores/sqlite/index.js';
import { checkForgetEvent } from './in-memory.js';
import { checkBlob, checkDigest, type CheckedBlob } from './store-blob.js';
import { checkSaveV3, checkTerminalBefore } from './store-checks.js';
import { ContextBlobError } from './store-errors.js';
import { RefMemory } from './store-load.js';
import { planSteps, splitSteps, StepMemory } from './store-steps.js';
import type { AgentRunLoadOptions, Lease } from '../stores/types.js';
import type { AgentRunStoreV3 } from './store-types.js';
import { migrateV3, V3_SCHEMA_VERSION, v3SchemaVersion } from './sqlite-schema.js';
import { padFor } from './sqlite-pad.js';
import { assembleLoadedV3, listPageOf, rememberSaveV3, updatedBounds } from './store-sql.js';
import { V3SchemaVersionError } from './store-errors.js';
import { sqliteForget } from './forget-sqlite.js';

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
  status: string;
  /** The run's number (schema 2 on): its step rows are keyed by it. Null on a read-only file of schema 1. */
  run_no: number | null;
  revision: number;
  created_at: number;
  transcript_digest: unknown;
  receipts_digest: unknown;
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
  // A read-only file of schema 1 is read as it is: its step rows are keyed by (run_id, idx).
  const version = v3SchemaVersion(db);
  const keyed = version >= 2;
  const runNo = keyed ? 'run_no' : 'NULL AS run_no';
  // Writes only on tables of this code's version (a writable file was migrated above; an older read-only one is read).
  const current = version === V3_SCHEMA_VERSION;
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const hasLeases = Boolean(db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cairn_leases'").get());

  const s = {
    run: db.prepare<[string], RunRow>(
      `SELECT scope, status, ${runNo}, revision, created_at, transcript_digest, receipts_digest FROM cairn_runs_v3 WHERE run_id = ?`),
    headBytes: db.prepare<[string], unknown>('SELECT head FROM cairn_runs_v3 WHERE run_id = ?').pluck(),
    openReceipts: db.prepare<[string, number], { receipt_key: string; body: unknown }>(
      'SELECT receipt_key, body FROM cairn_runs_v3_receipts WHERE run_id = ? AND model_step >= ?'),
    load: db.prepare<[string], RunRow & { head: unknown; updated_at: number; context_steps: number | null }>(
      `SELECT scope, status, ${runNo}, revision, created_at, updated_at, context_steps, transcript_digest, receipts_digest, head FROM cairn_runs_v3 WHERE run_id = ?`),
    messages: db.prepare<[string], { idx: number; body: unknown; revision: number }>(
      'SELECT idx, body, revision FROM cairn_runs_v3_messages WHERE run_id = ? ORDER BY idx'),
    receipts: db.prepare<[string], { receipt_key: string; body: unknown; revision: number }>(
      'SELECT receipt_key, body, revision FROM cairn_runs_v3_receipts WHERE run_id = ? ORDER BY receipt_key'),
    putMessage: db.prepare<[string, number, Uint8Array, number]>(`INSERT INTO cairn_runs_v3_messages (run_id, idx, body, revision) VALUES (?, ?, ?, ?)
  ON CONFLICT (run_id, idx) DO UPDATE SET body = excluded.body, revision = excluded.revision`),
    putReceipt: db.prepare<[string, string, number, Uint8Array, number]>(`INSERT INTO cairn_runs_v3_receipts (run_id, receipt_key, model_step, body, revision)
  VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (run_id, receipt_key) DO UPDATE SET model_step = excluded.model_step, body = excluded.body, revision = excluded.revision`),
    trimMessages: db.prepare<[string, number]>('DELETE FROM cairn_runs_v3_messages WHERE run_id = ? AND idx >= ?'),
    // A run's step rows are the keys run_no * 2^32 + idx (STEP_KEY_SPAN), computed by SQLite in 64-bit integers.
    stepRows: keyed
      ? db.prepare<[number | null, number | null], string>(
        'SELECT body FROM cairn_runs_v3_steps WHERE step_key >= ? * 4294967296 AND step_key < (? + 1) * 4294967296 ORDER BY step_key').pluck()
      : null,
    stepRowsV1: keyed ? null : db.prepare<[string], string>('SELECT body FROM cairn_runs_v3_steps WHERE run_id = ? ORDER BY idx').pluck(),
    nextRunNo: current ? db.prepare<[], number>('SELECT COALESCE(MAX(run_no), 0) + 1 FROM cairn_runs_v3').pluck() : null,
    putStep: current ? db.prepare<[number, number, string]>('INSERT INTO cairn_runs_v3_steps (step_key, body) VALUES (? * 4294967296 + ?, ?)') : null,
    trimSteps: current
      ? db.prepare<[number, number, number]>('DELETE FROM cairn_runs_v3_steps WHERE step_key >= ? * 4294967296 + ? AND step_key < (? + 1) * 4294967296')
      : null,
    deleteReceipt: db.prepare<[string, string]>('DELETE FROM cairn_runs_v3_receipts WHERE run_id = ? AND receipt_key = ?'),
    deleteReceipts: db.prepare<[string]>('DELETE FROM cairn_runs_v3_receipts WHERE run_id = ?'),
    redactedOf: db.prepare<[string], string>(`SELECT r.digest FROM cairn_runs_v3_blob_refs r
  JOIN cairn_runs_v3_blobs b ON b.digest = r.digest WHERE r.run_id = ? AND b.content IS NULL ORDER BY r.digest`).pluck(),
    upsert: !current ? null : db.prepare(`INSERT INTO cairn_runs_v3 (run_id, scope, status, revision, binding_id, created_at, updated_at,
    pending_approvals, pending_client_calls, transcript_length, context_steps, transcript_digest, receipts_digest, head, run_no, pad)
  VALUES (@runId, @scope, @status, @revision, @bindingId, @createdAt, @updatedAt, @pendingApprovals, @pendingClientCalls,
    @transcriptLength, @contextSteps, @transcriptDigest, @receiptsDigest, @head, @runNo, CASE WHEN @pad > 0 THEN zeroblob(@pad) END)
  ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, revision = excluded.revision, binding_id = excluded.binding_id,
    updated_at = excluded.updated_at, pending_approvals = excluded.pending_approvals,
    pending_client_calls = excluded.pending_client_calls, transcript_length = excluded.transcript_length,
    context_steps = excluded.context_steps, transcript_digest = excluded.transcript_digest,
    receipts_digest = excluded.receipts_digest, head = excluded.head, pad = excluded.pad`),
    // A running run saved as running again: neither status nor scope is set, so no index of the table is written.
    updateRunning: !current ? null : db.prepare(`UPDATE cairn_runs_v3 SET revision = @revision, binding_id = @bindingId,
    updated_at = @updatedAt, pending_approvals = @pendingApprovals, pending_client_calls = @pendingClientCalls,
    transcript_length = @transcriptLength, context_steps = @contextSteps, transcript_digest = @transcriptDigest,
    receipts_digest = @receiptsDigest, head = @head, pad = CASE WHEN @pad > 0 THEN zeroblob(@pad) END WHERE run_id = @runId`),
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
    // status <> 'running' spelt out: it is what lets SQLite use the at-rest index (schema 3).
    pruneNos: !current ? null : db.prepare<[number], number>(
      `SELECT run_no FROM cairn_runs_v3 WHERE status <> 'running' AND status IN ('completed', 'failed', 'stopped') AND updated_at < ?`).pluck(),
    pruneRuns: db.prepare<[number]>(
      `DELETE FROM cairn_runs_v3 WHERE status <> 'running' AND status IN ('completed', 'failed', 'stopped') AND updated_at < ?`),
    pruneBlobs: db.prepare(`DELETE FROM cairn_runs_v3_blobs
  WHERE NOT EXISTS (SELECT 1 FROM cairn_runs_v3_blob_refs r WHERE r.digest = cairn_runs_v3_blobs.digest)`),
    forget: db.prepare<[string, number, number]>(
      'INSERT OR IGNORE INTO cairn_runs_v3_forgotten (record_id, revision, forgotten_at) VALUES (?, ?, ?)'),
    redact: db.prepare<[number, string, number]>(`UPDATE cairn_runs_v3_blobs SET content = NULL, redacted_at = ?
  WHERE content IS NOT NULL AND digest IN (SELECT digest FROM cairn_runs_v3_blob_records WHERE record_id = ? AND revision = ?)`),
    count: (table: string) => db.prepare<[], number>(`SELECT COUNT(*) FROM ${table}`).pluck(),
  };

  /** What this object's last save (or load) of each run left in its rows, so the next save plans without reading them. */
  const memory = new SaveMemory();
  const refMemory = new RefMemory();
  const stepMemory = new StepMemory();
  /** The payload size this object's last committed save of each running run padded its row to, by that revision. */
  const padMemory = new Map<string, { revision: number; total: number }>();

  /** What the store holds of a run, read from its head and its open receipt rows. */
  function readState(runId: string, row: RunRow): StoredState {
    let index: PlanIndex | null = null;
    try {
      index = readIndex(runId, bytesOf(s.headBytes.get(runId)));
    } catch {
      // A head that does not decode: the save writes every row again.
    }
    const unsettled = new Map<string, Uint8Array>();
    if (index) for (const r of s.openReceipts.all(runId, index.settledStep)) unsettled.set(r.receipt_key, sha256(bytesOf(r.body)));
    return {
      revision: row.revision, index, unsettled,
      transcriptDigest: blobOrNull(row.transcript_digest) ?? new Uint8Array(0),
      receiptsDigest: blobOrNull(row.receipts_digest) ?? new Uint8Array(0),
    };
  }

  /** Stores a checked package unless its digest is there; a package holding a forgotten record arrives redacted. */
  const putChecked = (blob: CheckedBlob, now: number): boolean => {
    const forgotten = blob.records.some((r) => s.isForgotten.get(r.recordId, r.revision) !== undefined);
    const inserted = s.insertBlob.run(blob.digest, forgotten ? null : blob.json, Buffer.byteLength(blob.json), now, forgotten ? now : null).changes > 0;
    if (inserted) for (const r of blob.records) s.insertBlobRecord.run(blob.digest, r.recordId, r.revision);
    return inserted;
  };

  const saveTx = db.transaction((envelope: Parameters<AgentRunStoreV3['save']>[0], digests: string[], incoming: CheckedBlob[],
    lease: Lease | undefined) => {
    const { runId } = envelope;
    const row = s.run.get(runId);
    if (row && row.scope !== envelope.scope) throw new RunIdentityError('scope_mismatch', runId);
    if (envelope.revision !== (row?.revision ?? 0) + 1) throw new RevisionConflictError(runId, envelope.revision - 1, row ? row.revision : null);
    const now = clock.now();
    if (lease && s.lease && !s.lease.get(lease.key, lease.owner, lease.token, now)) throw new AgentRunLeaseError('lease_lost', lease.key);
    // Packages this object's last save of the run pointed to are stored: neither looked up nor written again.
    const known = refMemory.known(runId, row?.revision);
    const coming = new Set(incoming.map((b) => b.digest));
    const missing = digests.find((d) => !coming.has(d) && !known?.has(d) && s.blobExists.get(d) === undefined);
    if (missing !== undefined) {
      throw new ContextBlobError('blob_missing', missing, `save: run ${runId}: its context points to package ${missing}, which is neither stored nor in this save.`);
    }
    for (const blob of incoming) if (!known?.has(blob.digest)) putChecked(blob, now);
    // A run that points to a redacted package is stored with stand-ins for its copies of the package's block.
    const kept = forgetting.forSave(envelope, digests, incoming, known === undefined);
    envelope = kept.envelope;
    const stored = row && (memory.recall(runId, {
      revision: row.revision, transcriptDigest: blobOrNull(row.transcript_digest), receiptsDigest: blobOrNull(row.receipts_digest),
    }) ?? readState(runId, row));
    // The planner knows the envelope's shape, not its version: a V3 record is split as any run record is,
    // its context steps taken out first (they are rows of their own).
    const { head, steps } = splitSteps(envelope);
    const plan = planSave(head as unknown as AgentRunEnvelope, stored);
    // A new run takes the next number; a stored run keeps its own.
    const no = row?.run_no ?? s.nextRunNo!.get()!;
    const stepPlan = planSteps(steps ?? [], stepMemory.known(runId, row?.revision) ?? { jsons: row ? s.stepRows!.all(no, no) : [], objects: [] });
    const columns = {
      runId, revision: envelope.revision, bindingId: envelope.bindingId ?? null, updatedAt: now, pad: 0,
      pendingApprovals: envelope.pendingApprovals?.length ?? 0, pendingClientCalls: envelope.pendingClientCalls?.length ?? 0,
      transcriptLength: plan.next.index!.length, contextSteps: steps === null ? null : steps.length,
      transcriptDigest: plan.next.transcriptDigest, receiptsDigest: plan.next.receiptsDigest, head: plan.head,
    };
    // A running run's row keeps one size from save to save (schema 4, sqlite-pad.ts); at rest it is not padded.
    let padded: number | undefined;
    if (envelope.status === 'running') {
      const last = padMemory.get(runId);
      const fit = padFor(pageSize, {
        ...columns, scope: envelope.scope, status: envelope.status, createdAt: row?.created_at ?? now, runNo: no,
      }, last !== undefined && last.revision === row?.revision ? last.total : undefined);
      columns.pad = fit.pad;
      padded = fit.total;
    }
    if (row?.status === 'running' && envelope.status === 'running') s.updateRunning!.run(columns);
    else s.upsert!.run({ ...columns, runNo: no, scope: envelope.scope, status: envelope.status, createdAt: row?.created_at ?? now });
    if (stepPlan.deleteFrom !== null) s.trimSteps!.run(no, stepPlan.deleteFrom, no);
    for (const step of stepPlan.rows) s.putStep!.run(no, step.idx, step.body);
    if (plan.trimMessagesFrom !== null) s.trimMessages.run(runId, plan.trimMessagesFrom);
    for (const message of plan.messages) s.putMessage.run(runId, message.index, message.bytes, envelope.revision);
    if (plan.replaceReceipts) s.deleteReceipts.run(runId);
    for (const key of plan.deleteReceipts) s.deleteReceipt.run(runId, key);
    for (const receipt of plan.receipts) s.putReceipt.run(runId, receipt.key, receipt.modelStep, receipt.bytes, envelope.revision);
    // A record's context only grows, so its refs are only added to; a record that points to fewer is written again.
    if (!RefMemory.same(known, digests)) {
      if (row && (s.refCount.get(runId) ?? 0) > digests.length) s.deleteRefs.run(runId);
      for (const digest of digests) s.insertRef.run(runId, digest);
    }
    return { next: plan.next, steps, jsons: stepPlan.jsons, rewrote: kept.rewrote, padded };
  });

  // One read transaction: the head, its rows and the redactions are from the same commit.
  const loadTx = db.transaction((runId: string) => {
    const row = s.load.get(runId);
    return row && {
      row, messages: s.messages.all(runId), receipts: s.receipts.all(runId),
      steps: s.stepRows ? s.stepRows.all(row.run_no, row.run_no) : s.stepRowsV1!.all(runId), redacted: s.redactedOf.all(runId),
    };
  });

  const pruneTx = db.transaction((before: number) => {
    // Step rows have no foreign key to cascade from: each pruned run's go first, by their key range.
    for (const no of s.pruneNos!.all(before)) s.trimSteps!.run(no, 0, no);
    const pruned = s.pruneRuns.run(before).changes;
    s.pruneBlobs.run();
    return pruned;
  });

  const forgetting = sqliteForget(db, (runId) => {
    const read = loadTx(runId);
    return read && assembleRows(runId, read, { saves: true });
  }, { memory, refMemory, stepMemory });

  const forgetTx = db.transaction((records: { recordId: string; revision: number }[]) => {
    const now = clock.now();
    let redacted = 0;
    for (const r of records) s.forget.run(r.recordId, r.revision, now);
    // The runs' copies of each package's block are rewritten while its content is still there to say their text.
    forgetting.rewriteRuns(records);
    for (const r of records) redacted += s.redact.run(now, r.recordId, r.revision).changes;
    return redacted;
  });

  const assembleRows = (runId: string, read: NonNullable<ReturnType<typeof loadTx>>, loadOptions: AgentRunLoadOptions) =>
    assembleLoadedV3(runId, {
        scope: read.row.scope, revision: read.row.revision, createdAt: read.row.created_at, updatedAt: read.row.updated_at,
        contextSteps: read.row.context_steps, head: bytesOf(read.row.head),
        messages: read.messages.map((m) => ({ index: m.idx, bytes: bytesOf(m.body), revision: m.revision })),
        receipts: read.receipts.map((r) => ({ key: r.receipt_key, bytes: bytesOf(r.body), revision: r.revision })),
        transcriptDigest: blobOrNull(read.row.transcript_digest),
        receiptsDigest: blobOrNull(read.row.receipts_digest),
        steps: read.steps, redacted: read.redacted,
      }, loadOptions, memory);

  return {
    checkpointVersion: 3,

    async load(runId, loadOptions = {}) {
      if (typeof runId !== 'string' || runId === '') throw new InvalidOptionsError('load needs a run id.');
      const read = loadTx.deferred(runId);
      if (!read) return undefined;
      if (loadOptions.scope !== undefined && read.row.scope !== loadOptions.scope) throw new RunIdentityError('scope_mismatch', runId);
      return assembleRows(runId, read, loadOptions);
    },

    async save(envelope, saveOptions = {}) {
      if (!current) throw readOnlyRefusal();
      const digests = checkSaveV3(envelope);
      const incoming = (saveOptions.blobs ?? []).map((b) => checkBlob(b, 'save'));
      // IMMEDIATE: the write lock is taken before the revision is read.
      let saved: ReturnType<typeof saveTx> | undefined;
      try {
        saved = saveTx.immediate(envelope, digests, incoming, saveOptions.lease);
      } finally {
        // Remembered only once committed.
        rememberSaveV3({ memory, refMemory, stepMemory }, envelope, digests, saved);
        if (saved?.padded !== undefined) padMemory.set(envelope.runId, { revision: envelope.revision, total: saved.padded });
        else padMemory.delete(envelope.runId);
        // Stand-ins written for copies the engine still holds: the next save looks its packages up again.
        if (saved?.rewrote) refMemory.forget(envelope.runId);
      }
    },

    async list(query = {}) {
      const limit = listLimit(query.limit);
      const statuses = listStatuses(query.status);
      if (statuses !== null && statuses.length === 0) return { runs: [] };
      const where: string[] = ['1 = 1'];
      const params: unknown[] = [];
      if (query.scope !== undefined) {
        where.push('scope = ?');
        params.push(query.scope);
      }
      for (const { op, value } of updatedBounds(query)) {
        where.push(`updated_at ${op} ?`);
        params.push(value);
      }
      if (query.cursor !== undefined) {
        const after = decodeCursor(query.cursor);
        where.push('(updated_at < ? OR (updated_at = ? AND run_id < ?))');
        params.push(after.updatedAt, after.updatedAt, after.runId);
      }
      const page = (terms: string[], values: unknown[]) => db.prepare<unknown[], SummaryRow>(`SELECT run_id, scope, status, revision,
  binding_id, created_at, updated_at, pending_approvals, pending_client_calls FROM cairn_runs_v3 WHERE ${terms.join(' AND ')}
  ORDER BY updated_at DESC, run_id DESC LIMIT ?`).all(...values, limit + 1);
      // Runs at rest and running runs are in different indexes (schema 3; a file of schema 1 reads the same): one query
      // each, merged newest first.
      const atRest = statuses === null ? null : statuses.filter((status) => status !== 'running');
      const rows: SummaryRow[] = [];
      if (atRest === null || atRest.length > 0) {
        const filter = atRest === null ? [] : [`status IN (${atRest.map(() => '?').join(', ')})`];
        rows.push(...page([...where, "status <> 'running'", ...filter], [...params, ...(atRest ?? [])]));
      }
      if (statuses === null || statuses.includes('running')) rows.push(...page([...where, "status = 'running'"], params));
      // As SQLite orders them: run ids by their UTF-8 bytes.
      rows.sort((a, b) => b.updated_at - a.updated_at || Buffer.compare(Buffer.from(b.run_id, 'utf8'), Buffer.from(a.run_id, 'utf8')));
      return listPageOf(rows, limit);
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
      if (!current) throw readOnlyRefusal();
      return pruneTx.immediate(checkTerminalBefore(pruneOptions));
    },

    async redactForgotten(event) {
      const redacted = forgetTx.immediate(checkForgetEvent(event));
      forgetting.checkpoint();
      return redacted;
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

/** What a write on a read-only file's V3 store throws (a file of an older V3 schema is only read, never migrated). */
const readOnlyRefusal = () => new InvalidOptionsError('The ops store was opened read-only: its V3 run store cannot write.');

/** The V3 store of a read-only file that has no V3 tables: nothing stored, every write refused. */
function emptyReadOnly(clock: { now(): number }): SqliteAgentRunStoreV3 {
  const refuse = async (): Promise<never> => {
    throw readOnlyRefusal();
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

function blobOrNull(value: unknown): Uint8Array | null {
  return value instanceof Uint8Array ? value : null;
}

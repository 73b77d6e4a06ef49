/**
 * The SQLite AgentRunStore. A run is a head row (the envelope without its
 * transcript and older receipts, plus the columns list and prune need, and
 * digests of its other rows), transcript rows appended one per message, and
 * receipt rows upserted: a save writes what the step added, not the whole
 * history (see ../write-plan.ts).
 */
import type Database from 'better-sqlite3';
import type { AgentRunEnvelope } from '../../agent/types.js';
import type {
  AgentRunListPage, AgentRunListQuery, AgentRunLoadOptions, AgentRunSaveOptions, AgentRunStore,
} from '../types.js';
import {
  AgentRunLeaseError, InvalidOptionsError, RevisionConflictError, RunIdentityError, StoredRecordError,
} from '../../errors/index.js';
import { sha256 } from '../codec.js';
import { decodeCursor, listLimit, listPage, listStatuses, toSummary, type SummaryRow } from '../list-query.js';
import { planSave, readIndex, readRecord, SaveMemory, type PlanIndex, type SavePlan, type StoredState } from '../write-plan.js';

export interface SqliteAgentRunStore extends AgentRunStore {
  list(query?: AgentRunListQuery): Promise<AgentRunListPage>;
  prune(options: { terminalBefore: number }): Promise<number>;
  /**
   * Debugging aid: the bytes the last successful save of this object wrote
   * (head, appended transcript rows and upserted receipt rows). 0 before any.
   */
  readonly lastSaveBytes: number;
}

/** Runs deleted per prune transaction, so a large prune never holds the write lock for long. */
const PRUNE_BATCH = 500;

interface HeadRow {
  scope: string;
  status: string;
  revision: number;
  transcript_digest: unknown;
  receipts_digest: unknown;
}

/** @internal Takes or gives a better-sqlite3 handle, whose types stay out of the published declarations (a user need not install @types/better-sqlite3). */
export function createAgentRunStore(db: Database.Database, clock: { now(): number }): SqliteAgentRunStore {
  const statements = {
    head: db.prepare<[string], HeadRow>(
      'SELECT scope, status, revision, transcript_digest, receipts_digest FROM cairn_runs WHERE run_id = ?'),
    headBytes: db.prepare<[string], unknown>('SELECT head FROM cairn_runs WHERE run_id = ?').pluck(),
    headForLoad: db.prepare<[string], HeadRow & { head: unknown }>(
      'SELECT scope, status, revision, transcript_digest, receipts_digest, head FROM cairn_runs WHERE run_id = ?'),
    messages: db.prepare<[string], { idx: number; body: unknown; revision?: number | null }>(
      'SELECT idx, body FROM cairn_run_messages WHERE run_id = ? ORDER BY idx'),
    receipts: db.prepare<[string], { receipt_key: string; body: unknown; revision?: number | null }>(
      'SELECT receipt_key, body FROM cairn_run_receipts WHERE run_id = ? ORDER BY receipt_key'),
    openReceipts: db.prepare<[string, number], { receipt_key: string; body: unknown }>(
      'SELECT receipt_key, body FROM cairn_run_receipts WHERE run_id = ? AND model_step >= ?'),
    lease: db.prepare<[string, string, number, number], { ok: number }>(
      'SELECT 1 AS ok FROM cairn_leases WHERE lease_key = ? AND owner = ? AND token = ? AND expires_at > ?'),
    upsertHead: db.prepare(`INSERT INTO cairn_runs (run_id, scope, status, revision, binding_id, created_at, updated_at,
    pending_approvals, pending_client_calls, transcript_length, transcript_digest, receipts_digest, head)
  VALUES (@runId, @scope, @status, @revision, @bindingId, @createdAt, @updatedAt,
    @pendingApprovals, @pendingClientCalls, @transcriptLength, @transcriptDigest, @receiptsDigest, @head)
  ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, revision = excluded.revision,
    binding_id = excluded.binding_id, created_at = excluded.created_at, updated_at = excluded.updated_at,
    pending_approvals = excluded.pending_approvals, pending_client_calls = excluded.pending_client_calls,
    transcript_length = excluded.transcript_length, transcript_digest = excluded.transcript_digest,
    receipts_digest = excluded.receipts_digest, head = excluded.head`),
    // A running run saved as running again: its status and scope are not set, so no index of the table is written
    // (the list indexes hold runs at rest only, and the running runs' index is on their scope).
    updateRunning: db.prepare(`UPDATE cairn_runs SET revision = @revision, binding_id = @bindingId, created_at = @createdAt,
    updated_at = @updatedAt, pending_approvals = @pendingApprovals, pending_client_calls = @pendingClientCalls,
    transcript_length = @transcriptLength, transcript_digest = @transcriptDigest, receipts_digest = @receiptsDigest, head = @head
  WHERE run_id = @runId`),
    trimMessages: db.prepare<[string, number]>('DELETE FROM cairn_run_messages WHERE run_id = ? AND idx >= ?'),
    deleteReceipt: db.prepare<[string, string]>('DELETE FROM cairn_run_receipts WHERE run_id = ? AND receipt_key = ?'),
    prunable: db.prepare<[number, number], string>(`SELECT run_id FROM cairn_runs
  WHERE status <> 'running' AND status IN ('completed', 'failed', 'stopped') AND updated_at < ? LIMIT ?`).pluck(),
    deleteMessages: db.prepare<[string]>('DELETE FROM cairn_run_messages WHERE run_id = ?'),
    deleteReceipts: db.prepare<[string]>('DELETE FROM cairn_run_receipts WHERE run_id = ?'),
    deleteRun: db.prepare<[string]>('DELETE FROM cairn_runs WHERE run_id = ?'),
  };

  /**
   * The row writes, prepared at the first save: a file opened read-only may be of a schema before migration 5,
   * whose rows have no revision column to write.
   */
  let rowWrites: { putMessage: Database.Statement<[string, number, Uint8Array, number]>; putReceipt: Database.Statement<[string, string, number, Uint8Array, number]> } | undefined;
  const writes = () => rowWrites ??= {
    putMessage: db.prepare<[string, number, Uint8Array, number]>(`INSERT INTO cairn_run_messages (run_id, idx, body, revision) VALUES (?, ?, ?, ?)
  ON CONFLICT (run_id, idx) DO UPDATE SET body = excluded.body, revision = excluded.revision`),
    putReceipt: db.prepare<[string, string, number, Uint8Array, number]>(`INSERT INTO cairn_run_receipts (run_id, receipt_key, model_step, body, revision)
  VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (run_id, receipt_key) DO UPDATE SET model_step = excluded.model_step, body = excluded.body, revision = excluded.revision`),
  };

  let lastSaveBytes = 0;
  /** What this object's last save of each run left in its rows; running runs only. */
  const memory = new SaveMemory();

  /** What the store holds of a run, read from its head and its open receipt rows. */
  function readState(runId: string, row: HeadRow): StoredState {
    let index: PlanIndex | null = null;
    try {
      index = readIndex(runId, bytesOf(statements.headBytes.get(runId)));
    } catch {
      // A head that does not decode: the save writes every row again.
    }
    const unsettled = new Map<string, Uint8Array>();
    if (index) {
      for (const r of statements.openReceipts.all(runId, index.settledStep)) unsettled.set(r.receipt_key, sha256(bytesOf(r.body)));
    }
    return {
      revision: row.revision, index, unsettled,
      transcriptDigest: blobOrNull(row.transcript_digest) ?? new Uint8Array(0),
      receiptsDigest: blobOrNull(row.receipts_digest) ?? new Uint8Array(0),
    };
  }

  const saveTx = db.transaction((envelope: AgentRunEnvelope, options: AgentRunSaveOptions | undefined): SavePlan => {
    const runId = envelope.runId;
    const row = statements.head.get(runId);
    // Checked before the revision, so a caller of another scope learns nothing about the run.
    if (row && row.scope !== envelope.scope) throw new RunIdentityError('scope_mismatch', runId);
    const storedRevision = row?.revision ?? 0;
    if (envelope.revision !== storedRevision + 1) {
      throw new RevisionConflictError(runId, envelope.revision - 1, row ? row.revision : null);
    }
    const lease = options?.lease;
    if (lease && !statements.lease.get(lease.key, lease.owner, lease.token, clock.now())) {
      throw new AgentRunLeaseError('lease_lost', lease.key);
    }
    const stored = row && (memory.recall(runId, {
      revision: row.revision, transcriptDigest: blobOrNull(row.transcript_digest), receiptsDigest: blobOrNull(row.receipts_digest),
    }) ?? readState(runId, row));
    const plan = planSave(envelope, stored);
    const write = row?.status === 'running' && envelope.status === 'running' ? statements.updateRunning : statements.upsertHead;
    write.run({
      runId,
      scope: envelope.scope,
      status: envelope.status,
      revision: envelope.revision,
      bindingId: envelope.bindingId ?? null,
      createdAt: envelope.createdAt,
      updatedAt: envelope.updatedAt,
      pendingApprovals: envelope.pendingApprovals?.length ?? 0,
      pendingClientCalls: envelope.pendingClientCalls?.length ?? 0,
      transcriptLength: plan.next.index!.length,
      transcriptDigest: plan.next.transcriptDigest,
      receiptsDigest: plan.next.receiptsDigest,
      head: plan.head,
    });
    if (plan.trimMessagesFrom !== null) statements.trimMessages.run(runId, plan.trimMessagesFrom);
    for (const message of plan.messages) writes().putMessage.run(runId, message.index, message.bytes, envelope.revision);
    if (plan.replaceReceipts) statements.deleteReceipts.run(runId);
    for (const key of plan.deleteReceipts) statements.deleteReceipt.run(runId, key);
    for (const receipt of plan.receipts) writes().putReceipt.run(runId, receipt.key, receipt.modelStep, receipt.bytes, envelope.revision);
    return plan;
  });

  /**
   * The row reads with the revision that wrote each row, for `load(runId, { saves: true })`; null on a file opened
   * read-only before migration 5, whose rows have no revision (they read as unknown).
   */
  let withSaves: { messages: typeof statements.messages; receipts: typeof statements.receipts } | null | undefined;
  const rowsWithSaves = () => {
    if (withSaves !== undefined) return withSaves;
    try {
      withSaves = {
        messages: db.prepare('SELECT idx, body, revision FROM cairn_run_messages WHERE run_id = ? ORDER BY idx'),
        receipts: db.prepare('SELECT receipt_key, body, revision FROM cairn_run_receipts WHERE run_id = ? ORDER BY receipt_key'),
      };
    } catch {
      withSaves = null;
    }
    return withSaves;
  };

  // One read transaction: the head, its transcript and its receipts are from the same commit.
  const loadTx = db.transaction((runId: string, scope: string | undefined, saves: boolean) => {
    const head = statements.headForLoad.get(runId);
    if (!head) return undefined;
    // Refused before any of the other scope's bytes are read, let alone decoded.
    if (scope !== undefined && head.scope !== scope) throw new RunIdentityError('scope_mismatch', runId);
    const rows = (saves ? rowsWithSaves() : null) ?? statements;
    return { head, messages: rows.messages.all(runId), receipts: rows.receipts.all(runId) };
  });

  const pruneBatch = db.transaction((terminalBefore: number): number => {
    const runIds = statements.prunable.all(terminalBefore, PRUNE_BATCH);
    for (const runId of runIds) {
      statements.deleteMessages.run(runId);
      statements.deleteReceipts.run(runId);
      statements.deleteRun.run(runId);
    }
    return runIds.length;
  });

  const listStatements = new Map<string, Database.Statement<unknown[], SummaryRow>>();

  /** Up to `limit + 1` summaries matching `where`, newest first. */
  function page(where: string[], params: unknown[], limit: number): SummaryRow[] {
    const sql = `SELECT run_id, scope, status, revision, binding_id, created_at, updated_at,
  pending_approvals, pending_client_calls
FROM cairn_runs WHERE ${where.join(' AND ')}
ORDER BY updated_at DESC, run_id DESC LIMIT ?`;
    let statement = listStatements.get(sql);
    if (!statement) {
      statement = db.prepare<unknown[], SummaryRow>(sql);
      listStatements.set(sql, statement);
    }
    return statement.all(...params, limit + 1);
  }

  return {
    get lastSaveBytes() {
      return lastSaveBytes;
    },

    async load(runId: string, options?: AgentRunLoadOptions) {
      const read = loadTx.deferred(runId, options?.scope, options?.saves === true);
      if (!read) return undefined;
      const { head, messages, receipts } = read;
      const { envelope, stored } = readRecord(runId, {
        head: bytesOf(head.head),
        messages: messages.map((m) => ({ index: m.idx, bytes: bytesOf(m.body), revision: m.revision })),
        receipts: receipts.map((r) => ({ key: r.receipt_key, bytes: bytesOf(r.body), revision: r.revision })),
        transcriptDigest: blobOrNull(head.transcript_digest),
        receiptsDigest: blobOrNull(head.receipts_digest),
      }, 'json', options?.saves === true);
      // A head copied from another run (or edited) decodes, but it is not this row's record.
      if (envelope.runId !== runId || envelope.scope !== head.scope || envelope.revision !== head.revision) {
        throw new StoredRecordError('record_corrupt', runId, `Stored record under run ${runId} belongs to another run.`);
      }
      // The resume's first save plans from the rows just checked instead of reading the head and open receipts again.
      memory.loaded(runId, stored);
      return envelope;
    },

    async save(envelope: AgentRunEnvelope, options?: AgentRunSaveOptions) {
      checkEnvelope(envelope);
      // IMMEDIATE: the write lock is taken before the revision is read, so no
      // other connection can commit between the check and the write.
      let plan: SavePlan | undefined;
      try {
        plan = saveTx.immediate(envelope, options);
      } finally {
        // Remembered only once committed.
        memory.keep(envelope.runId, envelope.status, plan?.next);
      }
      lastSaveBytes = plan.bytes;
    },

    async list(query: AgentRunListQuery = {}) {
      const limit = listLimit(query.limit);
      const where: string[] = [];
      const params: unknown[] = [];
      const statuses = listStatuses(query.status);
      if (statuses !== null && statuses.length === 0) return { runs: [] };
      if (query.scope !== undefined) {
        where.push('scope = ?');
        params.push(query.scope);
      }
      if (query.updatedBefore !== undefined) {
        where.push('updated_at < ?');
        params.push(time(query.updatedBefore, 'updatedBefore'));
      }
      if (query.updatedAfter !== undefined) {
        where.push('updated_at >= ?');
        params.push(time(query.updatedAfter, 'updatedAfter'));
      }
      if (query.cursor !== undefined) {
        const after = decodeCursor(query.cursor);
        where.push('(updated_at < ? OR (updated_at = ? AND run_id < ?))');
        params.push(after.updatedAt, after.updatedAt, after.runId);
      }
      // Runs at rest and running runs sit in different indexes (see the schema's migration 5): one query each, merged in order.
      const atRest = statuses === null ? null : statuses.filter((s) => s !== 'running');
      const rows: SummaryRow[] = [];
      if (atRest === null || atRest.length > 0) {
        const filter = atRest === null ? [] : [`status IN (${atRest.map(() => '?').join(', ')})`];
        rows.push(...page([...where, "status <> 'running'", ...filter], [...params, ...(atRest ?? [])], limit));
      }
      if (statuses === null || statuses.includes('running')) rows.push(...page([...where, "status = 'running'"], params, limit));
      rows.sort(newestFirst);
      // One more than the page: whether it exists says whether there is a next page.
      return listPage(rows.map(toSummary), limit);
    },

    async prune(options: { terminalBefore: number }) {
      const before = time(options?.terminalBefore, 'terminalBefore');
      let total = 0;
      for (;;) {
        const deleted = pruneBatch.immediate(before);
        total += deleted;
        if (deleted < PRUNE_BATCH) return total;
      }
    },
  };
}

function checkEnvelope(envelope: AgentRunEnvelope): void {
  if (typeof envelope !== 'object' || envelope === null) {
    throw new InvalidOptionsError('save needs an envelope object.', 'invalid_envelope');
  }
  if (typeof envelope.runId !== 'string' || envelope.runId === '' || typeof envelope.scope !== 'string') {
    throw new InvalidOptionsError('The envelope needs a runId and a scope.', 'invalid_envelope');
  }
  if (typeof envelope.status !== 'string' || !Number.isFinite(envelope.createdAt) || !Number.isFinite(envelope.updatedAt)) {
    throw new InvalidOptionsError(`Envelope of run ${envelope.runId}: status, createdAt and updatedAt are required.`, 'invalid_envelope');
  }
  // Any other integer is a revision conflict, like every revision that is not the stored one plus one.
  if (!Number.isSafeInteger(envelope.revision)) {
    throw new InvalidOptionsError(`Envelope of run ${envelope.runId}: revision must be an integer.`, 'invalid_envelope');
  }
}

/** The list's order: most recently updated first, then by run id descending, compared as SQLite compares TEXT (by UTF-8 bytes). */
function newestFirst(a: SummaryRow, b: SummaryRow): number {
  return b.updated_at - a.updated_at || Buffer.compare(Buffer.from(b.run_id, 'utf8'), Buffer.from(a.run_id, 'utf8'));
}

/** A BLOB column as bytes; anything else (a TEXT or NULL put there by hand) reads as no bytes, which the codec refuses. */
function bytesOf(value: unknown): Uint8Array {
  return value instanceof Uint8Array ? value : new Uint8Array(0);
}

function blobOrNull(value: unknown): Uint8Array | null {
  return value instanceof Uint8Array ? value : null;
}

/** A time in ms; ±Infinity is allowed (an open bound: `prune({ terminalBefore: Infinity })` prunes every ended run). */
function time(value: unknown, name: string): number {
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new InvalidOptionsError(`${name} must be a time in milliseconds, got ${String(value)}.`);
  }
  return value;
}

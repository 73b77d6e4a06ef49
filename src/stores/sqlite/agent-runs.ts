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
import { decodeCursor, listLimit, listPage, listStatuses, summaryOf, toSummary, type SummaryRow } from '../list-query.js';
import { planSave, readIndex, readRecord, SaveMemory, type PlanIndex, type SavePlan, type StoredState } from '../write-plan.js';
import {
  headFill, messageKey, receiptKey, receiptStepEnd, receiptStepStart, runEnd, runStart, RUN_NUMBERS, type HeadColumns,
} from './run-rows.js';
import { bytesOf, keyedReads, legacyReads, type HeadRow } from './run-statements.js';
import { keyedWrites, type RunWrites } from './run-writes.js';

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

/** @internal Takes or gives a better-sqlite3 handle, whose types stay out of the published declarations (a user need not install @types/better-sqlite3). */
export function createAgentRunStore(db: Database.Database, clock: { now(): number }): SqliteAgentRunStore {
  // Schema 8 keys a run's rows by integers (see run-rows.ts). A writer has migrated the file; a read-only open of a
  // file an older Cairn left reads its rows by run id, as that Cairn did.
  const keyed = (db.prepare<[], string>("SELECT name FROM pragma_table_info('cairn_run_messages')").pluck().all()).includes('row_key');
  const reads = keyed ? keyedReads(db) : legacyReads(db);
  const statements = {
    lease: db.prepare<[string, string, number, number], { ok: number }>(
      'SELECT 1 AS ok FROM cairn_leases WHERE lease_key = ? AND owner = ? AND token = ? AND expires_at > ?'),
    prunable: db.prepare<[number, number], { run_id: string; run_no?: number }>(`SELECT ${keyed ? 'run_no, ' : ''}run_id FROM cairn_runs
  WHERE status <> 'running' AND status IN ('completed', 'failed', 'stopped') AND updated_at < ? LIMIT ?`),
  };

  // Read at open, not at the first save: a resume's statements are the load's and the saves' own.
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  /**
   * The statements of a save. A writer's file is of the current schema (it migrated it), so they are prepared here
   * with the load's, and a resume's first save does not pay for preparing them; a file opened read-only may be of an
   * older schema, and its store prepares them only if a save is ever asked of it (which the read-only file refuses).
   */
  let rowWrites: RunWrites | undefined = keyed && !db.readonly ? keyedWrites(db, pageSize) : undefined;
  const writes = () => rowWrites ??= keyedWrites(db, pageSize);

  let lastSaveBytes = 0;
  /** What this object's last save of each run left in its rows; running runs only. */
  const memory = new SaveMemory();

  /** What the store holds of a run, read from its head and its open receipt rows. */
  function readState(runId: string, row: HeadRow): StoredState {
    const w = writes();
    let index: PlanIndex | null = null;
    try {
      index = readIndex(runId, bytesOf(w.headBytes.get(runId)));
    } catch {
      // A head that does not decode: the save writes every row again.
    }
    const unsettled = new Map<string, Uint8Array>();
    if (index) {
      const from = receiptStepStart(row.run_no, index.settledStep);
      for (const r of w.openReceipts.all(from, runEnd(row.run_no), index.settledStep)) unsettled.set(r.receipt_key, sha256(bytesOf(r.body)));
    }
    return {
      revision: row.revision, index, unsettled,
      transcriptDigest: blobOrNull(row.transcript_digest) ?? new Uint8Array(0),
      receiptsDigest: blobOrNull(row.receipts_digest) ?? new Uint8Array(0),
    };
  }

  /**
   * Of each running run this object last saved running: its number and its head's length in the row (pad left
   * empty), so that its next save can be planned from {@link memory} before the transaction and written by one
   * guarded update (see {@link planAhead}).
   */
  const rowsSaved = new Map<string, { runNo: number; padded: number }>();

  /**
   * A running save of a run this object saved running last, one revision before: planned here, before the write lock
   * is taken (the head's encoding and the rows' hashing do not hold it), from what that save left, and laid out on
   * the row's pages as that save's row is. The transaction writes it only if the row is still what that save left
   * (the head update's guard: its revision, digests, scope, status and length); otherwise it reads the row and
   * plans again, as any other save does.
   */
  function planAhead(envelope: AgentRunEnvelope): Ahead | undefined {
    if (envelope.status !== 'running') return undefined;
    const saved = rowsSaved.get(envelope.runId);
    const stored = saved && memory.last(envelope.runId);
    if (!saved || !stored || stored.revision !== envelope.revision - 1) return undefined;
    const columns = headColumns(envelope);
    try {
      return { saved, stored, columns, plan: planSave(envelope, stored, headFill(writes().pageSize, columns, saved)) };
    } catch {
      // Refused in the transaction, after the checks a save makes first (its scope, its revision).
      return undefined;
    }
  }

  const saveTx = db.transaction((envelope: AgentRunEnvelope, options: AgentRunSaveOptions | undefined, ahead: Ahead | undefined): Saved => {
    const w = writes();
    const runId = envelope.runId;
    if (ahead) {
      const { saved, stored, columns: c, plan } = ahead;
      // One statement for the head's read and its write: by the run's number (its rowid), only if nobody else wrote.
      if (w.updateGuarded.run(c.revision, c.bindingId, c.createdAt, c.updatedAt, c.pendingApprovals, c.pendingClientCalls,
        c.transcriptLength, plan.next.transcriptDigest, plan.next.receiptsDigest, plan.head,
        saved.runNo, runId, envelope.scope, stored.revision, stored.transcriptDigest, stored.receiptsDigest, saved.padded).changes === 1) {
        // After the revision, as below: a lost lease is told only to a save that would otherwise have been written.
        const lease = options?.lease;
        if (lease && !statements.lease.get(lease.key, lease.owner, lease.token, clock.now())) {
          throw new AgentRunLeaseError('lease_lost', lease.key);
        }
        writeRows(w, saved.runNo, envelope, plan, stored);
        return { plan, runNo: saved.runNo };
      }
    }
    const row = w.head.get(runId);
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
    const write = row?.status === 'running' && envelope.status === 'running' ? w.updateRunning : w.upsertHead;
    const columns = headColumns(envelope);
    // The head is laid out on the row's pages (see headFill): kept at the size the run's row has while it runs, and
    // what the run never changes on pages of its own.
    const plan = planSave(envelope, stored, headFill(w.pageSize, columns, write === w.updateRunning ? row : null));
    // Positional parameters: better-sqlite3 binds a named one by looking its name up on the object, for each one.
    const c = columns;
    const info = write === w.updateRunning
      ? w.updateRunning.run(c.revision, c.bindingId, c.createdAt, c.updatedAt, c.pendingApprovals, c.pendingClientCalls,
        c.transcriptLength, plan.next.transcriptDigest, plan.next.receiptsDigest, plan.head, runId)
      : w.upsertHead.run(runId, c.scope, c.status, c.revision, c.bindingId, c.createdAt, c.updatedAt, c.pendingApprovals,
        c.pendingClientCalls, c.transcriptLength, plan.next.transcriptDigest, plan.next.receiptsDigest, plan.head);
    // A new run's number is the head's own key, taken by the insert.
    const runNo = row ? row.run_no : Number(info.lastInsertRowid);
    if (runNo >= RUN_NUMBERS) throw new InvalidOptionsError(`The SQLite ops store holds at most ${RUN_NUMBERS} runs over its life.`);
    writeRows(w, runNo, envelope, plan, stored);
    return { plan, runNo };
  });

  /** A save's transcript and receipt rows, after its head (in its transaction). */
  function writeRows(w: RunWrites, runNo: number, envelope: AgentRunEnvelope, plan: SavePlan, stored: StoredState | undefined): void {
    const runId = envelope.runId;
    const end = runEnd(runNo);
    if (plan.trimMessagesFrom !== null) w.trimMessages.run(messageKey(runNo, plan.trimMessagesFrom), end);
    for (const message of plan.messages) {
      w.putMessage.run(messageKey(runNo, message.index), runId, message.index, message.bytes, envelope.revision);
    }
    if (plan.replaceReceipts) w.deleteRunReceipts.run(runStart(runNo), end);
    for (const key of plan.deleteReceipts) w.deleteReceipt.run(runStart(runNo), end, key);
    // A receipt the store holds is among the steps not settled yet: it is rewritten where it is (in its step's keys).
    const held = plan.replaceReceipts || !stored ? undefined : stored.unsettled;
    const places = new Map<bigint, number>();
    for (const receipt of plan.receipts) {
      const from = receiptStepStart(runNo, receipt.modelStep);
      if (held?.has(receipt.key)) {
        const to = receiptStepEnd(runNo, receipt.modelStep);
        if (w.updateReceipt.run(receipt.modelStep, receipt.bytes, envelope.revision, from, to, receipt.key).changes > 0) continue;
        // Filed under another step (its model step changed): moved to this one's.
        w.deleteReceipt.run(runStart(runNo), end, receipt.key);
      }
      // The step's next place: the one after its last row, found by the insert itself (one statement) unless this
      // save already put a receipt of that step.
      const place = places.get(from);
      if (place !== undefined) {
        w.insertReceipt.run(receiptKey(runNo, receipt.modelStep, place), runId, receipt.key, receipt.modelStep, receipt.bytes, envelope.revision);
        places.set(from, place + 1);
        continue;
      }
      const to = receiptStepEnd(runNo, receipt.modelStep);
      let key: bigint;
      try {
        key = w.appendReceipt.run(from, from, to, runId, receipt.key, receipt.modelStep, receipt.bytes, envelope.revision).lastInsertRowid as bigint;
      } catch (error) {
        // The step's last place is taken, so the key after it is the next step's first, which a row of that step holds.
        if ((error as { code?: unknown }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') receiptKey(runNo, receipt.modelStep, Number.POSITIVE_INFINITY);
        throw error;
      }
      // Past the step's keys: it already held as many receipts as it may (refused, and the transaction rolled back).
      const taken = Number(key - from);
      receiptKey(runNo, receipt.modelStep, taken);
      places.set(from, taken + 1);
    }
  }

  // One read transaction: the head, its transcript and its receipts are from the same commit.
  const loadTx = db.transaction((runId: string, scope: string | undefined, saves: boolean) => {
    const head = reads.head.get(runId);
    if (!head) return undefined;
    // Refused before any of the other scope's bytes are read, let alone decoded.
    if (scope !== undefined && head.scope !== scope) throw new RunIdentityError('scope_mismatch', runId);
    return { head, ...reads.rows(runId, head.run_no, saves) };
  });

  const pruneBatch = db.transaction((terminalBefore: number): number => {
    const w = writes();
    const runs = statements.prunable.all(terminalBefore, PRUNE_BATCH);
    for (const { run_no: runNo } of runs) {
      w.deleteRunMessages.run(runStart(runNo!), runEnd(runNo!));
      w.deleteRunReceipts.run(runStart(runNo!), runEnd(runNo!));
      w.deleteRun.run(runNo!);
    }
    return runs.length;
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
      // The rows come as readRecord takes them, another run's refused (see run-statements.ts).
      const { head, messages, receipts } = read;
      const { envelope, stored } = readRecord(runId, {
        head: bytesOf(head.head),
        messages,
        receipts,
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
      let saved: Saved | undefined;
      try {
        saved = saveTx.immediate(envelope, options, planAhead(envelope));
      } finally {
        // Remembered only once committed.
        memory.keep(envelope.runId, envelope.status, saved?.plan.next);
        if (saved && envelope.status === 'running') rowsSaved.set(envelope.runId, { runNo: saved.runNo, padded: saved.plan.head.length });
        else rowsSaved.delete(envelope.runId);
      }
      lastSaveBytes = saved.plan.bytes;
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

/** A save planned before its transaction (see planAhead in createAgentRunStore). */
interface Ahead {
  saved: { runNo: number; padded: number };
  stored: StoredState;
  columns: HeadColumns;
  plan: SavePlan;
}

/** What a committed save wrote: its plan, and the run's number. */
interface Saved {
  plan: SavePlan;
  runNo: number;
}

/** The head row's columns beside its head. */
function headColumns(envelope: AgentRunEnvelope): HeadColumns {
  return { ...summaryOf(envelope), transcriptLength: transcriptLength(envelope) };
}

/** The transcript's length as the record counts it (see record.ts): the snapshot context's messages. */
function transcriptLength(envelope: AgentRunEnvelope): number {
  const context = (envelope.snapshot as { context?: { messages?: unknown } } | null)?.context;
  return Array.isArray(context?.messages) ? context.messages.length : 0;
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

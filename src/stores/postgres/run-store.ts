/**
 * The PostgreSQL AgentRunStore. A run is one `cairn_runs` row (the head bytes,
 * the summary columns list and prune read, and the digests of its other
 * rows), its transcript in `cairn_run_messages` (appended, one row per
 * message) and its receipts in `cairn_run_receipts` (upserted): the shared
 * planner (../write-plan.ts) decides what a save writes, so a save writes
 * what the step added, not the whole history.
 *
 * Every save is all or nothing under READ COMMITTED. The first is one
 * statement: INSERT ... ON CONFLICT DO NOTHING with the run's rows. A later
 * save by the store object that wrote the previous revision is one statement
 * too: a compare-and-swap on the revision, the lease (on the database clock)
 * and the columns that save left, with the step's rows. Any other save (after
 * a restart, or when another writer came between) locks the run's row, reads
 * what it holds, and writes the plan in that transaction.
 */
import type { PoolClient } from 'pg';
import {
  AgentRunLeaseError, InvalidOptionsError, RevisionConflictError, RunIdentityError, StoredRecordError,
} from '../../errors/index.js';
import type { AgentRunEnvelope, AgentRunStatus } from '../../agent/types.js';
import type { AgentRunListPage, AgentRunListQuery, AgentRunStore, Lease } from '../types.js';
import {
  checkSaveEnvelope, decodeCursor, finiteTime, listLimit, listPage, listStatuses, toSummary, type SummaryRow,
} from '../list-query.js';
import {
  planSave, readIndex, readRecord, SaveMemory, type MessageRow, type PlanIndex, type ReceiptRow, type SavePlan, type StoredRows, type StoredState,
} from '../write-plan.js';
import type { OpsTables } from './migrations.js';
import { runStatements } from './run-statements.js';
import type { Db } from './sql.js';

/** An AgentRunStore with list and prune. */
export interface PostgresAgentRunStore extends AgentRunStore {
  list(query?: AgentRunListQuery): Promise<AgentRunListPage>;
  prune(options: { terminalBefore: number }): Promise<number>;
}

const TERMINAL: readonly AgentRunStatus[] = ['completed', 'failed', 'stopped'];

/**
 * One row of the load statement, as an array (rowMode 'array': no object with a key per column for each of a long
 * run's thousands of rows): the head (part 0, with the run's columns), a transcript row (1) or a receipt row (2).
 * The body is base64 text (see run-statements.ts): the head's bytes (null on the head row when the scope does not
 * match), or the row's. The row revision is the save that wrote a transcript or receipt row (null for rows from
 * before migration 6).
 */
type LoadRow = [
  part: number, idx: number, key: string | null, rowRevision: number | null,
  scope: string, revision: number, transcriptDigest: Buffer, receiptsDigest: Buffer, body: string | null,
];

/** A body the load statement sent as base64 text; a NULL reads as no bytes, which the codec refuses. */
const fromBase64 = (text: string | null): Buffer => Buffer.from(text ?? '', 'base64');

interface LockedRow {
  scope: string;
  revision: number;
  transcript_digest: Buffer;
  receipts_digest: Buffer;
  head: Buffer;
  held: boolean;
}

/** Row values as the array parameters the write statements unnest. */
function messageParams(rows: MessageRow[]): [number[], Uint8Array[]] {
  return [rows.map((m) => m.index), rows.map((m) => m.bytes)];
}

function receiptParams(rows: ReceiptRow[]): [string[], number[], Uint8Array[]] {
  return [rows.map((r) => r.key), rows.map((r) => r.modelStep), rows.map((r) => r.bytes)];
}

const leaseParams = (lease: Lease | undefined) => lease ? [lease.key, lease.owner, lease.token] : [null, null, null];

export function createPostgresAgentRunStore(db: Db, t: OpsTables): PostgresAgentRunStore {
  const sql = runStatements(t);
  /** What this store object's last save of each run left in its rows (running runs only). */
  const memory = new SaveMemory();

  /** The columns of a run's row that describe its other rows, after `plan`. */
  const columns = (plan: SavePlan) => {
    const index = plan.next.index!;
    return [index.length, plan.next.transcriptDigest, plan.next.receiptsDigest, index.settledStep];
  };

  /** Why a first save inserted nothing: the error to throw, or null when everything matches now. */
  async function whyMissed(envelope: AgentRunEnvelope, lease: Lease | undefined) {
    const rows = await db.query<{ revision: number | null; scope: string | null; held: boolean }>(
      `Saving run ${envelope.runId}`, sql.afterMiss, [envelope.runId, ...leaseParams(lease)]);
    const now = rows[0]!;
    if (now.scope !== null && now.scope !== envelope.scope) return new RunIdentityError('scope_mismatch', envelope.runId);
    if ((now.revision ?? 0) !== envelope.revision - 1) return new RevisionConflictError(envelope.runId, envelope.revision - 1, now.revision);
    if (!now.held) return new AgentRunLeaseError('lease_lost', lease!.key);
    return null;
  }

  async function saveFirst(envelope: AgentRunEnvelope, lease: Lease | undefined): Promise<SavePlan> {
    const plan = planSave(envelope, undefined);
    for (let attempt = 1; ; attempt++) {
      const rows = await db.query<{ inserted: number }>(`Saving run ${envelope.runId}`, sql.insertRun.text, [
        envelope.runId, envelope.scope, envelope.status, envelope.revision, envelope.bindingId ?? null, envelope.createdAt,
        envelope.updatedAt, envelope.pendingApprovals.length, envelope.pendingClientCalls.length, plan.head, ...columns(plan),
        ...leaseParams(lease), ...messageParams(plan.messages), ...receiptParams(plan.receipts),
      ], true, sql.insertRun.name);
      if (rows[0]?.inserted === 1) return plan;
      const error = await whyMissed(envelope, lease);
      if (error) throw error;
      // Everything matches now (the run was pruned in between): once more.
      if (attempt >= 2) throw new RevisionConflictError(envelope.runId, 0, null);
    }
  }

  /**
   * The one-statement save, when this store object wrote revision n - 1 and
   * the plan only adds to what that save left. Null when it does not apply or
   * the compare-and-swap changed nothing.
   */
  async function saveFast(envelope: AgentRunEnvelope, lease: Lease | undefined): Promise<SavePlan | null> {
    const last = memory.last(envelope.runId);
    if (!last || last.revision !== envelope.revision - 1 || !last.index) return null;
    const plan = planSave(envelope, last);
    if (plan.trimMessagesFrom !== null || plan.replaceReceipts) return null;
    const gone = plan.deleteReceipts.length > 0;
    const values: unknown[] = [
      envelope.runId, envelope.scope, envelope.status, envelope.revision, envelope.bindingId ?? null, envelope.updatedAt,
      envelope.pendingApprovals.length, envelope.pendingClientCalls.length, plan.head, ...leaseParams(lease),
      ...columns(plan), last.index.length, last.transcriptDigest, last.receiptsDigest, last.index.settledStep,
      ...messageParams(plan.messages), ...receiptParams(plan.receipts),
    ];
    if (gone) values.push(plan.deleteReceipts);
    const statement = gone ? sql.fastSaveGone : sql.fastSave;
    const rows = await db.query<{ updated: number }>(`Saving run ${envelope.runId}`, statement.text, values, true, statement.name);
    return rows[0]?.updated === 1 ? plan : null;
  }

  /** A later save the locked way: lock the run's row, check it, read what it holds, write the plan. */
  async function saveLocked(envelope: AgentRunEnvelope, lease: Lease | undefined): Promise<SavePlan> {
    const { runId } = envelope;
    return db.transaction(`Saving run ${runId}`, 'BEGIN ISOLATION LEVEL READ COMMITTED', async (client) => {
      const locked = (await client.query<LockedRow>({ ...sql.lockRun, values: [runId, ...leaseParams(lease)] })).rows[0];
      if (locked && locked.scope !== envelope.scope) throw new RunIdentityError('scope_mismatch', runId);
      if (!locked || locked.revision !== envelope.revision - 1) {
        throw new RevisionConflictError(runId, envelope.revision - 1, locked ? locked.revision : null);
      }
      if (!locked.held) throw new AgentRunLeaseError('lease_lost', lease!.key);
      const plan = planSave(envelope, await storedState(client, runId, locked));
      await client.query({ ...sql.updateRun, values: [
        runId, envelope.status, envelope.revision, envelope.bindingId ?? null, envelope.updatedAt,
        envelope.pendingApprovals.length, envelope.pendingClientCalls.length, plan.head, ...columns(plan),
      ] });
      if (plan.trimMessagesFrom !== null) await client.query({ ...sql.trimMessages, values: [runId, plan.trimMessagesFrom] });
      if (plan.messages.length > 0) await client.query({ ...sql.putMessages, values: [runId, ...messageParams(plan.messages)] });
      if (plan.replaceReceipts) await client.query({ ...sql.deleteAllReceipts, values: [runId] });
      if (plan.deleteReceipts.length > 0) await client.query({ ...sql.deleteReceipts, values: [runId, plan.deleteReceipts] });
      if (plan.receipts.length > 0) await client.query({ ...sql.putReceipts, values: [runId, ...receiptParams(plan.receipts)] });
      return plan;
    });
  }

  /** What the locked row's run holds, from its head and its open receipt rows. */
  async function storedState(client: PoolClient, runId: string, row: LockedRow): Promise<StoredState> {
    let index: PlanIndex | null = null;
    try {
      index = readIndex(runId, row.head);
    } catch {
      // A head that does not decode: the save writes every row again.
    }
    const unsettled = new Map<string, Uint8Array>();
    if (index) {
      const open = await client.query<{ key: string; sha: Buffer }>({ ...sql.openReceipts, values: [runId, index.settledStep] });
      for (const r of open.rows) unsettled.set(r.key, r.sha);
    }
    return { revision: row.revision, index, unsettled, transcriptDigest: row.transcript_digest, receiptsDigest: row.receipts_digest };
  }

  return {
    async load(runId, options) {
      if (typeof runId !== 'string' || runId === '') throw new InvalidOptionsError('load needs a run id.');
      const scope = options?.scope ?? null;
      const withSaves = options?.saves === true;
      const rows = await db.query<LoadRow>(`Loading run ${runId}`, sql.load.text, [runId, scope], false, sql.load.name, true);
      const row = rows[0];
      if (!row) return undefined;
      const [part, , , , rowScope, headRevision, transcriptDigest, receiptsDigest, head] = row;
      if (scope !== null && rowScope !== scope) throw new RunIdentityError('scope_mismatch', runId);
      if (part !== 0 || head === null) {
        throw new StoredRecordError('record_corrupt', runId, `Stored record of run ${runId} has no head.`);
      }
      const messages: StoredRows['messages'][number][] = [];
      const receipts: StoredRows['receipts'][number][] = [];
      for (let i = 1; i < rows.length; i++) {
        const r = rows[i]!;
        if (r[0] === 1) messages.push({ index: r[1], bytes: fromBase64(r[8]), revision: r[3] });
        else receipts.push({ key: r[2]!, bytes: fromBase64(r[8]), revision: r[3] });
      }
      const { envelope, stored } = readRecord(runId, {
        head: fromBase64(head),
        messages,
        receipts,
        transcriptDigest,
        receiptsDigest,
      }, 'bytes', withSaves);
      if (envelope.runId !== runId || envelope.scope !== rowScope || envelope.revision !== headRevision) {
        throw new StoredRecordError('record_corrupt', runId, `Stored record of run ${runId} does not match its row.`);
      }
      // The resume's first save can then be the one-statement save (its compare-and-swap checks nobody wrote since).
      memory.loaded(runId, stored);
      return envelope;
    },

    async save(envelope, options) {
      checkSaveEnvelope(envelope);
      const lease = options?.lease;
      let plan: SavePlan | undefined;
      try {
        plan = envelope.revision === 1
          ? await saveFirst(envelope, lease)
          : (await saveFast(envelope, lease)) ?? (await saveLocked(envelope, lease));
      } finally {
        memory.keep(envelope.runId, envelope.status, plan?.next);
      }
    },

    async list(query = {}) {
      const params: unknown[] = [];
      const param = (value: unknown) => `$${params.push(value)}`;
      const statuses = listStatuses(query.status);
      if (statuses !== null && statuses.length === 0) return { runs: [] };
      const updatedBefore = query.updatedBefore === undefined ? undefined : finiteTime('updatedBefore', query.updatedBefore);
      const updatedAfter = query.updatedAfter === undefined ? undefined : finiteTime('updatedAfter', query.updatedAfter);
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      /** The query's conditions on `updated`, the column that holds the runs' updated_at in the part's index. */
      const where = (updated: string) => {
        const conditions: string[] = [];
        if (query.scope !== undefined) conditions.push(`scope = ${param(query.scope)}`);
        if (updatedBefore !== undefined) conditions.push(`${updated} < ${param(updatedBefore)}::float8`);
        if (updatedAfter !== undefined) conditions.push(`${updated} >= ${param(updatedAfter)}::float8`);
        if (after) conditions.push(`(${updated}, run_id) < (${param(after.updatedAt)}::float8, ${param(after.runId)}::text)`);
        return conditions;
      };
      const limit = listLimit(query.limit);
      // Runs at rest and running runs sit in different indexes (see migrations 6 and 10): one query for each, merged in
      // order. A run at rest has its updated_at in rested_at too, the column its indexes read.
      const atRest = statuses === null ? null : statuses.filter((s) => s !== 'running');
      const parts: string[] = [];
      const select = (updated: string, conditions: string[]) => `(SELECT run_id, scope, status, revision, binding_id, created_at, updated_at,
          pending_approvals, pending_client_calls
        FROM ${t.runs} WHERE ${conditions.join(' AND ')}
        ORDER BY ${updated} DESC, run_id DESC LIMIT ${param(limit + 1)})`;
      if (atRest === null || atRest.length > 0) {
        parts.push(select('rested_at', [...where('rested_at'), "status <> 'running'",
          ...(atRest === null ? [] : [`status = ANY(${param(atRest)}::text[])`])]));
      }
      if (statuses === null || statuses.includes('running')) parts.push(select('updated_at', [...where('updated_at'), "status = 'running'"]));
      const rows = await db.query<SummaryRow>('Listing runs', `
        SELECT * FROM (${parts.join(' UNION ALL ')}) AS runs
        ORDER BY updated_at DESC, run_id DESC
        LIMIT ${param(limit + 1)}`, params);
      return listPage(rows.map(toSummary), limit);
    },

    async prune(options) {
      const before = finiteTime('terminalBefore', options?.terminalBefore);
      // The transcript and receipts go with their run (no foreign key since migration 9), in the same transaction:
      // deleted by a second statement, whose snapshot sees every row a save committed before the run's row went.
      return db.transaction('Pruning runs', 'BEGIN ISOLATION LEVEL READ COMMITTED', async (client) => {
        const { rows } = await client.query<{ run_id: string }>(`
          DELETE FROM ${t.runs} WHERE status <> 'running' AND status = ANY($1::text[]) AND rested_at < $2::float8 RETURNING run_id`,
        [TERMINAL, before]);
        if (rows.length === 0) return 0;
        const ids = rows.map((r) => r.run_id);
        await client.query(`DELETE FROM ${t.messages} WHERE run_id = ANY($1::text[])`, [ids]);
        await client.query(`DELETE FROM ${t.receipts} WHERE run_id = ANY($1::text[])`, [ids]);
        return rows.length;
      });
    },
  };
}

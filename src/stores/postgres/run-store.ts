/**
 * The PostgreSQL AgentRunStore. A run is one `cairn_runs` row (the head bytes,
 * the summary columns list and prune read, and what the save checks the other
 * rows against), its transcript in `cairn_run_messages` (appended, one row per
 * message) and its receipts in `cairn_run_receipts` (upserted), so a save
 * writes what the step added, not the whole history.
 *
 * A save is a compare-and-swap that works under READ COMMITTED, never a read
 * then a write. The first save is one statement: INSERT ... ON CONFLICT DO
 * NOTHING with the run's rows in the same statement. A later save is one
 * transaction: UPDATE ... WHERE revision is the previous one (and, with a
 * lease, WHERE the lease is still this executor's on the database clock),
 * then one statement with what the step added. No row changed means another
 * writer won; a read after the fact says which error to throw. Either way a
 * save is all or nothing, and it stores exactly the envelope it was given
 * (see write-plan.ts).
 */
import type { PoolClient } from 'pg';
import {
  AgentRunLeaseError, InvalidOptionsError, RevisionConflictError, RunIdentityError, StoredRecordError,
} from '../../errors/index.js';
import type {
  AgentRunEnvelope, AgentRunListPage, AgentRunListQuery, AgentRunSaveOptions, AgentRunStatus, AgentRunStore,
  AgentToolReceipt,
} from '../../agent/types.js';
import { isFrozenJsonCopy } from '../../agent/json.js';
import { joinEnvelope } from '../codec.js';
import {
  decodeCursor, encodeCursor, isAgentRunStatus, listLimit, listStatuses, toSummary, type SummaryRow,
} from '../list-query.js';
import { emptyDigest, rowDigest, sameDigest, sha256, xorInto } from './digest.js';
import type { OpsTables } from './migrations.js';
import { statementName, type Db } from './sql.js';
import { SavePlan, type MessageRow, type ReceiptRow, type StoredReceiptRow, type StoredState } from './write-plan.js';

/** An AgentRunStore with list and prune. */
export interface PostgresAgentRunStore extends AgentRunStore {
  list(query?: AgentRunListQuery): Promise<AgentRunListPage>;
  prune(options: { terminalBefore: number }): Promise<number>;
}

const TERMINAL: readonly AgentRunStatus[] = ['completed', 'failed', 'stopped'];

interface LoadRow {
  scope: string;
  revision: number;
  transcript_length: number;
  transcript_digest: Buffer;
  receipts_digest: Buffer;
  head: Buffer | null;
  message_idx: number[] | null;
  messages: Buffer[] | null;
  receipt_keys: string[] | null;
  receipts: Buffer[] | null;
}

/** Row values as the array parameters the write statements unnest. */
function messageParams(rows: MessageRow[]): [number[], Buffer[]] {
  return [rows.map((m) => m.index), rows.map((m) => m.row.bytes)];
}

function receiptParams(rows: ReceiptRow[]): [string[], number[], Buffer[]] {
  return [rows.map((r) => r.key), rows.map((r) => r.modelStep), rows.map((r) => r.bytes)];
}

/** What a save of this store object left in a run's rows. */
interface Written {
  revision: number;
  state: StoredState;
  /** The unsettled receipt rows (model step >= settled_step), by key. */
  unsettled: ReadonlyMap<string, StoredReceiptRow>;
  /** The transcript that save wrote, as the envelope's message objects. */
  messages: readonly unknown[];
  /**
   * The receipts that save wrote, as the envelope's receipt objects in its
   * order, when every one was a frozen copy (else null), and how many of them
   * are of a model step before settled_step.
   */
  receipts: readonly AgentToolReceipt[] | null;
  settledReceipts: number;
}

interface CasRow extends StoredState {
  unsettled_keys: string[];
  unsettled_shas: Buffer[];
}

export function createPostgresAgentRunStore(db: Db, t: OpsTables): PostgresAgentRunStore {
  const leaseHeld = `($LK::text IS NULL OR EXISTS (
    SELECT 1 FROM ${t.leases} l WHERE l.key = $LK AND l.owner = $LO AND l.token = $LT AND l.expires_at > now()))`;
  const leaseAt = (n: number) => leaseHeld.replaceAll('$LK', `$${n}`).replaceAll('$LO', `$${n + 1}`).replaceAll('$LT', `$${n + 2}::bigint`);
  const leaseParams = (lease: AgentRunSaveOptions['lease']) => lease ? [lease.key, lease.owner, lease.token] : [null, null, null];

  // The first save, in one statement: the run's row, then (only if it was
  // inserted) its messages and receipts. ON CONFLICT DO NOTHING: no row
  // inserted means the run exists.
  const insertRun = `
    WITH run AS (
      INSERT INTO ${t.runs} (run_id, scope, status, revision, binding_id, created_at, updated_at,
        pending_approvals, pending_client_calls, head, transcript_length, transcript_digest, receipts_digest, settled_step)
      SELECT $1::text, $2::text, $3::text, $4::integer, $5::text, $6::float8, $7::float8, $8::integer, $9::integer,
        $10::bytea, $11::integer, $12::bytea, $13::bytea, $14::integer
      WHERE ${leaseAt(15)}
      ON CONFLICT (run_id) DO NOTHING
      RETURNING run_id
    ), messages AS (
      INSERT INTO ${t.messages} (run_id, idx, body)
      SELECT run.run_id, x.idx, x.body FROM run, unnest($18::integer[], $19::bytea[]) AS x (idx, body)
    ), receipts AS (
      INSERT INTO ${t.receipts} (run_id, key, model_step, body)
      SELECT run.run_id, x.key, x.model_step, x.body FROM run, unnest($20::text[], $21::integer[], $22::bytea[]) AS x (key, model_step, body)
    )
    SELECT count(*)::integer AS inserted FROM run`;
  // A later save's compare-and-swap. It leaves the columns about the other rows
  // alone, so RETURNING gives what the store holds, with the digests of the
  // unsettled receipt rows (read in the statement's snapshot: had another
  // save committed since, the revision would not have matched).
  const updateRun = `
    UPDATE ${t.runs} AS r SET status = $3, revision = $4, binding_id = $5, updated_at = $6,
      pending_approvals = $7, pending_client_calls = $8, head = $9
    WHERE r.run_id = $1 AND r.revision = $4 - 1 AND r.scope = $2 AND ${leaseAt(10)}
    RETURNING r.transcript_length, r.transcript_digest, r.receipts_digest, r.settled_step,
      ARRAY(SELECT c.key FROM ${t.receipts} c WHERE c.run_id = r.run_id AND c.model_step >= r.settled_step ORDER BY c.key) AS unsettled_keys,
      ARRAY(SELECT sha256(c.body) FROM ${t.receipts} c WHERE c.run_id = r.run_id AND c.model_step >= r.settled_step ORDER BY c.key) AS unsettled_shas`;
  // What the step added, in one statement: appended messages, deleted and upserted receipts, the row's new digests.
  const writeRows = `
    WITH messages AS (
      INSERT INTO ${t.messages} (run_id, idx, body)
      SELECT $1, x.idx, x.body FROM unnest($2::integer[], $3::bytea[]) AS x (idx, body)
    ), gone AS (
      DELETE FROM ${t.receipts} WHERE run_id = $1 AND key = ANY($4::text[])
    ), receipts AS (
      INSERT INTO ${t.receipts} (run_id, key, model_step, body)
      SELECT $1, x.key, x.model_step, x.body FROM unnest($5::text[], $6::integer[], $7::bytea[]) AS x (key, model_step, body)
      ON CONFLICT (run_id, key) DO UPDATE SET model_step = EXCLUDED.model_step, body = EXCLUDED.body
    )
    UPDATE ${t.runs} SET transcript_length = $8, transcript_digest = $9, receipts_digest = $10, settled_step = $11
    WHERE run_id = $1`;
  // A later save in one statement, when this store object wrote the run's
  // previous revision and so knows what its rows hold: the compare-and-swap
  // also checks every column about the other rows against what that save left,
  // and the rows are written only if it matched. No row changed means it did
  // not match (another writer, a lost lease, a conflict): the save then goes
  // the two-statement way, which finds out why. Two forms: the engine's saves
  // leave every stored receipt in place, and a DELETE in the statement, even
  // one that deletes nothing, scanned all the run's receipt rows (the key list
  // was a filter, not an index condition), a cost that grew with every step;
  // so the DELETE is there only when the save has receipt rows to take out.
  const fastSaveText = (withGone: boolean) => `
    WITH run AS (
      UPDATE ${t.runs} AS r SET status = $3, revision = $4, binding_id = $5, updated_at = $6,
        pending_approvals = $7, pending_client_calls = $8, head = $9,
        transcript_length = $13, transcript_digest = $14, receipts_digest = $15, settled_step = $16
      WHERE r.run_id = $1 AND r.revision = $4 - 1 AND r.scope = $2 AND ${leaseAt(10)}
        AND r.transcript_length = $17 AND r.transcript_digest = $18 AND r.receipts_digest = $19 AND r.settled_step = $20
      RETURNING r.run_id
    ), messages AS (
      INSERT INTO ${t.messages} (run_id, idx, body)
      SELECT run.run_id, x.idx, x.body FROM run, unnest($21::integer[], $22::bytea[]) AS x (idx, body)
    ), receipts AS (
      INSERT INTO ${t.receipts} (run_id, key, model_step, body)
      SELECT run.run_id, x.key, x.model_step, x.body FROM run, unnest($23::text[], $24::integer[], $25::bytea[]) AS x (key, model_step, body)
      ON CONFLICT (run_id, key) DO UPDATE SET model_step = EXCLUDED.model_step, body = EXCLUDED.body
    )${withGone ? `, gone AS (
      DELETE FROM ${t.receipts} WHERE run_id = $1 AND key = ANY($26::text[]) AND EXISTS (SELECT FROM run)
    )` : ''}
    SELECT count(*)::integer AS updated FROM run`;
  const fastSave = fastSaveText(false);
  const fastSaveGone = fastSaveText(true);
  // The save statements are prepared once per connection: the engine's saves
  // then cost the server a bind and an execution, not a parse and a plan.
  const names = { insertRun: statementName(insertRun), fastSave: statementName(fastSave), fastSaveGone: statementName(fastSaveGone), updateRun: statementName(updateRun), writeRows: statementName(writeRows) };
  const afterMiss = `
    SELECT (SELECT revision FROM ${t.runs} WHERE run_id = $1) AS revision,
           (SELECT scope FROM ${t.runs} WHERE run_id = $1) AS scope,
           ${leaseAt(2)} AS held`;

  /** Why a compare-and-swap changed nothing: the error to throw, or null when everything matches now. */
  async function whyMissed(query: (text: string, values: unknown[]) => Promise<{ rows: unknown[] }>, envelope: AgentRunEnvelope, lease: AgentRunSaveOptions['lease']) {
    const { rows } = await query(afterMiss, [envelope.runId, ...leaseParams(lease)]);
    const now = rows[0] as { revision: number | null; scope: string | null; held: boolean };
    if (now.scope !== null && now.scope !== envelope.scope) return new RunIdentityError('scope_mismatch', envelope.runId);
    if ((now.revision ?? 0) !== envelope.revision - 1) return new RevisionConflictError(envelope.runId, envelope.revision - 1, now.revision);
    if (!now.held) return new AgentRunLeaseError('lease_lost', lease!.key);
    return null;
  }

  /** What this store object's last save of a run left in its rows, by run id (running runs only). */
  const written = new Map<string, Written>();

  /** Remembers what a save left, or forgets the run when what it left is not known or the run ended. */
  function remember(envelope: AgentRunEnvelope, plan: SavePlan, state: StoredState | null): void {
    if (state === null || TERMINAL.includes(envelope.status)) {
      written.delete(envelope.runId);
      return;
    }
    const unsettled = new Map<string, StoredReceiptRow>();
    for (const r of plan.receiptsFrom(plan.currentStep)) unsettled.set(r.key, { sha: r.sha, digest: r.digest });
    // plan.receipts is the plan's own array; kept only when every receipt in it is a frozen copy, which never changes.
    const receipts = plan.receipts.every(isFrozenJsonCopy) ? plan.receipts : null;
    const settledReceipts = plan.receipts.filter((r) => r.modelStep < plan.currentStep).length;
    written.set(envelope.runId, { revision: envelope.revision, state, unsettled, messages: plan.messages.slice(), receipts, settledReceipts });
  }

  async function saveFirst(envelope: AgentRunEnvelope, plan: SavePlan, lease: AgentRunSaveOptions['lease']): Promise<StoredState> {
    const messages = plan.messageRows(0);
    const transcriptDigest = SavePlan.transcriptDigest(emptyDigest(), messages);
    const receipts = plan.allReceipts();
    const what = `Saving run ${envelope.runId}`;
    for (let attempt = 1; ; attempt++) {
      const rows = await db.query<{ inserted: number }>(what, insertRun, [
        envelope.runId, envelope.scope, envelope.status, envelope.revision, envelope.bindingId ?? null, envelope.createdAt,
        envelope.updatedAt, envelope.pendingApprovals.length, envelope.pendingClientCalls.length, plan.head, plan.length,
        transcriptDigest, receipts.digest, plan.currentStep, ...leaseParams(lease), ...messageParams(messages),
        ...receiptParams(receipts.rows),
      ], true, names.insertRun);
      if (rows[0]?.inserted === 1) {
        return {
          transcript_length: plan.length, transcript_digest: transcriptDigest, receipts_digest: receipts.digest,
          settled_step: plan.currentStep,
        };
      }
      const error = await whyMissed((text, values) => db.query(what, text, values).then((r) => ({ rows: r })), envelope, lease);
      if (error) throw error;
      // Everything matches now (the run was pruned in between): once more.
      if (attempt >= 2) throw new RevisionConflictError(envelope.runId, 0, null);
    }
  }

  /**
   * The one-statement save, when this store object wrote revision n - 1 and the
   * envelope's transcript starts with the very messages that save wrote (the
   * engine's frozen copies: the same objects cannot hold other content).
   * Returns what the rows hold after it, or null when the statement changed
   * nothing.
   */
  async function saveFast(envelope: AgentRunEnvelope, plan: SavePlan, lease: AgentRunSaveOptions['lease']): Promise<StoredState | null | 'not-applicable'> {
    const last = written.get(envelope.runId);
    if (!last || last.revision !== envelope.revision - 1) return 'not-applicable';
    const stored = last.state;
    const n = stored.transcript_length;
    if (n > plan.messages.length) return 'not-applicable';
    for (let i = 0; i < n; i++) {
      const message = plan.messages[i];
      if (message !== last.messages[i] || !isFrozenJsonCopy(message)) return 'not-applicable';
    }
    // The settled receipts: the very frozen objects that save wrote, or else the same by digest.
    const same = last.receipts !== null && plan.sameSettled(stored.settled_step, last.receipts, last.settledReceipts);
    if (!same && !plan.keepsSettled(stored, last.unsettled)) return 'not-applicable';
    const messages = plan.messageRows(n);
    const delta = receiptDelta(plan, stored, last.unsettled);
    const next: StoredState = {
      transcript_length: plan.length, transcript_digest: SavePlan.transcriptDigest(stored.transcript_digest, messages),
      receipts_digest: delta.digest, settled_step: plan.currentStep,
    };
    const values = [
      envelope.runId, envelope.scope, envelope.status, envelope.revision, envelope.bindingId ?? null, envelope.updatedAt,
      envelope.pendingApprovals.length, envelope.pendingClientCalls.length, plan.head, ...leaseParams(lease),
      next.transcript_length, next.transcript_digest, next.receipts_digest, next.settled_step,
      stored.transcript_length, stored.transcript_digest, stored.receipts_digest, stored.settled_step,
      ...messageParams(messages), ...receiptParams(delta.rows),
    ];
    const gone = delta.gone.length > 0;
    if (gone) values.push(delta.gone);
    const rows = await db.query<{ updated: number }>(`Saving run ${envelope.runId}`, gone ? fastSaveGone : fastSave, values, true,
      gone ? names.fastSaveGone : names.fastSave);
    return rows[0]?.updated === 1 ? next : null;
  }

  /**
   * The receipts a save writes when the stored settled receipts are the
   * envelope's: the unsettled ones that changed, and the unsettled rows the
   * envelope no longer has. `unsettled` holds the stored unsettled rows (the
   * sha256 of their bytes, and their digest contribution).
   */
  function receiptDelta(plan: SavePlan, stored: StoredState, unsettled: ReadonlyMap<string, StoredReceiptRow>) {
    const digest = Buffer.from(stored.receipts_digest);
    const before = new Map(unsettled);
    const rows: ReceiptRow[] = [];
    for (const receipt of plan.receiptsFrom(stored.settled_step)) {
      const old = before.get(receipt.key);
      before.delete(receipt.key);
      if (old?.sha.equals(receipt.sha)) continue;
      if (old) xorInto(digest, old.digest);
      xorInto(digest, receipt.digest);
      rows.push(receipt);
    }
    for (const row of before.values()) xorInto(digest, row.digest);
    return { rows, gone: [...before.keys()], digest };
  }

  async function saveNext(envelope: AgentRunEnvelope, plan: SavePlan, lease: AgentRunSaveOptions['lease']): Promise<StoredState> {
    const { runId } = envelope;
    return db.transaction(`Saving run ${runId}`, 'BEGIN ISOLATION LEVEL READ COMMITTED', async (client) => {
      for (let attempt = 1; ; attempt++) {
        const updated = await client.query<CasRow>({ name: names.updateRun, text: updateRun, values: [
          runId, envelope.scope, envelope.status, envelope.revision, envelope.bindingId ?? null, envelope.updatedAt,
          envelope.pendingApprovals.length, envelope.pendingClientCalls.length, plan.head, ...leaseParams(lease),
        ] });
        const stored = updated.rows[0];
        if (stored) return write(client, runId, plan, stored);
        const error = await whyMissed((text, values) => client.query(text, values), envelope, lease);
        if (error) throw error;
        // Everything matches now: the statement's snapshot predated the previous save's commit. Once more.
        if (attempt >= 2) throw new RevisionConflictError(runId, envelope.revision - 1, envelope.revision - 1);
      }
    });
  }

  /**
   * Writes what the step added after a later save's compare-and-swap: the
   * messages the store lacks, the unsettled receipts that changed (and the
   * deletion of unsettled rows the envelope no longer has). When the stored
   * transcript is not this envelope's prefix, or its settled receipts not
   * this envelope's, that part is rewritten whole instead.
   */
  async function write(client: PoolClient, runId: string, plan: SavePlan, stored: CasRow): Promise<StoredState> {
    let messages: MessageRow[];
    let transcriptDigest: Buffer;
    if (plan.keepsTranscript(stored)) {
      messages = plan.messageRows(stored.transcript_length);
      transcriptDigest = SavePlan.transcriptDigest(stored.transcript_digest, messages);
    } else {
      await client.query(`DELETE FROM ${t.messages} WHERE run_id = $1`, [runId]);
      messages = plan.messageRows(0);
      transcriptDigest = SavePlan.transcriptDigest(emptyDigest(), messages);
    }

    let receipts: ReceiptRow[];
    let gone: string[] = [];
    let receiptsDigest: Buffer;
    const unsettled = new Map(stored.unsettled_keys.map((key, i) => {
      const sha = stored.unsettled_shas[i]!;
      return [key, { sha, digest: rowDigest(key, sha) }] as const;
    }));
    if (plan.keepsSettled(stored, unsettled)) {
      const delta = receiptDelta(plan, stored, unsettled);
      receipts = delta.rows;
      gone = delta.gone;
      receiptsDigest = delta.digest;
    } else {
      await client.query(`DELETE FROM ${t.receipts} WHERE run_id = $1`, [runId]);
      const all = plan.allReceipts();
      receipts = all.rows;
      receiptsDigest = all.digest;
    }

    await client.query({ name: names.writeRows, text: writeRows, values: [
      runId, ...messageParams(messages), gone, ...receiptParams(receipts),
      plan.length, transcriptDigest, receiptsDigest, plan.currentStep,
    ] });
    return {
      transcript_length: plan.length, transcript_digest: transcriptDigest, receipts_digest: receiptsDigest,
      settled_step: plan.currentStep,
    };
  }

  return {
    async load(runId, options) {
      if (typeof runId !== 'string' || runId === '') throw new InvalidOptionsError('load needs a run id.');
      const scope = options?.scope ?? null;
      // One statement reads one snapshot: head, messages and receipts agree.
      // For another scope's run the database sends no data, only the scope.
      const rows = await db.query<LoadRow>(`Loading run ${runId}`, `
        WITH r AS (SELECT * FROM ${t.runs} WHERE run_id = $1), ok AS (SELECT $2::text IS NULL OR r.scope = $2::text AS ok FROM r)
        SELECT r.scope, r.revision, r.transcript_length, r.transcript_digest, r.receipts_digest,
          CASE WHEN ok.ok THEN r.head END AS head,
          CASE WHEN ok.ok THEN ARRAY(SELECT idx FROM ${t.messages} m WHERE m.run_id = $1 ORDER BY idx) END AS message_idx,
          CASE WHEN ok.ok THEN ARRAY(SELECT body FROM ${t.messages} m WHERE m.run_id = $1 ORDER BY idx) END AS messages,
          CASE WHEN ok.ok THEN ARRAY(SELECT key FROM ${t.receipts} c WHERE c.run_id = $1 ORDER BY key) END AS receipt_keys,
          CASE WHEN ok.ok THEN ARRAY(SELECT body FROM ${t.receipts} c WHERE c.run_id = $1 ORDER BY key) END AS receipts
        FROM r, ok`, [runId, scope]);
      const row = rows[0];
      if (!row) return undefined;
      if (scope !== null && row.scope !== scope) throw new RunIdentityError('scope_mismatch', runId);
      const messages = row.messages ?? [];
      const receipts = row.receipts ?? [];
      const transcriptDigest = emptyDigest();
      messages.forEach((bytes, i) => xorInto(transcriptDigest, rowDigest(row.message_idx![i]!, sha256(bytes))));
      const receiptsDigest = emptyDigest();
      receipts.forEach((bytes, i) => xorInto(receiptsDigest, rowDigest(row.receipt_keys![i]!, sha256(bytes))));
      if (row.head === null || messages.length !== row.transcript_length || row.message_idx!.some((n, i) => n !== i)
        || !sameDigest(row.transcript_digest, transcriptDigest)) {
        throw new StoredRecordError('record_corrupt', runId, `Stored transcript of run ${runId} is incomplete or was changed.`);
      }
      if (!sameDigest(row.receipts_digest, receiptsDigest)) {
        throw new StoredRecordError('record_corrupt', runId, `Stored receipts of run ${runId} were changed.`);
      }
      const envelope = joinEnvelope(runId, row.head, messages, receipts);
      if (envelope.runId !== runId || envelope.scope !== row.scope || envelope.revision !== row.revision) {
        throw new StoredRecordError('record_corrupt', runId, `Stored record of run ${runId} does not match its row.`);
      }
      return envelope;
    },

    async save(envelope, options) {
      checkEnvelope(envelope);
      // Encoding and hashing happen before any statement, so row locks are held briefly.
      const plan = new SavePlan(envelope, envelope.revision === 1);
      const lease = options?.lease;
      let state: StoredState | null = null;
      try {
        if (envelope.revision === 1) state = await saveFirst(envelope, plan, lease);
        else {
          const fast = await saveFast(envelope, plan, lease);
          state = fast !== null && fast !== 'not-applicable' ? fast : await saveNext(envelope, plan, lease);
        }
      } finally {
        remember(envelope, plan, state);
      }
    },

    async list(query = {}) {
      const where: string[] = [];
      const params: unknown[] = [];
      const param = (value: unknown) => `$${params.push(value)}`;
      const statuses = listStatuses(query.status);
      if (statuses !== null) {
        where.push(`status = ANY(${param(statuses)}::text[])`);
      }
      if (query.scope !== undefined) where.push(`scope = ${param(query.scope)}`);
      if (query.updatedBefore !== undefined) where.push(`updated_at < ${param(finite('updatedBefore', query.updatedBefore))}::float8`);
      if (query.updatedAfter !== undefined) where.push(`updated_at >= ${param(finite('updatedAfter', query.updatedAfter))}::float8`);
      if (query.cursor !== undefined) {
        const after = decodeCursor(query.cursor);
        where.push(`(updated_at, run_id) < (${param(after.updatedAt)}::float8, ${param(after.runId)}::text)`);
      }
      const limit = listLimit(query.limit);
      const rows = await db.query<SummaryRow>('Listing runs', `
        SELECT run_id, scope, status, revision, binding_id, created_at, updated_at, pending_approvals, pending_client_calls
        FROM ${t.runs} ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY updated_at DESC, run_id DESC
        LIMIT ${param(limit + 1)}`, params);
      const runs = rows.slice(0, limit).map(toSummary);
      const last = runs[runs.length - 1];
      return rows.length > limit && last ? { runs, nextCursor: encodeCursor(last) } : { runs };
    },

    async prune(options) {
      const before = finite('terminalBefore', options?.terminalBefore);
      // The transcript and receipts go with their run (ON DELETE CASCADE).
      const rows = await db.query<{ run_id: string }>('Pruning runs', `
        DELETE FROM ${t.runs} WHERE status = ANY($1::text[]) AND updated_at < $2::float8 RETURNING run_id`,
      [TERMINAL, before]);
      return rows.length;
    },
  };
}

function checkEnvelope(envelope: AgentRunEnvelope): void {
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

function finite(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidOptionsError(`${name} must be a finite number (ms), got ${JSON.stringify(value)}.`);
  }
  return value;
}

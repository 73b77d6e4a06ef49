/**
 * `createPostgresAgentRunStoreV3`: V3 runs in a PostgreSQL schema (the ops
 * store's, or another), in tables of their own (postgres-schema.ts), each run
 * kept as the ops run store keeps one (a head row, transcript rows appended,
 * receipt rows upserted: see ../stores/write-plan.ts). Times
 * are the database clock's (`clock_timestamp()`, in ms). A step that only adds
 * rows, by the store object that saved the run's previous revision, is one
 * statement (postgres-fast.ts). Any other save locks its run (a
 * transaction-scoped advisory lock, and its row FOR NO KEY UPDATE, which
 * orders it against the one-statement way) before it reads the revision; saves
 * and puts share a lock that prune and redactForgotten take alone, so a
 * package is never deleted or missed between a save's check and its write.
 */
import type { PoolClient } from 'pg';
import {
  AgentRunLeaseError, InvalidOptionsError, RevisionConflictError, RunIdentityError,
} from '../errors/index.js';
import { sha256 } from '../stores/codec.js';
import { planSave, readIndex, SaveMemory, type PlanIndex, type StoredState } from '../stores/write-plan.js';
import type { AgentRunEnvelope } from '../agent/record-types.js';
import type { AgentRunEnvelopeV3 } from './envelope.js';
import type { Lease } from '../stores/types.js';
import { decodeCursor, listLimit, listStatuses, type SummaryRow } from '../stores/list-query.js';
import { Db, quoteSchema, type PostgresConnection } from '../stores/postgres/sql.js';
import { checkForgetEvent } from './in-memory.js';
import { checkBlob, checkDigest, type CheckedBlob } from './store-blob.js';
import { checkSaveV3, checkTerminalBefore } from './store-checks.js';
import { ContextBlobError } from './store-errors.js';
import { RefMemory } from './store-load.js';
import { planSteps, splitSteps, StepMemory } from './store-steps.js';
import type { AgentRunStoreV3 } from './store-types.js';
import { migrateV3Postgres } from './postgres-schema.js';
import { listPageOf, rememberSaveV3, updatedBounds } from './store-sql.js';
import { fastSaveQuery, fastSaveStatements, NOW_MS } from './postgres-fast.js';
import { forSavePg, readRunPg, rewriteRunsPg } from './forget-postgres.js';

export interface PostgresAgentRunStoreV3Options {
  /** The schema that holds the V3 tables (use the ops store's, so a save checks its leases). @default 'public' */
  schema?: string;
}

export interface PostgresAgentRunStoreV3 extends AgentRunStoreV3 {
  /** Creates the schema and the V3 tables, or migrates them. Idempotent; concurrent calls are safe. Call before use. */
  setup(): Promise<void>;
  /** How many rows each V3 table holds now. */
  rowCounts(): Promise<{ runs: number; blobs: number; blobRecords: number; blobRefs: number; forgotten: number }>;
  readonly schema: string;
  /** Ends the pool if the store created it. */
  close(): Promise<void>;
}

interface HeadRow {
  scope: string;
  revision: number;
  transcript_digest: Buffer;
  receipts_digest: Buffer;
}


/**
 * @example
 * ```ts
 * const runs = createPostgresAgentRunStoreV3({ connectionString: process.env.DATABASE_URL! });
 * await runs.setup();
 * await runAgent({ checkpointVersion: 3, model, prompt, session: { store: runs, runId: 'r-1', scope: 'acme' } });
 * ```
 */
export function createPostgresAgentRunStoreV3(connection: PostgresConnection, options: PostgresAgentRunStoreV3Options = {}): PostgresAgentRunStoreV3 {
  const schema = options.schema ?? 'public';
  const q = quoteSchema(schema);
  const db = Db.open(connection, schema);
  const t = {
    runs: `${q}.cairn_runs_v3`, steps: `${q}.cairn_runs_v3_steps`, messages: `${q}.cairn_runs_v3_messages`, receipts: `${q}.cairn_runs_v3_receipts`, blobs: `${q}.cairn_runs_v3_blobs`, records: `${q}.cairn_runs_v3_blob_records`,
    refs: `${q}.cairn_runs_v3_blob_refs`, forgotten: `${q}.cairn_runs_v3_forgotten`, leases: `${q}.cairn_leases`,
  };
  const blobLock = `cairn_runs_v3_blobs:${schema}`;
  let leaseTable: boolean | undefined;
  const hasLeases = async (client: PoolClient) => leaseTable ??= (await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [t.leases])).rows[0]!.t !== null;

  const putChecked = async (client: PoolClient, blob: CheckedBlob): Promise<boolean> => {
    const forgotten = blob.records.length > 0 && (await client.query(
      `SELECT 1 FROM ${t.forgotten} f JOIN unnest($1::text[], $2::int[]) AS r(record_id, revision)
  ON f.record_id = r.record_id AND f.revision = r.revision LIMIT 1`,
      [blob.records.map((r) => r.recordId), blob.records.map((r) => r.revision)])).rowCount! > 0;
    const inserted = await client.query(`INSERT INTO ${t.blobs} (digest, content, bytes, created_at, redacted_at)
  VALUES ($1, $2, $3, ${NOW_MS}, CASE WHEN $4 THEN ${NOW_MS} END) ON CONFLICT (digest) DO NOTHING`,
    [blob.digest, forgotten ? null : blob.json, Buffer.byteLength(blob.json), forgotten]);
    if (inserted.rowCount === 0) return false;
    if (blob.records.length > 0) {
      await client.query(`INSERT INTO ${t.records} (digest, record_id, revision)
  SELECT $1, r.record_id, r.revision FROM unnest($2::text[], $3::int[]) AS r(record_id, revision) ON CONFLICT DO NOTHING`,
      [blob.digest, blob.records.map((r) => r.recordId), blob.records.map((r) => r.revision)]);
    }
    return true;
  };

  /** What this object's last save (or load) of each run left in its rows, so the next save plans without reading them. */
  const memory = new SaveMemory();
  const refMemory = new RefMemory();
  const stepMemory = new StepMemory();

  /** What the store holds of a run, read from its head and its open receipt rows. */
  const readState = async (client: PoolClient, runId: string, row: HeadRow): Promise<StoredState> => {
    let index: PlanIndex | null = null;
    try {
      const head = (await client.query<{ head: Buffer }>(`SELECT head FROM ${t.runs} WHERE run_id = $1`, [runId])).rows[0]?.head;
      index = readIndex(runId, head ?? new Uint8Array(0));
    } catch {
      // A head that does not decode: the save writes every row again.
    }
    const unsettled = new Map<string, Uint8Array>();
    if (index) {
      const open = await client.query<{ key: string; body: Buffer }>(`SELECT key, body FROM ${t.receipts} WHERE run_id = $1 AND model_step >= $2`, [runId, index.settledStep]);
      for (const r of open.rows) unsettled.set(r.key, sha256(r.body));
    }
    return { revision: row.revision, index, unsettled, transcriptDigest: row.transcript_digest, receiptsDigest: row.receipts_digest };
  };

  const fastSql = fastSaveStatements(t);
  /** The one-statement save (postgres-fast.ts), or null when it does not apply or changed no row. */
  const saveFast = async (envelope: AgentRunEnvelopeV3, digests: string[], incoming: CheckedBlob[], lease: Lease | undefined) => {
    const { runId } = envelope;
    const previous = envelope.revision - 1;
    const last = memory.last(runId);
    const known = refMemory.known(runId, previous);
    const storedSteps = stepMemory.known(runId, previous);
    if (!last || last.revision !== previous || !last.index || !storedSteps || !RefMemory.same(known, digests)) return null;
    if (incoming.some((b) => !known!.has(b.digest)) || (lease && leaseTable === undefined)) return null;
    const { head, steps } = splitSteps(envelope);
    const plan = planSave(head as unknown as AgentRunEnvelope, last);
    const stepPlan = planSteps(steps ?? [], storedSteps);
    const query = fastSaveQuery(fastSql, envelope, plan, stepPlan, steps, last, lease && leaseTable ? lease : null);
    if (!query) return null;
    const rows = await db.query<{ updated: number }>(`Saving run ${runId}`, query.text, query.values, true, query.name);
    return rows[0]?.updated === 1 ? { next: plan.next, steps, jsons: stepPlan.jsons } : null;
  };

  const count = async (table: string) => Number((await db.query<{ n: string }>('Counting V3 rows', `SELECT count(*) AS n FROM ${table}`))[0]!.n);

  return {
    checkpointVersion: 3,
    schema,
    setup: () => migrateV3Postgres(db, q),
    close: () => db.close(),

    async load(runId, loadOptions = {}) {
      if (typeof runId !== 'string' || runId === '') throw new InvalidOptionsError('load needs a run id.');
      return db.transaction(`Loading run ${runId}`, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
        (client) => readRunPg(client, t, runId, loadOptions, memory));
    },

    async save(envelope, saveOptions = {}) {
      const digests = checkSaveV3(envelope);
      const incoming = (saveOptions.blobs ?? []).map((b) => checkBlob(b, 'save'));
      const { runId } = envelope;
      const lease = saveOptions.lease;
      let saved: { next: StoredState; steps: unknown[] | null; jsons: string[] } | undefined;
      let rewrote = false;
      try {
        saved = await saveFast(envelope, digests, incoming, lease) ?? await db.transaction(`Saving run ${runId}`, 'BEGIN ISOLATION LEVEL READ COMMITTED', async (client) => {
          await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0)), pg_advisory_xact_lock_shared(hashtextextended($2, 0))',
            [`cairn_runs_v3:${schema}:${runId}`, blobLock]);
          const row = (await client.query<HeadRow>(
            `SELECT scope, revision, transcript_digest, receipts_digest FROM ${t.runs} WHERE run_id = $1 FOR NO KEY UPDATE`, [runId])).rows[0];
          if (row && row.scope !== envelope.scope) throw new RunIdentityError('scope_mismatch', runId);
          if (envelope.revision !== (row?.revision ?? 0) + 1) throw new RevisionConflictError(runId, envelope.revision - 1, row ? row.revision : null);
          if (lease && await hasLeases(client)) {
            const held = await client.query(`SELECT 1 FROM ${t.leases} WHERE key = $1 AND owner = $2 AND token = $3 AND expires_at > clock_timestamp()`,
              [lease.key, lease.owner, lease.token]);
            if (held.rowCount === 0) throw new AgentRunLeaseError('lease_lost', lease.key);
          }
          // Packages this object's last save of the run pointed to are stored: neither looked up nor written again.
          const known = refMemory.known(runId, row?.revision);
          const coming = new Set(incoming.map((b) => b.digest));
          const wanted = digests.filter((d) => !coming.has(d) && !known?.has(d));
          if (wanted.length > 0) {
            const found = new Set((await client.query<{ digest: string }>(`SELECT digest FROM ${t.blobs} WHERE digest = ANY($1::text[])`, [wanted])).rows.map((r) => r.digest));
            const missing = wanted.find((d) => !found.has(d));
            if (missing !== undefined) {
              throw new ContextBlobError('blob_missing', missing, `save: run ${runId}: its context points to package ${missing}, which is neither stored nor in this save.`);
            }
          }
          for (const blob of incoming) if (!known?.has(blob.digest)) await putChecked(client, blob);
          // A run that points to a redacted package is stored with stand-ins for its copies of the package's block.
          const kept = await forSavePg(client, t, envelope, digests, incoming, known === undefined);
          envelope = kept.envelope;
          rewrote = kept.rewrote;
          const stored = row && (memory.recall(runId, {
            revision: row.revision, transcriptDigest: row.transcript_digest, receiptsDigest: row.receipts_digest,
          }) ?? await readState(client, runId, row));
          // The planner knows the envelope's shape, not its version: a V3 record is split as any run record is,
          // its context steps taken out first (they are rows of their own).
          const { head, steps } = splitSteps(envelope);
          const plan = planSave(head as unknown as AgentRunEnvelope, stored);
          const stepPlan = planSteps(steps ?? [], stepMemory.known(runId, row?.revision) ?? {
            jsons: row ? (await client.query<{ body: string }>(`SELECT body FROM ${t.steps} WHERE run_id = $1 ORDER BY idx`, [runId])).rows.map((r) => r.body) : [],
            objects: [],
          });
          const values = [runId, envelope.scope, envelope.status, envelope.revision, envelope.bindingId ?? null,
            envelope.pendingApprovals?.length ?? 0, envelope.pendingClientCalls?.length ?? 0,
            plan.next.index!.length, plan.next.transcriptDigest, plan.next.receiptsDigest, plan.head, steps === null ? null : steps.length];
          // One reading of the clock (a first save's createdAt and updatedAt are the same time), and the row, in one statement.
          await client.query(`WITH now AS (SELECT ${NOW_MS} AS t)
    INSERT INTO ${t.runs} (run_id, scope, status, revision, binding_id, created_at, updated_at,
      pending_approvals, pending_client_calls, transcript_length, transcript_digest, receipts_digest, head, context_steps)
    SELECT $1, $2, $3, $4, $5, now.t, now.t, $6, $7, $8, $9, $10, $11, $12 FROM now
    ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, revision = excluded.revision, binding_id = excluded.binding_id,
      updated_at = excluded.updated_at, pending_approvals = excluded.pending_approvals,
      pending_client_calls = excluded.pending_client_calls, transcript_length = excluded.transcript_length,
      transcript_digest = excluded.transcript_digest, receipts_digest = excluded.receipts_digest, head = excluded.head,
      context_steps = excluded.context_steps`, values);
          if (stepPlan.deleteFrom !== null) await client.query(`DELETE FROM ${t.steps} WHERE run_id = $1 AND idx >= $2`, [runId, stepPlan.deleteFrom]);
          if (stepPlan.rows.length > 0) {
            await client.query(`INSERT INTO ${t.steps} (run_id, idx, body) SELECT $1, s.idx, s.body FROM unnest($2::int[], $3::text[]) AS s(idx, body)`,
              [runId, stepPlan.rows.map((r) => r.idx), stepPlan.rows.map((r) => r.body)]);
          }
          if (plan.trimMessagesFrom !== null) await client.query(`DELETE FROM ${t.messages} WHERE run_id = $1 AND idx >= $2`, [runId, plan.trimMessagesFrom]);
          if (plan.messages.length > 0) {
            await client.query(`INSERT INTO ${t.messages} (run_id, idx, body, revision)
    SELECT $1, m.idx, m.body, $4 FROM unnest($2::int[], $3::bytea[]) AS m(idx, body)
    ON CONFLICT (run_id, idx) DO UPDATE SET body = excluded.body, revision = excluded.revision`,
            [runId, plan.messages.map((m) => m.index), plan.messages.map((m) => Buffer.from(m.bytes)), envelope.revision]);
          }
          if (plan.replaceReceipts) await client.query(`DELETE FROM ${t.receipts} WHERE run_id = $1`, [runId]);
          if (plan.deleteReceipts.length > 0) await client.query(`DELETE FROM ${t.receipts} WHERE run_id = $1 AND key = ANY($2::text[])`, [runId, plan.deleteReceipts]);
          if (plan.receipts.length > 0) {
            await client.query(`INSERT INTO ${t.receipts} (run_id, key, model_step, body, revision)
    SELECT $1, r.key, r.model_step, r.body, $5 FROM unnest($2::text[], $3::int[], $4::bytea[]) AS r(key, model_step, body)
    ON CONFLICT (run_id, key) DO UPDATE SET model_step = excluded.model_step, body = excluded.body, revision = excluded.revision`,
            [runId, plan.receipts.map((r) => r.key), plan.receipts.map((r) => r.modelStep), plan.receipts.map((r) => Buffer.from(r.bytes)), envelope.revision]);
          }
          // The refs follow the record's digests: those it no longer points to go, new ones come, in one statement.
          if ((row || digests.length > 0) && !RefMemory.same(known, digests)) {
            await client.query(`WITH gone AS (DELETE FROM ${t.refs} WHERE $3 AND run_id = $1 AND NOT (digest = ANY($2::text[])))
    INSERT INTO ${t.refs} (run_id, digest) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`, [runId, digests, row !== undefined]);
          }
          return { next: plan.next, steps, jsons: stepPlan.jsons };
        });
      } finally {
        // Remembered only once committed.
        rememberSaveV3({ memory, refMemory, stepMemory }, envelope, digests, saved);
        // Stand-ins written for copies the engine still holds: the next save looks its packages up again.
        if (rewrote) refMemory.forget(runId);
      }
    },

    async list(query = {}) {
      const limit = listLimit(query.limit);
      const statuses = listStatuses(query.status);
      if (statuses !== null && statuses.length === 0) return { runs: [] };
      const where: string[] = ['true'];
      const params: unknown[] = [];
      const param = (value: unknown) => {
        params.push(value);
        return `$${params.length}`;
      };
      if (statuses !== null) where.push(`status = ANY(${param(statuses)}::text[])`);
      if (query.scope !== undefined) where.push(`scope = ${param(query.scope)}`);
      for (const { op, value } of updatedBounds(query)) where.push(`updated_at ${op} ${param(value)}`);
      if (query.cursor !== undefined) {
        const after = decodeCursor(query.cursor);
        where.push(`(updated_at, run_id) < (${param(after.updatedAt)}, ${param(after.runId)} COLLATE "C")`);
      }
      const rows = await db.query<SummaryRow>('Listing V3 runs', `SELECT run_id, scope, status, revision, binding_id, created_at, updated_at,
  pending_approvals, pending_client_calls FROM ${t.runs} WHERE ${where.join(' AND ')}
  ORDER BY updated_at DESC, run_id COLLATE "C" DESC LIMIT ${param(limit + 1)}`, params);
      return listPageOf(rows, limit);
    },

    async putBlob(blob) {
      const checked = checkBlob(blob);
      const stored = await db.transaction('Storing a context package', 'BEGIN ISOLATION LEVEL READ COMMITTED', async (client) => {
        await client.query('SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))', [blobLock]);
        return putChecked(client, checked);
      });
      return { digest: checked.digest, stored };
    },

    async getBlob(digest) {
      const [row] = await db.query<{ content: string | null }>('Reading a context package',
        `SELECT content FROM ${t.blobs} WHERE digest = $1`, [checkDigest(digest, 'getBlob')]);
      if (row === undefined) return { status: 'missing' };
      if (row.content === null) return { status: 'redacted' };
      return { status: 'found', content: JSON.parse(row.content) };
    },

    async prune(pruneOptions) {
      const before = checkTerminalBefore(pruneOptions);
      return db.transaction('Pruning V3 runs', 'BEGIN ISOLATION LEVEL READ COMMITTED', async (client) => {
        await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [blobLock]);
        const pruned = await client.query(`DELETE FROM ${t.runs} WHERE status IN ('completed', 'failed', 'stopped') AND updated_at < $1`, [before]);
        await client.query(`DELETE FROM ${t.blobs} b WHERE NOT EXISTS (SELECT 1 FROM ${t.refs} r WHERE r.digest = b.digest)`);
        return pruned.rowCount ?? 0;
      });
    },

    async redactForgotten(event) {
      const records = checkForgetEvent(event);
      return db.transaction('Redacting forgotten packages', 'BEGIN ISOLATION LEVEL READ COMMITTED', async (client) => {
        await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [blobLock]);
        const ids = records.map((r) => r.recordId);
        const revisions = records.map((r) => r.revision);
        await client.query(`INSERT INTO ${t.forgotten} (record_id, revision, forgotten_at)
  SELECT r.record_id, r.revision, ${NOW_MS} FROM unnest($1::text[], $2::int[]) AS r(record_id, revision) ON CONFLICT DO NOTHING`, [ids, revisions]);
        // The runs' copies of each package's block are rewritten while its content is still there to say their text.
        await rewriteRunsPg(client, t, records, { memory, refMemory, stepMemory });
        const redacted = await client.query(`UPDATE ${t.blobs} SET content = NULL, redacted_at = ${NOW_MS}
  WHERE content IS NOT NULL AND digest IN (SELECT br.digest FROM ${t.records} br
    JOIN unnest($1::text[], $2::int[]) AS r(record_id, revision) ON br.record_id = r.record_id AND br.revision = r.revision)`, [ids, revisions]);
        return redacted.rowCount ?? 0;
      });
    },

    async now() {
      return (await db.query<{ now: number }>('Reading the database clock', `SELECT ${NOW_MS} AS now`))[0]!.now;
    },

    async rowCounts() {
      return {
        runs: await count(t.runs), blobs: await count(t.blobs), blobRecords: await count(t.records),
        blobRefs: await count(t.refs), forgotten: await count(t.forgotten),
      };
    },
  };
}

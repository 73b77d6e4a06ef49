/**
 * The one-statement save of the PostgreSQL V3 store: when this store object
 * committed the run's previous revision, and the step only adds rows (no
 * transcript trim, no receipt replacement, no step row rewritten) and points
 * to no package this object's last save did not already point to, the save
 * is a single statement, one round trip, atomic on its own: a
 * compare-and-swap on the run's row (revision n - 1, scope, the digests of
 * its other rows that save left, the lease on the database clock) that
 * writes the step's head, transcript, receipt and step rows only if it
 * matched. No package is written or looked up, so neither the blob lock nor
 * the run lock is needed: the row lock of the UPDATE orders it against a
 * locked save (which reads the row FOR UPDATE). No row changed: the save goes
 * the locked way, which finds out why.
 */
import type { AgentRunEnvelopeV3 } from './envelope.js';
import type { SavePlan } from '../stores/write-plan.js';
import type { StepPlan } from './store-steps.js';
import { statementName } from '../stores/postgres/sql.js';
import type { Lease } from '../stores/types.js';

/** ms since the epoch on the database clock, as the statements read it. */
export const NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::double precision';

export interface FastTables {
  runs: string;
  steps: string;
  messages: string;
  receipts: string;
  leases: string;
}

/** The statement (with and without a receipt DELETE), prepared once per connection by its name. */
export function fastSaveStatements(t: FastTables) {
  const text = (withGone: boolean, withLease: boolean) => `
    WITH run AS (
      UPDATE ${t.runs} AS r SET status = $3, revision = $4, binding_id = $5, updated_at = ${NOW_MS},
        pending_approvals = $6, pending_client_calls = $7, transcript_length = $8, transcript_digest = $9,
        receipts_digest = $10, head = $11, context_steps = $12
      WHERE r.run_id = $1 AND r.revision = $4 - 1 AND r.scope = $2 AND r.transcript_digest = $13 AND r.receipts_digest = $14
        AND ${withLease ? `EXISTS (SELECT 1 FROM ${t.leases} l WHERE l.key = $15 AND l.owner = $16 AND l.token = $17::bigint AND l.expires_at > clock_timestamp())` : '$15::text IS NULL AND $16::text IS NULL AND $17::bigint IS NULL'}
      RETURNING r.run_id, r.revision
    ), steps AS (
      INSERT INTO ${t.steps} (run_id, idx, body) SELECT run.run_id, s.idx, s.body FROM run, unnest($18::int[], $19::text[]) AS s(idx, body)
    ), messages AS (
      INSERT INTO ${t.messages} (run_id, idx, body, revision)
      SELECT run.run_id, m.idx, m.body, run.revision FROM run, unnest($20::int[], $21::bytea[]) AS m(idx, body)
      ON CONFLICT (run_id, idx) DO UPDATE SET body = excluded.body, revision = excluded.revision
    ), receipts AS (
      INSERT INTO ${t.receipts} (run_id, key, model_step, body, revision)
      SELECT run.run_id, x.key, x.model_step, x.body, run.revision FROM run, unnest($22::text[], $23::int[], $24::bytea[]) AS x(key, model_step, body)
      ON CONFLICT (run_id, key) DO UPDATE SET model_step = excluded.model_step, body = excluded.body, revision = excluded.revision
    )${withGone ? `, gone AS (
      DELETE FROM ${t.receipts} WHERE run_id = $1 AND key = ANY($25::text[]) AND EXISTS (SELECT FROM run)
    )` : ''}
    SELECT count(*)::integer AS updated FROM run`;
  const named = (s: string) => ({ text: s, name: statementName(s) });
  return {
    plain: named(text(false, false)), gone: named(text(true, false)),
    leased: named(text(false, true)), leasedGone: named(text(true, true)),
  };
}

export type FastSaveStatements = ReturnType<typeof fastSaveStatements>;

/** The statement and its values for a save that `plan` and `stepPlan` describe, or null when the one-statement way does not apply. */
export function fastSaveQuery(
  sql: FastSaveStatements, envelope: AgentRunEnvelopeV3, plan: SavePlan, stepPlan: StepPlan, steps: readonly unknown[] | null,
  last: { transcriptDigest: Uint8Array | null; receiptsDigest: Uint8Array | null },
  lease: Lease | null,
): { name: string; text: string; values: unknown[] } | null {
  if (plan.trimMessagesFrom !== null || plan.replaceReceipts || stepPlan.deleteFrom !== null) return null;
  if (last.transcriptDigest === null || last.receiptsDigest === null) return null;
  const gone = plan.deleteReceipts.length > 0;
  const values: unknown[] = [
    envelope.runId, envelope.scope, envelope.status, envelope.revision, envelope.bindingId ?? null,
    envelope.pendingApprovals?.length ?? 0, envelope.pendingClientCalls?.length ?? 0,
    plan.next.index!.length, plan.next.transcriptDigest, plan.next.receiptsDigest, plan.head, steps === null ? null : steps.length,
    last.transcriptDigest, last.receiptsDigest,
    lease?.key ?? null, lease?.owner ?? null, lease?.token ?? null,
    stepPlan.rows.map((r) => r.idx), stepPlan.rows.map((r) => r.body),
    plan.messages.map((m) => m.index), plan.messages.map((m) => Buffer.from(m.bytes)),
    plan.receipts.map((r) => r.key), plan.receipts.map((r) => r.modelStep), plan.receipts.map((r) => Buffer.from(r.bytes)),
  ];
  if (gone) values.push(plan.deleteReceipts);
  const statement = lease ? (gone ? sql.leasedGone : sql.leased) : (gone ? sql.gone : sql.plain);
  return { ...statement, values };
}

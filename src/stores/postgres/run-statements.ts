/**
 * The SQL of the PostgreSQL run store, over one schema's tables. Every save
 * statement is prepared once per connection (see statementName): the
 * engine's saves then cost the server a bind and an execution.
 */
import type { OpsTables } from './migrations.js';
import { statementName } from './sql.js';

export function runStatements(t: OpsTables) {
  const leaseHeld = `($LK::text IS NULL OR EXISTS (
    SELECT 1 FROM ${t.leases} l WHERE l.key = $LK AND l.owner = $LO AND l.token = $LT AND l.expires_at > now()))`;
  /** The lease condition over parameters n (key), n + 1 (owner), n + 2 (token); a null key holds. */
  const leaseAt = (n: number) => leaseHeld.replaceAll('$LK', `$${n}`).replaceAll('$LO', `$${n + 1}`).replaceAll('$LT', `$${n + 2}::bigint`);

  // The column the at-rest indexes read (migration 10): the save's updated_at for a run at rest, NULL for a running
  // run, so a running run's save leaves it as it was (and every indexed column with it).
  const restedAt = (status: string, updatedAt: string) => `CASE WHEN ${status}::text <> 'running' THEN ${updatedAt}::float8 END`;

  // The row writes, from array parameters n, n + 1 (, n + 2), for run $1; inside a save's single statement
  // (`afterRun`), for the run's row the statement wrote, so no row is written if it wrote none.
  // Each row keeps the revision of the save that wrote it: the run row's, as this statement (or, the locked way, this transaction) wrote it.
  const source = (afterRun: boolean) => (afterRun
    ? { runId: 'run.run_id', revision: 'run.revision', from: 'run, ' }
    : { runId: '$1', revision: `(SELECT revision FROM ${t.runs} WHERE run_id = $1)`, from: '' });
  const insertMessagesAt = (n: number, afterRun: boolean) => {
    const { runId, revision, from } = source(afterRun);
    return `
    INSERT INTO ${t.messages} (run_id, idx, body, revision)
    SELECT ${runId}, x.idx, x.body, ${revision} FROM ${from}unnest($${n}::integer[], $${n + 1}::bytea[]) AS x (idx, body)`;
  };
  const insertReceiptsAt = (n: number, afterRun: boolean, upsert: boolean) => {
    const { runId, revision, from } = source(afterRun);
    return `
    INSERT INTO ${t.receipts} (run_id, key, model_step, body, revision)
    SELECT ${runId}, x.key, x.model_step, x.body, ${revision} FROM ${from}unnest($${n}::text[], $${n + 1}::integer[], $${n + 2}::bytea[]) AS x (key, model_step, body)${upsert ? `
    ON CONFLICT (run_id, key) DO UPDATE SET model_step = EXCLUDED.model_step, body = EXCLUDED.body, revision = EXCLUDED.revision` : ''}`;
  };

  // The first save, in one statement: the run's row, then (only if it was
  // inserted) its messages and receipts. ON CONFLICT DO NOTHING: no row
  // inserted means the run exists.
  const insertRun = `
    WITH run AS (
      INSERT INTO ${t.runs} (run_id, scope, status, revision, binding_id, created_at, updated_at,
        pending_approvals, pending_client_calls, head, transcript_length, transcript_digest, receipts_digest, settled_step, rested_at)
      SELECT $1::text, $2::text, $3::text, $4::integer, $5::text, $6::float8, $7::float8, $8::integer, $9::integer,
        $10::bytea, $11::integer, $12::bytea, $13::bytea, $14::integer, ${restedAt('$3', '$7')}
      WHERE ${leaseAt(15)}
      ON CONFLICT (run_id) DO NOTHING
      RETURNING run_id, revision
    ), messages AS (${insertMessagesAt(18, true)}
    ), receipts AS (${insertReceiptsAt(20, true, false)}
    )
    SELECT count(*)::integer AS inserted FROM run`;

  // A later save in one statement, when this store object wrote the run's
  // previous revision and so knows what its rows hold: the compare-and-swap
  // checks every column about the other rows against what that save left,
  // and the rows are written only if it matched. No row changed: another
  // writer, a lost lease or a conflict, and the save goes the locked way,
  // which finds out which. The DELETE is there only when the save has rows
  // to take out: even one that deletes nothing scans the run's receipt rows.
  const fastSaveText = (withGone: boolean) => `
    WITH run AS (
      UPDATE ${t.runs} AS r SET status = $3, revision = $4, binding_id = $5, updated_at = $6,
        pending_approvals = $7, pending_client_calls = $8, head = $9,
        transcript_length = $13, transcript_digest = $14, receipts_digest = $15, settled_step = $16, rested_at = ${restedAt('$3', '$6')}
      WHERE r.run_id = $1 AND r.revision = $4 - 1 AND r.scope = $2 AND ${leaseAt(10)}
        AND r.transcript_length = $17 AND r.transcript_digest = $18 AND r.receipts_digest = $19 AND r.settled_step = $20
      RETURNING r.run_id, r.revision
    ), messages AS (${insertMessagesAt(21, true)}
    ), receipts AS (${insertReceiptsAt(23, true, true)}
    )${withGone ? `, gone AS (
      DELETE FROM ${t.receipts} WHERE run_id = $1 AND key = ANY($26::text[]) AND EXISTS (SELECT FROM run)
    )` : ''}
    SELECT count(*)::integer AS updated FROM run`;

  // The locked way: the run's row, locked until the transaction ends, with whether the lease is held. NO KEY UPDATE:
  // the update changes no key, so a transaction that only holds a key share of the row (a child row it inserts) does not block it.
  const lockRun = `
    SELECT scope, revision, transcript_digest, receipts_digest, head, ${leaseAt(2)} AS held
    FROM ${t.runs} WHERE run_id = $1 FOR NO KEY UPDATE`;
  const openReceipts = `SELECT key, sha256(body) AS sha FROM ${t.receipts} WHERE run_id = $1 AND model_step >= $2`;
  const updateRun = `
    UPDATE ${t.runs} SET status = $2, revision = $3, binding_id = $4, updated_at = $5,
      pending_approvals = $6, pending_client_calls = $7, head = $8,
      transcript_length = $9, transcript_digest = $10, receipts_digest = $11, settled_step = $12, rested_at = ${restedAt('$2', '$5')}
    WHERE run_id = $1`;
  const trimMessages = `DELETE FROM ${t.messages} WHERE run_id = $1 AND idx >= $2`;
  const putMessages = insertMessagesAt(2, false);
  const deleteAllReceipts = `DELETE FROM ${t.receipts} WHERE run_id = $1`;
  const deleteReceipts = `DELETE FROM ${t.receipts} WHERE run_id = $1 AND key = ANY($2::text[])`;
  const putReceipts = insertReceiptsAt(2, false, true);

  // Why a first save changed nothing.
  const afterMiss = `
    SELECT (SELECT revision FROM ${t.runs} WHERE run_id = $1) AS revision,
           (SELECT scope FROM ${t.runs} WHERE run_id = $1) AS scope,
           ${leaseAt(2)} AS held`;

  // One statement reads one snapshot: head, messages and receipts agree.
  // For another scope's run the database sends no data, only the scope.
  // Every row comes back as a row of its own (the head first, then the
  // transcript by index, then the receipts by key): many small fields, each
  // parsed on its own. Packing them into one large value made pg gather a
  // message of megabytes from the socket's chunks, copying it again with each
  // chunk (a 1,000-step run read in 32 ms packed, in 9.6 ms as rows).
  // The bodies come as base64 text, not as bytea: pg reads a bytea as hex text (two characters a byte) and decodes
  // it into a Buffer, and base64 is a third fewer characters and decodes in half the time (about 1.8 ms instead of
  // 3.8 ms for the 1 MB of a 1,000-step run's rows). The database's base64 breaks a line every 76 characters, which
  // Buffer.from skips. Read with rowMode 'array' (see LoadRow in run-store.ts).
  const load = `
    WITH r AS (SELECT * FROM ${t.runs} WHERE run_id = $1), ok AS (SELECT $2::text IS NULL OR r.scope = $2::text AS ok FROM r)
    SELECT 0 AS part, 0 AS idx, NULL::text AS key, NULL::integer AS row_revision,
      r.scope, r.revision, r.transcript_digest, r.receipts_digest, CASE WHEN ok.ok THEN encode(r.head, 'base64') END AS body
    FROM r, ok
    UNION ALL SELECT 1, idx, NULL, revision, NULL, NULL, NULL, NULL, encode(body, 'base64') FROM ${t.messages} WHERE run_id = $1 AND (SELECT ok FROM ok)
    UNION ALL SELECT 2, 0, key, revision, NULL, NULL, NULL, NULL, encode(body, 'base64') FROM ${t.receipts} WHERE run_id = $1 AND (SELECT ok FROM ok)
    ORDER BY part, idx, key`;

  const named = (text: string) => ({ text, name: statementName(text) });
  return {
    insertRun: named(insertRun),
    fastSave: named(fastSaveText(false)),
    fastSaveGone: named(fastSaveText(true)),
    lockRun: named(lockRun),
    openReceipts: named(openReceipts),
    updateRun: named(updateRun),
    trimMessages: named(trimMessages),
    putMessages: named(putMessages),
    deleteAllReceipts: named(deleteAllReceipts),
    deleteReceipts: named(deleteReceipts),
    putReceipts: named(putReceipts),
    afterMiss,
    load: named(load),
  };
}

export type RunStatements = ReturnType<typeof runStatements>;

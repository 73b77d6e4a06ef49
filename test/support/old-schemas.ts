/**
 * Takes an ops store of the current schema back to how an older Cairn left
 * it, for the migration tests: a file (or schema) saved to by this code, then
 * given the shape of an earlier version with its rows as they are.
 */

/**
 * Undoes SQLite migration 5 (the rows' revision columns and the at-rest
 * indexes): the tables are then as migration 1 made them. Run before deleting
 * the version rows of migration 5 and later.
 */
export const SQLITE_BEFORE_5 = [
  'DROP INDEX cairn_runs_at_rest_by_update',
  'DROP INDEX cairn_runs_at_rest_by_status',
  'DROP INDEX cairn_runs_at_rest_by_scope',
  'DROP INDEX cairn_runs_running',
  'CREATE INDEX cairn_runs_by_update ON cairn_runs (updated_at DESC, run_id DESC)',
  'CREATE INDEX cairn_runs_by_status ON cairn_runs (status, updated_at)',
  'CREATE INDEX cairn_runs_by_scope ON cairn_runs (scope, updated_at DESC, run_id DESC)',
  'ALTER TABLE cairn_run_messages DROP COLUMN revision',
  'ALTER TABLE cairn_run_receipts DROP COLUMN revision',
].join(';\n');

/**
 * Copies one run's rows from a schema of the current version into an older
 * schema (`into`), in the columns both have: the run as an older Cairn wrote it.
 */
export async function copyRunRows(sql: (text: string, values?: unknown[]) => Promise<unknown>, from: string, into: string, runId: string) {
  const runs = 'run_id, scope, status, revision, binding_id, created_at, updated_at, pending_approvals, pending_client_calls, head, transcript_length, transcript_digest, receipts_digest, settled_step';
  await sql(`INSERT INTO "${into}".cairn_runs (${runs}) SELECT ${runs} FROM "${from}".cairn_runs WHERE run_id = $1`, [runId]);
  await sql(`INSERT INTO "${into}".cairn_run_messages (run_id, idx, body) SELECT run_id, idx, body FROM "${from}".cairn_run_messages WHERE run_id = $1`, [runId]);
  await sql(`INSERT INTO "${into}".cairn_run_receipts (run_id, key, model_step, body) SELECT run_id, key, model_step, body FROM "${from}".cairn_run_receipts WHERE run_id = $1`, [runId]);
}

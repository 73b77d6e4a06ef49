/**
 * The V3 run tables on SQLite, with a migration chain and a version table of
 * their own (`cairn_runs_v3_schema`): the ops tables and `cairn_ops_schema`
 * are never touched, so a Cairn that knows no V3 runs still opens the file,
 * and its run listing and pruning never see a V3 run. Append-only:
 * `V3_MIGRATIONS[N - 1]` brings the tables to version N.
 */
import type Database from 'better-sqlite3';
import { V3SchemaVersionError } from './store-errors.js';

export const V3_MIGRATIONS: readonly (readonly string[])[] = [
  // 1: runs as the ops run store keeps them (a head row with the summary columns and the digests of the run's other
  // rows, transcript rows appended one per message, receipt rows upserted: see src/stores/write-plan.ts), their
  // context steps one row each (context_steps NULL for a run without context), packages
  // (content JSON, NULL once redacted), the memory records each package holds, which runs point to which packages,
  // and the forgotten record revisions.
  [
    `CREATE TABLE cairn_runs_v3 (
  run_id               TEXT    PRIMARY KEY,
  scope                TEXT    NOT NULL,
  status               TEXT    NOT NULL,
  revision             INTEGER NOT NULL,
  binding_id           TEXT,
  created_at           INTEGER NOT NULL,
  updated_at           INTEGER NOT NULL,
  pending_approvals    INTEGER NOT NULL,
  pending_client_calls INTEGER NOT NULL,
  transcript_length    INTEGER NOT NULL,
  context_steps        INTEGER,
  transcript_digest    BLOB    NOT NULL,
  receipts_digest      BLOB    NOT NULL,
  head                 BLOB    NOT NULL
)`,
    `CREATE TABLE cairn_runs_v3_messages (
  run_id   TEXT    NOT NULL REFERENCES cairn_runs_v3 (run_id) ON DELETE CASCADE,
  idx      INTEGER NOT NULL,
  body     BLOB    NOT NULL,
  revision INTEGER NOT NULL,
  PRIMARY KEY (run_id, idx)
)`,
    `CREATE TABLE cairn_runs_v3_steps (
  run_id TEXT    NOT NULL REFERENCES cairn_runs_v3 (run_id) ON DELETE CASCADE,
  idx    INTEGER NOT NULL,
  body   TEXT    NOT NULL,
  PRIMARY KEY (run_id, idx)
)`,
    `CREATE TABLE cairn_runs_v3_receipts (
  run_id      TEXT    NOT NULL REFERENCES cairn_runs_v3 (run_id) ON DELETE CASCADE,
  receipt_key TEXT    NOT NULL,
  model_step  INTEGER NOT NULL,
  body        BLOB    NOT NULL,
  revision    INTEGER NOT NULL,
  PRIMARY KEY (run_id, receipt_key)
)`,
    'CREATE INDEX cairn_runs_v3_by_update ON cairn_runs_v3 (updated_at DESC, run_id DESC)',
    'CREATE INDEX cairn_runs_v3_by_status ON cairn_runs_v3 (status, updated_at)',
    `CREATE TABLE cairn_runs_v3_blobs (
  digest      TEXT    PRIMARY KEY,
  content     TEXT,
  bytes       INTEGER NOT NULL,
  created_at  INTEGER NOT NULL,
  redacted_at INTEGER
)`,
    `CREATE TABLE cairn_runs_v3_blob_records (
  digest    TEXT    NOT NULL REFERENCES cairn_runs_v3_blobs (digest) ON DELETE CASCADE,
  record_id TEXT    NOT NULL,
  revision  INTEGER NOT NULL,
  PRIMARY KEY (digest, record_id, revision)
)`,
    'CREATE INDEX cairn_runs_v3_blob_records_by_record ON cairn_runs_v3_blob_records (record_id, revision)',
    `CREATE TABLE cairn_runs_v3_blob_refs (
  run_id TEXT NOT NULL REFERENCES cairn_runs_v3 (run_id) ON DELETE CASCADE,
  digest TEXT NOT NULL REFERENCES cairn_runs_v3_blobs (digest),
  PRIMARY KEY (run_id, digest)
)`,
    'CREATE INDEX cairn_runs_v3_blob_refs_by_digest ON cairn_runs_v3_blob_refs (digest)',
    `CREATE TABLE cairn_runs_v3_forgotten (
  record_id    TEXT    NOT NULL,
  revision     INTEGER NOT NULL,
  forgotten_at INTEGER NOT NULL,
  PRIMARY KEY (record_id, revision)
)`,
  ],
  // 2: a run's context steps keyed by one integer, the run's number (a new column of cairn_runs_v3, given once, never
  // changed) times 2^32 plus the step's index, instead of (run_id, idx): the rows are the table's own b-tree, with no
  // second index beside it, so a step's row changes one leaf instead of two (in the bench loop 14.2 WAL frames a
  // commit down to 13.5). A run's step rows are deleted with the run by the store (prune), not by a foreign key.
  [
    'ALTER TABLE cairn_runs_v3 ADD COLUMN run_no INTEGER',
    'UPDATE cairn_runs_v3 SET run_no = rowid',
    'CREATE UNIQUE INDEX cairn_runs_v3_by_no ON cairn_runs_v3 (run_no)',
    `CREATE TABLE cairn_runs_v3_step_rows (
  step_key INTEGER PRIMARY KEY,
  body     TEXT    NOT NULL
)`,
    `INSERT INTO cairn_runs_v3_step_rows (step_key, body)
SELECT r.run_no * 4294967296 + s.idx, s.body FROM cairn_runs_v3_steps s JOIN cairn_runs_v3 r ON r.run_id = s.run_id`,
    'DROP TABLE cairn_runs_v3_steps',
    'ALTER TABLE cairn_runs_v3_step_rows RENAME TO cairn_runs_v3_steps',
  ],
  // 3: a running run's save writes no index of the runs table, as the ops runs table since its migration 5: the list
  // and prune indexes hold runs at rest only (a save changes updated_at, and each index on it took a write at every
  // commit), and running runs are found through an index of their scope, which their saves never change.
  [
    'DROP INDEX cairn_runs_v3_by_update',
    'DROP INDEX cairn_runs_v3_by_status',
    "CREATE INDEX cairn_runs_v3_at_rest_by_update ON cairn_runs_v3 (updated_at DESC, run_id DESC) WHERE status <> 'running'",
    "CREATE INDEX cairn_runs_v3_at_rest_by_status ON cairn_runs_v3 (status, updated_at) WHERE status <> 'running'",
    "CREATE INDEX cairn_runs_v3_running ON cairn_runs_v3 (scope) WHERE status = 'running'",
  ],
  // 4: a running run's row is padded with zeros (pad) to a size class, so that it keeps its size from save to save and
  // SQLite overwrites it in place instead of taking new overflow pages (see src/v3/sqlite-pad.ts); NULL at rest.
  ['ALTER TABLE cairn_runs_v3 ADD COLUMN pad BLOB'],
];

/** How far apart two runs' step keys are: a run's step `idx` is stored under `run_no * STEP_KEY_SPAN + idx`. */
export const STEP_KEY_SPAN = 4294967296;

/** The version of the V3 tables this code writes and reads. */
export const V3_SCHEMA_VERSION = V3_MIGRATIONS.length;

/**
 * The V3 tables' version on this connection (0: none yet).
 * @internal Takes a better-sqlite3 handle, whose types stay out of the published declarations.
 */
export function v3SchemaVersion(db: Database.Database): number {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cairn_runs_v3_schema'").get();
  if (!table) return 0;
  return (db.prepare('SELECT MAX(version) AS version FROM cairn_runs_v3_schema').get() as { version: number | null }).version ?? 0;
}

/**
 * Creates or migrates the V3 tables in one IMMEDIATE transaction; a newer version is refused untouched.
 * @internal Takes a better-sqlite3 handle, whose types stay out of the published declarations.
 */
export function migrateV3(db: Database.Database): void {
  const apply = db.transaction(() => {
    const current = v3SchemaVersion(db);
    if (current > V3_SCHEMA_VERSION) throw new V3SchemaVersionError('sqlite', current, V3_SCHEMA_VERSION);
    if (current === V3_SCHEMA_VERSION) return;
    db.exec(`CREATE TABLE IF NOT EXISTS cairn_runs_v3_schema (
  version    INTEGER PRIMARY KEY,
  applied_at INTEGER NOT NULL
)`);
    const record = db.prepare('INSERT INTO cairn_runs_v3_schema (version, applied_at) VALUES (?, ?)');
    for (let version = current + 1; version <= V3_SCHEMA_VERSION; version++) {
      for (const statement of V3_MIGRATIONS[version - 1]!) db.exec(statement);
      // Wall time on purpose: when the file was upgraded, not a run's time.
      record.run(version, Date.now());
    }
  });
  apply.immediate();
}

/**
 * The versioned memory tables on SQLite (`cairn_memory_v_*`), with a
 * migration chain and a version table of their own
 * (`cairn_memory_versioned_schema`): the ops tables, `cairn_ops_schema` and
 * the V3 run tables are never touched. Append-only:
 * `VERSIONED_MEMORY_MIGRATIONS[N - 1]` brings the tables to version N.
 */
import type Database from 'better-sqlite3';
import { VersionedMemorySchemaError } from './checks.js';

export const VERSIONED_MEMORY_MIGRATIONS: readonly (readonly string[])[] = [
  // 1: each scope's revision (scope_key is memoryScopeKey of the exact scope); each record's place (the commit that
  // added it and its position in that commit) and its latest revision and status; every revision of every record
  // (text NULL once forgotten; sources JSON of message ids); the receipts (JSON of ids and numbers, no text); the
  // forget rows (ids and revisions, no text), in the order they were written (rowid).
  [
    `CREATE TABLE cairn_memory_v_scopes (
  scope_key TEXT    PRIMARY KEY,
  revision  INTEGER NOT NULL
)`,
    `CREATE TABLE cairn_memory_v_records (
  scope_key       TEXT    NOT NULL,
  record_id       TEXT    NOT NULL,
  first_revision  INTEGER NOT NULL,
  position        INTEGER NOT NULL,
  latest_revision INTEGER NOT NULL,
  status          TEXT    NOT NULL,
  PRIMARY KEY (scope_key, record_id)
)`,
    'CREATE INDEX cairn_memory_v_records_by_place ON cairn_memory_v_records (scope_key, first_revision, position)',
    `CREATE TABLE cairn_memory_v_revisions (
  scope_key    TEXT    NOT NULL,
  record_id    TEXT    NOT NULL,
  revision     INTEGER NOT NULL,
  text         TEXT,
  origin       TEXT    NOT NULL,
  sources      TEXT    NOT NULL,
  status       TEXT    NOT NULL,
  operation_id TEXT    NOT NULL,
  created_at   REAL    NOT NULL,
  updated_at   REAL    NOT NULL,
  PRIMARY KEY (scope_key, record_id, revision)
)`,
    `CREATE TABLE cairn_memory_v_receipts (
  scope_key      TEXT NOT NULL,
  operation_id   TEXT NOT NULL,
  request_digest TEXT NOT NULL,
  body           TEXT NOT NULL,
  PRIMARY KEY (scope_key, operation_id)
)`,
    `CREATE TABLE cairn_memory_v_forgotten (
  scope_key    TEXT    NOT NULL,
  record_id    TEXT    NOT NULL,
  revision     INTEGER NOT NULL,
  forgotten_at REAL    NOT NULL,
  PRIMARY KEY (scope_key, record_id, revision)
)`,
  ],
];

/** The version of the versioned memory tables this code writes and reads. */
export const VERSIONED_MEMORY_SCHEMA_VERSION = VERSIONED_MEMORY_MIGRATIONS.length;

/**
 * The tables' version on this connection (0: none yet).
 * @internal Takes a better-sqlite3 handle, whose types stay out of the published declarations.
 */
export function versionedMemorySchemaVersion(db: Database.Database): number {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cairn_memory_versioned_schema'").get();
  if (!table) return 0;
  return (db.prepare('SELECT MAX(version) AS version FROM cairn_memory_versioned_schema').get() as { version: number | null }).version ?? 0;
}

/**
 * Creates or migrates the tables in one IMMEDIATE transaction; a newer version is refused untouched.
 * @internal Takes a better-sqlite3 handle, whose types stay out of the published declarations.
 */
export function migrateVersionedMemory(db: Database.Database): void {
  const apply = db.transaction(() => {
    const current = versionedMemorySchemaVersion(db);
    if (current > VERSIONED_MEMORY_SCHEMA_VERSION) throw new VersionedMemorySchemaError('sqlite', current, VERSIONED_MEMORY_SCHEMA_VERSION);
    if (current === VERSIONED_MEMORY_SCHEMA_VERSION) return;
    db.exec(`CREATE TABLE IF NOT EXISTS cairn_memory_versioned_schema (
  version    INTEGER PRIMARY KEY,
  applied_at INTEGER NOT NULL
)`);
    const record = db.prepare('INSERT INTO cairn_memory_versioned_schema (version, applied_at) VALUES (?, ?)');
    for (let version = current + 1; version <= VERSIONED_MEMORY_SCHEMA_VERSION; version++) {
      for (const statement of VERSIONED_MEMORY_MIGRATIONS[version - 1]!) db.exec(statement);
      // Wall time on purpose: when the file was upgraded, not a commit's time.
      record.run(version, Date.now());
    }
  });
  apply.immediate();
}

/**
 * The V3 run tables on PostgreSQL, with their own migration chain and
 * version table (`cairn_runs_v3_schema`): `cairn_ops_schema` and the ops
 * tables are never touched. Append-only: `V3_PG_MIGRATIONS[N - 1]` brings the
 * tables to version N. The statements name tables unqualified; setup() runs
 * them with the store's schema as the search path.
 */
import type { Db } from '../stores/postgres/sql.js';
import { V3SchemaVersionError } from './store-errors.js';

export const V3_PG_MIGRATIONS: readonly (readonly string[])[] = [
  // 1: runs as the ops run store keeps them (a head row with the digests of the run's other rows, transcript rows
  // appended, receipt rows upserted, context steps as rows of their own), packages (content JSON text, NULL once redacted), the memory records each
  // holds, which runs point to which packages, and the forgotten record revisions. Times are ms on the database clock.
  [
    `CREATE TABLE cairn_runs_v3 (
  run_id               text             PRIMARY KEY,
  scope                text             NOT NULL,
  status               text             NOT NULL,
  revision             integer          NOT NULL,
  binding_id           text,
  created_at           double precision NOT NULL,
  updated_at           double precision NOT NULL,
  pending_approvals    integer          NOT NULL,
  pending_client_calls integer          NOT NULL,
  transcript_length    integer          NOT NULL,
  context_steps        integer,
  transcript_digest    bytea            NOT NULL,
  receipts_digest      bytea            NOT NULL,
  head                 bytea            NOT NULL
)`,
    `CREATE TABLE cairn_runs_v3_messages (
  run_id   text    NOT NULL REFERENCES cairn_runs_v3 (run_id) ON DELETE CASCADE,
  idx      integer NOT NULL,
  body     bytea   NOT NULL,
  revision integer NOT NULL,
  PRIMARY KEY (run_id, idx)
)`,
    `CREATE TABLE cairn_runs_v3_steps (
  run_id text    NOT NULL REFERENCES cairn_runs_v3 (run_id) ON DELETE CASCADE,
  idx    integer NOT NULL,
  body   text    NOT NULL,
  PRIMARY KEY (run_id, idx)
)`,
    `CREATE TABLE cairn_runs_v3_receipts (
  run_id     text    NOT NULL REFERENCES cairn_runs_v3 (run_id) ON DELETE CASCADE,
  key        text    NOT NULL,
  model_step integer NOT NULL,
  body       bytea   NOT NULL,
  revision   integer NOT NULL,
  PRIMARY KEY (run_id, key)
)`,
    'CREATE INDEX cairn_runs_v3_by_update ON cairn_runs_v3 (updated_at DESC, run_id DESC)',
    'CREATE INDEX cairn_runs_v3_by_status ON cairn_runs_v3 (status, updated_at)',
    `CREATE TABLE cairn_runs_v3_blobs (
  digest      text             PRIMARY KEY,
  content     text,
  bytes       integer          NOT NULL,
  created_at  double precision NOT NULL,
  redacted_at double precision
)`,
    `CREATE TABLE cairn_runs_v3_blob_records (
  digest    text    NOT NULL REFERENCES cairn_runs_v3_blobs (digest) ON DELETE CASCADE,
  record_id text    NOT NULL,
  revision  integer NOT NULL,
  PRIMARY KEY (digest, record_id, revision)
)`,
    'CREATE INDEX cairn_runs_v3_blob_records_by_record ON cairn_runs_v3_blob_records (record_id, revision)',
    `CREATE TABLE cairn_runs_v3_blob_refs (
  run_id text NOT NULL REFERENCES cairn_runs_v3 (run_id) ON DELETE CASCADE,
  digest text NOT NULL REFERENCES cairn_runs_v3_blobs (digest),
  PRIMARY KEY (run_id, digest)
)`,
    'CREATE INDEX cairn_runs_v3_blob_refs_by_digest ON cairn_runs_v3_blob_refs (digest)',
    `CREATE TABLE cairn_runs_v3_forgotten (
  record_id    text             NOT NULL,
  revision     integer          NOT NULL,
  forgotten_at double precision NOT NULL,
  PRIMARY KEY (record_id, revision)
)`,
  ],
];

export const V3_PG_SCHEMA_VERSION = V3_PG_MIGRATIONS.length;

/**
 * Creates the schema if needed and applies the missing V3 migrations, all or none, under an advisory lock.
 * @internal Takes the store's connection, whose pg types stay out of the published declarations.
 */
export async function migrateV3Postgres(db: Db, quotedSchema: string): Promise<void> {
  await db.transaction(`Setting up the V3 run tables in "${db.schema}"`, 'BEGIN ISOLATION LEVEL READ COMMITTED', async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`cairn_runs_v3_schema:${db.schema}`]);
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [db.schema]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${quotedSchema}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${quotedSchema}.cairn_runs_v3_schema (
  version    integer     PRIMARY KEY,
  applied_at timestamptz NOT NULL DEFAULT now()
)`);
    const { rows } = await client.query<{ version: number }>(`SELECT coalesce(max(version), 0) AS version FROM ${quotedSchema}.cairn_runs_v3_schema`);
    const current = rows[0]!.version;
    if (current > V3_PG_SCHEMA_VERSION) throw new V3SchemaVersionError('postgres', current, V3_PG_SCHEMA_VERSION);
    if (current === V3_PG_SCHEMA_VERSION) return;
    await client.query(`SET LOCAL search_path TO ${quotedSchema}`);
    for (let version = current + 1; version <= V3_PG_SCHEMA_VERSION; version += 1) {
      for (const statement of V3_PG_MIGRATIONS[version - 1]!) await client.query(statement);
      await client.query(`INSERT INTO ${quotedSchema}.cairn_runs_v3_schema (version) VALUES ($1)`, [version]);
    }
  });
}

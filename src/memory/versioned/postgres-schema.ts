/**
 * The versioned memory tables on PostgreSQL (`cairn_memory_v_*`), with their
 * own migration chain and version table (`cairn_memory_versioned_schema`):
 * the ops tables, `cairn_ops_schema` and the V3 run tables are never touched.
 * Append-only: `VERSIONED_MEMORY_PG_MIGRATIONS[N - 1]` brings the tables to
 * version N. The statements name tables unqualified; setup() runs them with
 * the store's schema as the search path.
 */
import type { Db } from '../../stores/postgres/sql.js';
import { VersionedMemorySchemaError } from './checks.js';

export const VERSIONED_MEMORY_PG_MIGRATIONS: readonly (readonly string[])[] = [
  // 1: as on SQLite (sqlite-schema.ts): each scope's revision (its row is what a commit locks), each record's place
  // and latest revision, every revision (text NULL once forgotten), the receipts (JSON text of ids and numbers) and
  // the forget rows in the order they were written (seq). Times are ms on the writer's clock (the caller's `at`).
  [
    `CREATE TABLE cairn_memory_v_scopes (
  scope_key text    PRIMARY KEY,
  revision  integer NOT NULL
)`,
    `CREATE TABLE cairn_memory_v_records (
  scope_key       text    NOT NULL,
  record_id       text    NOT NULL,
  first_revision  integer NOT NULL,
  position        integer NOT NULL,
  latest_revision integer NOT NULL,
  status          text    NOT NULL,
  PRIMARY KEY (scope_key, record_id)
)`,
    'CREATE INDEX cairn_memory_v_records_by_place ON cairn_memory_v_records (scope_key, first_revision, position)',
    `CREATE TABLE cairn_memory_v_revisions (
  scope_key    text             NOT NULL,
  record_id    text             NOT NULL,
  revision     integer          NOT NULL,
  text         text,
  origin       text             NOT NULL,
  sources      text             NOT NULL,
  status       text             NOT NULL,
  operation_id text             NOT NULL,
  created_at   double precision NOT NULL,
  updated_at   double precision NOT NULL,
  PRIMARY KEY (scope_key, record_id, revision)
)`,
    `CREATE TABLE cairn_memory_v_receipts (
  scope_key      text NOT NULL,
  operation_id   text NOT NULL,
  request_digest text NOT NULL,
  body           text NOT NULL,
  PRIMARY KEY (scope_key, operation_id)
)`,
    `CREATE TABLE cairn_memory_v_forgotten (
  seq          bigint           GENERATED ALWAYS AS IDENTITY,
  scope_key    text             NOT NULL,
  record_id    text             NOT NULL,
  revision     integer          NOT NULL,
  forgotten_at double precision NOT NULL,
  PRIMARY KEY (scope_key, record_id, revision)
)`,
  ],
];

export const VERSIONED_MEMORY_PG_SCHEMA_VERSION = VERSIONED_MEMORY_PG_MIGRATIONS.length;

/**
 * Creates the schema if needed and applies the missing migrations, all or none, under an advisory lock.
 * @internal Takes the store's connection, whose pg types stay out of the published declarations.
 */
export async function migrateVersionedMemoryPostgres(db: Db, quotedSchema: string): Promise<void> {
  await db.transaction(`Setting up the versioned memory tables in "${db.schema}"`, 'BEGIN ISOLATION LEVEL READ COMMITTED', async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`cairn_memory_versioned_schema:${db.schema}`]);
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [db.schema]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${quotedSchema}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${quotedSchema}.cairn_memory_versioned_schema (
  version    integer     PRIMARY KEY,
  applied_at timestamptz NOT NULL DEFAULT now()
)`);
    const { rows } = await client.query<{ version: number }>(`SELECT coalesce(max(version), 0) AS version FROM ${quotedSchema}.cairn_memory_versioned_schema`);
    const current = rows[0]!.version;
    if (current > VERSIONED_MEMORY_PG_SCHEMA_VERSION) throw new VersionedMemorySchemaError('postgres', current, VERSIONED_MEMORY_PG_SCHEMA_VERSION);
    if (current === VERSIONED_MEMORY_PG_SCHEMA_VERSION) return;
    await client.query(`SET LOCAL search_path TO ${quotedSchema}`);
    for (let version = current + 1; version <= VERSIONED_MEMORY_PG_SCHEMA_VERSION; version += 1) {
      for (const statement of VERSIONED_MEMORY_PG_MIGRATIONS[version - 1]!) await client.query(statement);
      await client.query(`INSERT INTO ${quotedSchema}.cairn_memory_versioned_schema (version) VALUES ($1)`, [version]);
    }
  });
}

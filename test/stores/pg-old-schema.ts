/**
 * An ops schema as an older Cairn left it, for the PostgreSQL migration tests: migrations 1 to `version` applied in
 * a new schema, then the columns this code's saves write that those migrations lack (the migration that adds
 * each one adds it only where it is missing), so the test can write runs into it with this code.
 */
import pg from 'pg';
import { MIGRATIONS } from 'cairn/ops/postgres';
import type { PostgresTestEnv } from './pg-env.js';

export async function oldOpsSchema(env: PostgresTestEnv, version: number): Promise<string> {
  const schema = env.newSchema();
  const client = new pg.Client({ connectionString: env.url });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA "${schema}"`);
    await client.query(`SET search_path TO "${schema}"`);
    await client.query('CREATE TABLE cairn_ops_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    for (const [i, migration] of MIGRATIONS.slice(0, version).entries()) {
      for (const statement of migration) await client.query(statement);
      await client.query('INSERT INTO cairn_ops_schema (version) VALUES ($1)', [i + 1]);
    }
    // Migration 10's column.
    if (version < 10) await client.query('ALTER TABLE cairn_runs ADD COLUMN rested_at double precision');
  } finally {
    await client.end();
  }
  return schema;
}

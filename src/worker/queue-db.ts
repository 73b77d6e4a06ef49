/**
 * The queue's connection and setup: a pg pool (its own or yours), the few
 * statements every part shares, the dead letters, and setup().
 * Not re-exported by index.ts: its declarations name pg's types.
 */
import pg from 'pg';
import type { Pool, PoolClient } from 'pg';
import { InvalidOptionsError, PersistenceError, redactSecrets } from '../errors/index.js';
import { QueueSchemaVersionError } from './errors.js';
import { GRAPHILE_MIGRATIONS_KNOWN, graphileLogger, loadGraphile } from './graphile.js';
import { QUEUE_MIGRATIONS, QUEUE_SCHEMA_VERSION, type QueueConnection } from './schema.js';
import type { JobPayload } from './payload.js';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

function quoteSchema(schema: string): string {
  if (typeof schema !== 'string' || !IDENTIFIER.test(schema)) {
    throw new InvalidOptionsError(`The queue's schema must be a plain SQL identifier (letters, digits, _; at most 63), got ${JSON.stringify(schema)}.`);
  }
  return `"${schema}"`;
}

/** The queue's connection, schema names and the few statements every part shares. */
export class QueueDb {
  readonly schema: string;
  /** Quoted schema name. */
  readonly q: string;
  /** @internal */
  readonly pool: Pool;
  private readonly owned: boolean;
  private closed = false;

  constructor(connection: QueueConnection, what: string, poolSize = 4) {
    this.schema = connection.schema ?? 'cairn_worker';
    this.q = quoteSchema(this.schema);
    if (connection.pool) {
      this.pool = connection.pool as unknown as Pool;
      this.owned = false;
    } else if (typeof connection.connectionString === 'string' && connection.connectionString !== '') {
      this.pool = new pg.Pool({ connectionString: connection.connectionString, max: poolSize });
      this.pool.on('error', () => undefined);
      this.owned = true;
    } else {
      throw new InvalidOptionsError(`${what} needs { connectionString } or { pool } of the queue's PostgreSQL database.`);
    }
  }

  async query<R extends object>(what: string, text: string, values: unknown[] = []): Promise<R[]> {
    try {
      return (await this.pool.query(text, values)).rows as R[];
    } catch (error) {
      throw new PersistenceError(`${what} failed: ${error instanceof Error ? error.message : String(error)}`, error);
    }
  }

  async transaction<T>(what: string, body: (client: PoolClient) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw new PersistenceError(`${what} failed: ${error instanceof Error ? error.message : String(error)}`, error);
    }
    client.on('error', () => undefined);
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await body(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((e: unknown) => { broken = e instanceof Error ? e : new Error(String(e)); });
      if (error instanceof QueueSchemaVersionError || error instanceof PersistenceError) throw error;
      throw new PersistenceError(`${what} failed: ${error instanceof Error ? error.message : String(error)}`, error);
    } finally {
      client.release(broken);
    }
  }

  /** Adds a job through graphile-worker's `add_job`, due `delayMs` from now on the database clock. Returns its id. */
  async addJob(client: Pick<PoolClient, 'query'> | undefined, payload: unknown, maxAttempts: number, delayMs = 0): Promise<string> {
    const text = `SELECT id::text AS id FROM ${this.q}.add_job('cairn_run', $1::json,
      run_at => now() + $2::float8 * interval '1 millisecond', max_attempts => $3::int)`;
    const values = [JSON.stringify(payload), delayMs, maxAttempts];
    if (client) return ((await client.query(text, values)).rows[0] as { id: string }).id;
    return (await this.query<{ id: string }>('Adding a job to the queue', text, values))[0]!.id;
  }

  async close(): Promise<void> {
    if (!this.owned || this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

/** Refuses a schema a newer Cairn or graphile-worker migrated; reads only. */
async function checkVersions(db: QueueDb, client: Pick<PoolClient, 'query'>): Promise<void> {
  const tables = await client.query(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name IN ('migrations', 'cairn_queue_version')`,
    [db.schema],
  );
  const names = new Set(tables.rows.map((r: { table_name: string }) => r.table_name));
  if (names.has('migrations')) {
    const { rows } = await client.query(`SELECT coalesce(max(id), 0)::int AS id FROM ${db.q}.migrations`);
    const found = (rows[0] as { id: number }).id;
    if (found > GRAPHILE_MIGRATIONS_KNOWN) throw new QueueSchemaVersionError(db.schema, 'graphile-worker', found, GRAPHILE_MIGRATIONS_KNOWN);
  }
  if (names.has('cairn_queue_version')) {
    const { rows } = await client.query(`SELECT coalesce(max(version), 0)::int AS version FROM ${db.q}.cairn_queue_version`);
    const found = (rows[0] as { version: number }).version;
    if (found > QUEUE_SCHEMA_VERSION) throw new QueueSchemaVersionError(db.schema, 'cairn', found, QUEUE_SCHEMA_VERSION);
  }
}

/**
 * Creates or migrates the queue's schema: checks the versions first, then
 * graphile-worker's migrations, then Cairn's tables (one transaction under an
 * advisory lock, so workers starting together migrate once).
 */
export async function setupQueue(db: QueueDb, log: (level: 'info' | 'warning' | 'error', message: string) => void): Promise<void> {
  const client = await db.pool.connect().catch((error: unknown) => {
    throw new PersistenceError(`Setting up the work queue failed: ${error instanceof Error ? error.message : String(error)}`, error);
  });
  client.on('error', () => undefined);
  try {
    await checkVersions(db, client);
  } finally {
    client.release();
  }
  const graphile = await loadGraphile();
  try {
    await graphile.runMigrations({ pgPool: db.pool, schema: db.schema, logger: graphileLogger(graphile, log) });
  } catch (error) {
    throw new PersistenceError(`Migrating the work queue "${db.schema}" failed: ${error instanceof Error ? error.message : String(error)}`, error);
  }
  await db.transaction(`Setting up the work queue "${db.schema}"`, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`cairn_queue_schema:${db.schema}`]);
    await checkVersions(db, tx);
    await tx.query(`CREATE TABLE IF NOT EXISTS ${db.q}.cairn_queue_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await tx.query(`SELECT coalesce(max(version), 0)::int AS version FROM ${db.q}.cairn_queue_version`);
    const current = (rows[0] as { version: number }).version;
    if (current >= QUEUE_SCHEMA_VERSION) return;
    await tx.query(`SET LOCAL search_path TO ${db.q}`);
    for (let version = current + 1; version <= QUEUE_SCHEMA_VERSION; version += 1) {
      for (const statement of QUEUE_MIGRATIONS[version - 1]!) await tx.query(statement);
      await tx.query(`INSERT INTO ${db.q}.cairn_queue_version (version) VALUES ($1)`, [version]);
    }
  });
}

/** Records a job a worker gives up on; a second record of the same job is ignored. */
export async function deadLetter(
  db: QueueDb,
  job: { id: string; payload: unknown },
  parsed: Partial<Pick<JobPayload, 'kind' | 'agent' | 'runId' | 'scope'>>,
  error: { code: string; message: string },
  attempts: number,
): Promise<void> {
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  const raw = job.payload as Record<string, unknown> | null;
  const field = (key: 'kind' | 'agent' | 'runId' | 'scope') => str(parsed[key]) ?? (raw && typeof raw === 'object' ? str(raw[key]) : null);
  await db.query('Dead-lettering a job', `
    INSERT INTO ${db.q}.cairn_dead_jobs (job_id, kind, agent, run_id, scope, payload, code, reason, attempts)
    VALUES ($1, $2, $3, $4, $5, $6::json, $7, $8, $9) ON CONFLICT (job_id) DO NOTHING`, [
    job.id, field('kind'), field('agent'), field('runId'), field('scope'),
    JSON.stringify(job.payload ?? null), error.code, redactSecrets(error.message).slice(0, 2000), attempts,
  ]);
}

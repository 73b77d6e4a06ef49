/**
 * The queue's schema: graphile-worker's tables (its own migrations) and
 * Cairn's beside them, in one PostgreSQL schema (`cairn_worker` by default):
 *
 * - `cairn_queue_version`: one row per applied Cairn migration;
 * - `cairn_dead_jobs`: jobs a worker gave up on, with the reason;
 * - `cairn_worker_jobs`: the jobs being worked now, with a heartbeat on the
 *   database clock, so a live worker can hand a dead worker's job back.
 *
 * Setup (queue-db.ts) refuses a schema that a newer Cairn or a newer
 * graphile-worker migrated (QueueSchemaVersionError), before anything is
 * changed. This file holds no driver code, so the published types need no
 * @types/pg.
 */
/**
 * The part of a pg `Pool` the queue calls: a `pg.Pool` fits it (declared
 * here so that the published types need no @types/pg).
 */
export interface QueuePool {
  connect(): Promise<unknown>;
  query(text: string, values?: unknown[]): Promise<unknown>;
  end(): Promise<void>;
}

/** Where the queue lives: a connection string (Cairn opens and closes a pool) or a pg Pool you own. */
export interface QueueConnection {
  /** e.g. `postgres://user@host:5432/db`. */
  connectionString?: string;
  /** A pg Pool you created; `close()` leaves it open. */
  pool?: QueuePool;
  /** The PostgreSQL schema of the queue. @default 'cairn_worker' */
  schema?: string;
}

/** Append-only: `QUEUE_MIGRATIONS[N - 1]` brings Cairn's queue tables to version N. */
export const QUEUE_MIGRATIONS: readonly (readonly string[])[] = [
  [
    `CREATE TABLE cairn_dead_jobs (
  job_id   text        PRIMARY KEY,
  kind     text,
  agent    text,
  run_id   text,
  scope    text,
  payload  json,
  code     text        NOT NULL,
  reason   text        NOT NULL,
  attempts integer     NOT NULL,
  dead_at  timestamptz NOT NULL DEFAULT now()
)`,
    'CREATE INDEX cairn_dead_jobs_by_run ON cairn_dead_jobs (run_id)',
    `CREATE TABLE cairn_worker_jobs (
  job_id       text        PRIMARY KEY,
  worker_id    text        NOT NULL,
  run_id       text,
  heartbeat_at timestamptz NOT NULL
)`,
  ],
];

export const QUEUE_SCHEMA_VERSION = QUEUE_MIGRATIONS.length;


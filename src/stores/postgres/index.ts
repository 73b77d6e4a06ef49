/**
 * `cairn/ops/postgres`: the run store, the lease provider and the circuit
 * breakers over one PostgreSQL schema. Call `setup()` once per deployment (or
 * at every start: it is idempotent and safe to run concurrently) before using
 * the store.
 */
import type { LeaseProvider } from '../../agent/types.js';
import type { BreakerStore } from '../../models/breaker-store.js';
import { createPostgresBreakerStore } from './breakers.js';
import { migrate, opsTables } from './migrations.js';
import { createPostgresLeaseProvider } from './leases.js';
import { createPostgresAgentRunStore, type PostgresAgentRunStore } from './run-store.js';
import { Db, quoteSchema, type PostgresConnection } from './sql.js';

export interface PostgresOpsStoreOptions {
  /** The schema that holds the ops tables; setup() creates it when missing. @default 'public' */
  schema?: string;
}

export interface PostgresOpsStore {
  /** Creates the schema and tables, or migrates them to this code's version. Idempotent; concurrent calls are safe. */
  setup(): Promise<void>;
  /** The AgentRunStore: pass it as `session.store`. */
  agentRuns: PostgresAgentRunStore;
  /** The LeaseProvider on the database clock: pass it as `lease.provider`. */
  leases: LeaseProvider;
  /**
   * The model-call circuit breakers, one row per `provider:modelId`: pass as
   * `deps.breakerStore` of a headless run, so workers on every machine share
   * them. `cooldownUntil` is kept as given: a time on the run's clock, not on
   * the database's.
   */
  breakers: BreakerStore;
  /** The schema this store uses. */
  readonly schema: string;
  /** Ends the pool if the store created it (from a connection string); a pool you passed stays open. */
  close(): Promise<void>;
}

/**
 * Opens the PostgreSQL ops store.
 *
 * @example
 * const ops = createPostgresOpsStore({ connectionString: process.env.DATABASE_URL! });
 * await ops.setup();
 * await runAgent({ model, prompt, session: { store: ops.agentRuns, runId, scope } });
 * await ops.close();
 */
export function createPostgresOpsStore(connection: PostgresConnection, options: PostgresOpsStoreOptions = {}): PostgresOpsStore {
  const schema = options.schema ?? 'public';
  const tables = opsTables(quoteSchema(schema));
  const db = Db.open(connection, schema);
  return {
    schema,
    setup: () => migrate(db, tables),
    agentRuns: createPostgresAgentRunStore(db, tables),
    leases: createPostgresLeaseProvider(db, tables),
    breakers: createPostgresBreakerStore(db, tables),
    close: () => db.close(),
  };
}

export type { PostgresConnection } from './sql.js';
export type { PostgresAgentRunStore } from './run-store.js';
export { StoreSchemaVersionError } from './errors.js';
export { MIGRATIONS, SCHEMA_VERSION } from './migrations.js';

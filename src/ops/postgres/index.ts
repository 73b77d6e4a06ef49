/** `cairn/ops/postgres`: runs, leases and circuit breakers in a PostgreSQL schema. */
export {
  createPostgresOpsStore,
  MIGRATIONS,
  SCHEMA_VERSION,
  StoreSchemaVersionError,
  type PostgresAgentRunStore,
  type PostgresConnection,
  type PostgresOpsStore,
  type PostgresOpsStoreOptions,
} from '../../stores/postgres/index.js';

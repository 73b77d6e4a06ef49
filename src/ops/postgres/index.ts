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
export {
  createPostgresAgentRunStoreV3, type PostgresAgentRunStoreV3, type PostgresAgentRunStoreV3Options,
} from '../../v3/postgres.js';
export { V3_PG_MIGRATIONS as V3_MIGRATIONS, V3_PG_SCHEMA_VERSION as V3_SCHEMA_VERSION } from '../../v3/postgres-schema.js';

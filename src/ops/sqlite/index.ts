/** `cairn/ops/sqlite`: runs, leases and circuit breakers in one SQLite file. */
export {
  createSqliteOpsStore,
  MIGRATIONS,
  NotACairnStoreError,
  SCHEMA_VERSION,
  StoreSchemaVersionError,
  type SqliteAgentRunStore,
  type SqliteOpsStore,
  type SqliteOpsStoreOptions,
} from '../../stores/sqlite/index.js';
export { createSqliteAgentRunStoreV3, type SqliteAgentRunStoreV3, type SqliteAgentRunStoreV3Options } from '../../v3/sqlite.js';
export { V3_MIGRATIONS, V3_SCHEMA_VERSION } from '../../v3/sqlite-schema.js';

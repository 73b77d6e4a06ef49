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

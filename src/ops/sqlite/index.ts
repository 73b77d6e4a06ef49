/** `cairn/ops/sqlite`: runs and leases in one SQLite file. */
export {
  createSqliteOpsStore,
  MIGRATIONS,
  SCHEMA_VERSION,
  StoreSchemaVersionError,
  type SqliteAgentRunStore,
  type SqliteOpsStore,
  type SqliteOpsStoreOptions,
} from '../../stores/sqlite/index.js';

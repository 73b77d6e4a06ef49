/** cairn/memory/versioned/sqlite: the SQLite versioned memory store, in the file of a SQLite ops store (docs/versioned-memory.md, "The stores"). */
export {
  createSqliteVersionedMemoryStore, type SqliteVersionedMemoryStore, type SqliteVersionedMemoryStoreOptions,
} from '../sqlite.js';
export { VERSIONED_MEMORY_SCHEMA_VERSION } from '../sqlite-schema.js';

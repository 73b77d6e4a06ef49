/** cairn/memory/versioned/postgres: the PostgreSQL versioned memory store (docs/versioned-memory.md, "The stores"). */
export {
  createPostgresVersionedMemoryStore, type PostgresConnection, type PostgresVersionedMemoryStore, type PostgresVersionedMemoryStoreOptions,
} from '../postgres.js';
export { VERSIONED_MEMORY_PG_SCHEMA_VERSION } from '../postgres-schema.js';

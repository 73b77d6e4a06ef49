/** cairn/swarm/sqlite: the SQLite swarm store (docs/swarm.md, "Stores"). */
export { createSqliteSwarmStore, SWARM_SQLITE_SCHEMA_VERSION, type SqliteSwarmStore, type SqliteSwarmStoreOptions } from './store.js';

/** cairn/swarm/postgres: the PostgreSQL swarm store (docs/swarm.md, "Stores"). */
export { createPostgresSwarmStore, SWARM_POSTGRES_SCHEMA_VERSION, type PostgresSwarmStore, type PostgresSwarmStoreOptions } from './store.js';

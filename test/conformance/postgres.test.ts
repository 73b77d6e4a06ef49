/**
 * The conformance suites against cairn/ops/postgres. Each case gets a schema
 * of its own (set up fresh, dropped after the suite); every open() after the
 * first is another store on its own pool, as a second process. Leases are on
 * the database clock, so `advance` sleeps and the ttl is short.
 */
import { defineStoreConformance } from 'cairn/testing';
import { describePostgres, type PostgresTestEnv } from '../stores/pg-env.js';
import { opsBackends, SERVER_CLOCK, serverCaseApi } from './store-matrix.js';

const { postgres } = opsBackends();

describePostgres('postgres conformance', (env: PostgresTestEnv) => {
  defineStoreConformance({
    name: 'postgres',
    features: { leases: true, breakers: true, journal: true },
    async create() {
      const schema = env.newSchema();
      await postgres.setup(env, schema);
      return { open: () => postgres.open(env, schema), ...SERVER_CLOCK };
    },
  }, serverCaseApi);
});

/**
 * The conformance suites against cairn/ops/postgres. Each case gets a schema
 * of its own (set up fresh, dropped after the suite); every open() after the
 * first is another store on its own pool, as a second process. Leases are on
 * the database clock, so `advance` sleeps and the ttl is short.
 */
import { describe, it } from 'vitest';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { defineStoreConformance } from 'cairn/testing';
import { describePostgres, type PostgresTestEnv } from '../stores/pg-env.js';

/** Long enough that a few queries on a loaded machine (a renewal half a ttl late) never outlast it, short enough to sleep through. */
const TTL_MS = 1_500;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
// A case saves up to a thousand runs and sleeps through ttls.
const CASE_TIMEOUT_MS = 60_000;

describePostgres('postgres conformance', (env: PostgresTestEnv) => {
  defineStoreConformance({
    name: 'postgres',
    features: { leases: true, breakers: true, journal: true },
    async create() {
      const schema = env.newSchema();
      const setup = createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 1 } }, { schema });
      await setup.setup();
      await setup.close();
      return {
        open: () => createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 4 } }, { schema }),
        advance: sleep,
        ttlMs: TTL_MS,
      };
    },
  }, { describe, it: (name, fn) => it(name, fn, CASE_TIMEOUT_MS) });
});

/**
 * The conformance suites against cairn/ops/redis, on the redis-server at
 * 127.0.0.1:6379 (CAIRN_TEST_REDIS_URL): the run store, leases, breakers and
 * journal through defineStoreConformance, and the budget ledger. Each case
 * gets a key prefix of its own (its keys deleted after the suite); every
 * open() after the first is another store object with its own connection, as
 * a second process. Leases and journal times are on the server's clock, so
 * `advance` sleeps and the ttl is short.
 */
import { describe, it } from 'vitest';
import { createRedisOpsStore } from 'cairn/ops/redis';
import { defineLedgerConformance, defineStoreConformance } from 'cairn/testing';
import { describeRedis, type RedisTestEnv } from '../stores/redis-env.js';
import { ledgerFixture, openedInitializer } from './store-matrix.js';

/** As the PostgreSQL suite's: long enough for a few round trips on a loaded machine, short enough to sleep through. */
const TTL_MS = 1_500;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
// A case saves up to a thousand runs and sleeps through ttls.
const CASE_TIMEOUT_MS = 60_000;
const LEDGER = 'conformance';

describeRedis('redis conformance', (env: RedisTestEnv) => {
  defineStoreConformance({
    name: 'redis',
    features: { leases: true, breakers: true, journal: true },
    async create() {
      const keyPrefix = env.newPrefix();
      return {
        open: () => createRedisOpsStore({ url: env.url, keyPrefix }),
        advance: sleep,
        ttlMs: TTL_MS,
      };
    },
  }, { describe, it: (name, fn) => it(name, fn, CASE_TIMEOUT_MS) });

  defineLedgerConformance(openedInitializer('redis', async () => {
    const keyPrefix = env.newPrefix();
    return { open: () => createRedisOpsStore({ url: env.url, keyPrefix }), data: undefined };
  }, (opened) => ledgerFixture(opened, LEDGER)), { describe, it: (name, fn) => it(name, fn, CASE_TIMEOUT_MS) });
});

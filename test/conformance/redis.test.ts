/**
 * The conformance suites against cairn/ops/redis, on the redis-server at
 * 127.0.0.1:6379 (CAIRN_TEST_REDIS_URL): the run store, leases, breakers and
 * journal through defineStoreConformance, and the budget ledger. Each case
 * gets a key prefix of its own (its keys deleted after the suite); every
 * open() after the first is another store object with its own connection, as
 * a second process. Leases and journal times are on the server's clock, so
 * `advance` sleeps and the ttl is short.
 */
import { createRedisOpsStore } from 'cairn/ops/redis';
import { defineLedgerConformance, defineStoreConformance } from 'cairn/testing';
import { describeRedis, type RedisTestEnv } from '../stores/redis-env.js';
import { ledgerFixture, openedInitializer, SERVER_CLOCK, serverCaseApi } from './store-matrix.js';

const LEDGER = 'conformance';

describeRedis('redis conformance', (env: RedisTestEnv) => {
  defineStoreConformance({
    name: 'redis',
    features: { leases: true, breakers: true, journal: true },
    async create() {
      const keyPrefix = env.newPrefix();
      return { open: () => createRedisOpsStore({ url: env.url, keyPrefix }), ...SERVER_CLOCK };
    },
  }, serverCaseApi);

  defineLedgerConformance(openedInitializer('redis', async () => {
    const keyPrefix = env.newPrefix();
    return { open: () => createRedisOpsStore({ url: env.url, keyPrefix }), data: undefined };
  }, (opened) => ledgerFixture(opened, LEDGER)), serverCaseApi);
});

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
import { createRedisOpsStore, type RedisOpsStore } from 'cairn/ops/redis';
import { defineLedgerConformance, defineStoreConformance, type LedgerFixture } from 'cairn/testing';
import { describeRedis, type RedisTestEnv } from '../stores/redis-env.js';

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

  /** Each fixture's stores, so destroy closes them. */
  const opened = new WeakMap<LedgerFixture, RedisOpsStore[]>();
  defineLedgerConformance({
    name: 'redis',
    durable: true,
    async create() {
      const keyPrefix = env.newPrefix();
      const stores: RedisOpsStore[] = [];
      const ledger = async () => {
        const ops = createRedisOpsStore({ url: env.url, keyPrefix });
        stores.push(ops);
        return ops.budgets.ledger(LEDGER);
      };
      const fixture: LedgerFixture = {
        ledger: await ledger(),
        reopen: ledger,
        async restart() {
          for (const ops of stores.splice(0)) await ops.close();
          return ledger();
        },
      };
      opened.set(fixture, stores);
      return fixture;
    },
    async destroy(fixture) {
      for (const ops of opened.get(fixture)?.splice(0) ?? []) await ops.close();
    },
  }, { describe, it: (name, fn) => it(name, fn, CASE_TIMEOUT_MS) });
});

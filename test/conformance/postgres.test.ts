/**
 * The conformance suites against cairn/ops/postgres. Each case gets a schema
 * of its own (set up fresh, dropped after the suite); `reopen` opens another
 * store on its own pool over that schema, as a second process would. Leases
 * are on the database clock, so `advance` sleeps and the ttl is short.
 */
import { describe, it } from 'vitest';
import { createPostgresOpsStore, type PostgresOpsStore } from 'cairn/ops/postgres';
import {
  validateAgentRunStore, validateLeaseProvider, type AgentRunStoreFixture, type LeaseProviderFixture,
} from 'cairn/testing';
import { describePostgres, type PostgresTestEnv } from '../stores/pg-env.js';

/** Long enough that a few queries on a loaded machine (a renewal half a ttl late) never outlast it, short enough to sleep through. */
const TTL_MS = 1_500;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
// A case saves up to a thousand runs and sleeps through ttls.
const CASE_TIMEOUT_MS = 60_000;

describePostgres('postgres conformance', (env: PostgresTestEnv) => {
  const opened = new WeakMap<object, PostgresOpsStore[]>();

  async function openSchema() {
    const schema = env.newSchema();
    const stores: PostgresOpsStore[] = [];
    const open = () => {
      const ops = createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 4 } }, { schema });
      stores.push(ops);
      return ops;
    };
    const ops = open();
    await ops.setup();
    return { ops, stores, open };
  }

  async function destroy(fixture: object) {
    for (const ops of opened.get(fixture) ?? []) await ops.close();
  }

  const api = { describe, it: (name: string, fn: () => Promise<void>) => it(name, fn, CASE_TIMEOUT_MS) };

  validateAgentRunStore({
    name: 'postgres',
    features: { list: true, prune: true, leases: true },
    async create() {
      const { ops, stores, open } = await openSchema();
      const fixture: AgentRunStoreFixture = {
        store: ops.agentRuns,
        leases: ops.leases,
        reopen: async () => open().agentRuns,
        advance: sleep,
        ttlMs: TTL_MS,
      };
      opened.set(fixture, stores);
      return fixture;
    },
    destroy,
  }, api);

  validateLeaseProvider({
    name: 'postgres',
    async create() {
      const { ops, stores, open } = await openSchema();
      const fixture: LeaseProviderFixture = {
        provider: ops.leases,
        reopen: async () => open().leases,
        advance: sleep,
        ttlMs: TTL_MS,
      };
      opened.set(fixture, stores);
      return fixture;
    },
    destroy,
  }, api);
});

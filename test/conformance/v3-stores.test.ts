/**
 * The AgentRunStoreV3 conformance suite on the three V3 stores: in memory, in
 * the file of a SQLite ops store, and in a PostgreSQL schema. A durable case's
 * reopen() is another store object over the same file or schema, as another
 * process opens it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { createInMemoryAgentRunStoreV3 } from 'cairn/agent';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore, type SqliteOpsStore } from 'cairn/ops/sqlite';
import { createPostgresAgentRunStoreV3, type PostgresAgentRunStoreV3 } from 'cairn/ops/postgres';
import { createManualClock, defineAgentRunStoreV3Conformance, type AgentRunStoreV3Fixture } from 'cairn/testing';
import { describePostgres } from '../stores/pg-env.js';

defineAgentRunStoreV3Conformance({
  name: 'in-memory',
  async create() {
    const clock = createManualClock();
    const store = createInMemoryAgentRunStoreV3({ clock });
    return { store, advance: async (ms) => clock.advance(ms), blobCount: async () => store.blobDigests().length };
  },
}, { describe, it });

const sqliteCases = new WeakMap<AgentRunStoreV3Fixture, () => void>();
defineAgentRunStoreV3Conformance({
  name: 'sqlite',
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-v3-'));
    const path = join(dir, 'ops.sqlite');
    const clock = createManualClock();
    const opened: SqliteOpsStore[] = [];
    const open = () => {
      const ops = createSqliteOpsStore({ path, synchronous: 'normal', clock });
      opened.push(ops);
      return createSqliteAgentRunStoreV3(ops, { clock });
    };
    const store = open();
    const fixture: AgentRunStoreV3Fixture = {
      store,
      reopen: async () => open(),
      advance: async (ms) => clock.advance(ms),
      blobCount: async () => store.rowCounts().blobs,
    };
    sqliteCases.set(fixture, () => {
      for (const ops of opened) ops.close();
      rmSync(dir, { recursive: true, force: true });
    });
    return fixture;
  },
  async destroy(fixture) {
    sqliteCases.get(fixture)?.();
  },
}, { describe, it });

describePostgres('postgres V3 store', (env) => {
  const cases = new WeakMap<AgentRunStoreV3Fixture, PostgresAgentRunStoreV3[]>();
  defineAgentRunStoreV3Conformance({
    name: 'postgres',
    async create() {
      const schema = env.newSchema();
      const opened: PostgresAgentRunStoreV3[] = [];
      const open = async () => {
        const store = createPostgresAgentRunStoreV3({ connectionString: env.url }, { schema });
        opened.push(store);
        await store.setup();
        return store;
      };
      const store = await open();
      const fixture: AgentRunStoreV3Fixture = {
        store,
        reopen: open,
        // The database clock cannot be moved: wait it out.
        advance: (ms) => new Promise((resolve) => setTimeout(resolve, ms + 1)),
        blobCount: async () => (await store.rowCounts()).blobs,
      };
      cases.set(fixture, opened);
      return fixture;
    },
    async destroy(fixture) {
      for (const store of cases.get(fixture) ?? []) await store.close();
    },
  }, { describe, it: (name, fn) => it(name, fn, 30_000) });
});

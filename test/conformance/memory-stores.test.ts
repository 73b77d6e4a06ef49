/**
 * The MemoryStore conformance suite against the three stores: the in-memory
 * one, and `ops.memories` of the SQLite and PostgreSQL ops stores (durable:
 * every reopen() is another ops store on the same file or schema, as a second
 * process opens it).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { createInMemoryMemoryStore, type MemoryStore } from 'cairn/memory';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { defineMemoryStoreConformance, type MemoryStoreFixture } from 'cairn/testing';
import { describePostgres, type PostgresTestEnv } from '../stores/pg-env.js';

interface Ops {
  memories: MemoryStore;
  close(): void | Promise<void>;
}

const opened = new WeakMap<MemoryStoreFixture, { stores: Ops[]; cleanup?: () => void }>();

function opsFixture(open: () => Ops, cleanup?: () => void): MemoryStoreFixture {
  const stores: Ops[] = [];
  const next = () => {
    const ops = open();
    stores.push(ops);
    return ops.memories;
  };
  const fixture: MemoryStoreFixture = { store: next(), reopen: async () => next() };
  opened.set(fixture, { stores, ...(cleanup ? { cleanup } : {}) });
  return fixture;
}

async function destroyOps(fixture: MemoryStoreFixture): Promise<void> {
  const state = opened.get(fixture);
  for (const ops of state?.stores.splice(0) ?? []) await ops.close();
  state?.cleanup?.();
}

defineMemoryStoreConformance({ name: 'in-memory', create: async () => ({ store: createInMemoryMemoryStore() }) }, { describe, it });

defineMemoryStoreConformance({
  name: 'sqlite',
  durable: true,
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-memory-conformance-'));
    return opsFixture(() => createSqliteOpsStore({ path: join(dir, 'ops.sqlite'), synchronous: 'normal' }), () => rmSync(dir, { recursive: true, force: true }));
  },
  destroy: destroyOps,
}, { describe, it });

describePostgres('postgres memory conformance', (env: PostgresTestEnv) => {
  defineMemoryStoreConformance({
    name: 'postgres',
    durable: true,
    async create() {
      const schema = env.newSchema();
      const setup = createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 1 } }, { schema });
      await setup.setup();
      await setup.close();
      return opsFixture(() => createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 4 } }, { schema }));
    },
    destroy: destroyOps,
  }, { describe, it: (name, fn) => it(name, fn, 60_000) });
});

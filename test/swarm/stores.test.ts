/**
 * The SwarmStore conformance suite against the three swarm stores: in
 * memory, an SQLite file, and a PostgreSQL schema (each reopen() another
 * store object over the same data, as a second process opens it).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { createInMemorySwarmStore, type SwarmStore } from 'cairn/swarm';
import { createSqliteSwarmStore } from 'cairn/swarm/sqlite';
import { createPostgresSwarmStore } from 'cairn/swarm/postgres';
import { defineSwarmStoreConformance, type SwarmStoreFixture } from 'cairn/testing';
import { describePostgres } from '../stores/pg-env.js';

const closers = new WeakMap<SwarmStoreFixture, Array<() => unknown>>();

defineSwarmStoreConformance({ name: 'in-memory', create: async () => ({ store: createInMemorySwarmStore() }) }, { describe, it });

defineSwarmStoreConformance({
  name: 'sqlite',
  durable: true,
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-swarm-conformance-'));
    const close: Array<() => unknown> = [() => rmSync(dir, { recursive: true, force: true })];
    const open = (): SwarmStore => {
      const store = createSqliteSwarmStore({ path: join(dir, 'swarm.sqlite') });
      close.unshift(() => store.close());
      return store;
    };
    const fixture = { store: open(), reopen: async () => open() };
    closers.set(fixture, close);
    return fixture;
  },
  async destroy(fixture) {
    for (const c of closers.get(fixture) ?? []) await c();
  },
}, { describe, it });

describePostgres('postgres swarm store', (env) => {
  defineSwarmStoreConformance({
    name: 'postgres',
    durable: true,
    async create() {
      const schema = env.newSchema();
      const close: Array<() => unknown> = [];
      const open = () => {
        const store = createPostgresSwarmStore({ connectionString: env.url, schema, poolOptions: { max: 2 } });
        close.push(() => store.close());
        return store;
      };
      const store = open();
      await store.setup();
      const fixture = { store, reopen: async () => open() };
      closers.set(fixture, close);
      return fixture;
    },
    async destroy(fixture) {
      for (const c of closers.get(fixture) ?? []) await c();
    },
  }, { describe, it });
});

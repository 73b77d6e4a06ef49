/**
 * The SwarmStore conformance suite against the three swarm stores: in
 * memory, an SQLite file, and a PostgreSQL schema (each reopen() another
 * store object over the same data, as a second process opens it).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
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

describe('swarm store schema versions', () => {
  it('SQLite: a file whose swarm tables are newer than this code is refused, nothing changed', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-swarm-schema-'));
    try {
      createSqliteSwarmStore({ path: join(dir, 's.sqlite') }).close();
      const db = new Database(join(dir, 's.sqlite'));
      db.prepare('UPDATE cairn_swarm_schema SET version = 99').run();
      db.close();
      expect(() => createSqliteSwarmStore({ path: join(dir, 's.sqlite') })).toThrow(expect.objectContaining({ code: 'record_version_unsupported' }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describePostgres('postgres swarm store schema version', (env) => {
  it('refuses a schema whose swarm tables are newer than this code', async () => {
    const schema = env.newSchema();
    const store = createPostgresSwarmStore({ connectionString: env.url, schema });
    try {
      await store.setup();
      await env.sql(`UPDATE "${schema}".cairn_swarm_schema_version SET version = 99`);
      await expect(store.setup()).rejects.toMatchObject({ code: 'record_version_unsupported' });
    } finally {
      await store.close();
    }
  });
});

/**
 * The PostgreSQL versioned memory store: the conformance suite (five store
 * objects, each with its own pool, racing on one schema), and what is
 * PostgreSQL's own: a commit that fails midway leaves nothing, a forgotten
 * text is in no row of any table of the schema, the tables' own version, a
 * schema without setup(), and the differential property of
 * versioned-store-model.ts. Fails on CI when PostgreSQL is unreachable.
 */
import { expect, it, describe } from 'vitest';
import { createPostgresVersionedMemoryStore, type PostgresVersionedMemoryStore } from 'cairn/memory/versioned/postgres';
import { defineVersionedMemoryStoreConformance } from 'cairn/testing';
import { describePostgres } from '../stores/pg-env.js';
import { checkAgainstInMemory } from './versioned-store-model.js';

const digest = `sha256:${'b'.repeat(64)}`;
const ada = { userId: 'ada' };

describePostgres('the PostgreSQL versioned memory store', (env) => {
  const open = async (schema = env.newSchema(), setup = true): Promise<PostgresVersionedMemoryStore> => {
    const store = createPostgresVersionedMemoryStore({ connectionString: env.url, poolOptions: { max: 3 } }, { schema });
    if (setup) await store.setup();
    return store;
  };

  defineVersionedMemoryStoreConformance({
    name: 'postgres',
    durable: true,
    create: async () => {
      const schema = env.newSchema();
      const opened = [await open(schema)];
      return {
        store: opened[0]!,
        reopen: async () => {
          const store = await open(schema, false);
          opened.push(store);
          return store;
        },
        opened,
      };
    },
    destroy: async (fixture) => {
      for (const store of (fixture as typeof fixture & { opened: PostgresVersionedMemoryStore[] }).opened) await store.close();
    },
  }, { describe, it: (name, fn) => it(name, fn, 30_000) });

  for (const [where, body] of [
    ['at its second record revision', "IF NEW.record_id = 'boom' THEN RAISE EXCEPTION 'injected fault'; END IF; RETURN NEW;"],
    ['at its receipt, after every mutation was written', "IF TG_TABLE_NAME = 'cairn_memory_v_receipts' THEN RAISE EXCEPTION 'injected fault'; END IF; RETURN NEW;"],
  ] as const) {
    it(`a commit that fails ${where} leaves nothing applied and no receipt; the operation commits once the fault is gone`, async () => {
      const schema = env.newSchema();
      const store = await open(schema);
      try {
        await store.commit({ scope: ada, operationId: 'op-0', requestDigest: digest, at: 1, mutations: [{ op: 'add', id: 'keep', text: 'keeps bees', origin: 'explicit' }] });
        await env.sql(`CREATE FUNCTION "${schema}".boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} END $$`);
        const table = where.includes('receipt') ? 'cairn_memory_v_receipts' : 'cairn_memory_v_revisions';
        await env.sql(`CREATE TRIGGER boom BEFORE INSERT ON "${schema}".${table} FOR EACH ROW EXECUTE FUNCTION "${schema}".boom()`);
        const commit = {
          scope: ada, operationId: 'op-1', requestDigest: digest, at: 2, mutations: [
            { op: 'revise' as const, id: 'keep', text: 'keeps wasps' }, { op: 'add' as const, id: 'boom', text: 'x', origin: 'explicit' as const },
          ],
        };
        await expect(store.commit(commit)).rejects.toMatchObject({ name: 'PersistenceError', message: expect.stringContaining('injected fault') });
        expect(await store.scopeRevision({ scope: ada })).toBe(1);
        expect(await store.receipt({ scope: ada, operationId: 'op-1' })).toBeUndefined();
        expect((await store.history({ scope: ada, id: 'keep' })).map((r) => r.text)).toEqual(['keeps bees']);
        expect(await store.rowCounts()).toEqual({ scopes: 1, records: 1, revisions: 1, receipts: 1, forgotten: 0 });
        await env.sql(`DROP TRIGGER boom ON "${schema}".${table}`);
        expect(await store.commit(commit)).toMatchObject({ replayed: false, receipt: { scopeRevision: 2, planned: 2 } });
      } finally {
        await store.close();
      }
    });
  }

  it('after a forget, no row of any table in the schema holds the forgotten text', async () => {
    const schema = env.newSchema();
    const store = await open(schema);
    try {
      await store.commit({ scope: ada, operationId: 'op-1', requestDigest: digest, at: 1, mutations: [
        { op: 'add', id: 'tea', text: 'Ada: zebra-quartz-7731', origin: 'inferred', sources: [{ messageId: 'r:0' }] },
        { op: 'add', id: 'jazz', text: 'Ada likes jazz', origin: 'explicit' },
      ] });
      await store.commit({ scope: ada, operationId: 'op-2', requestDigest: digest, at: 2, mutations: [{ op: 'revise', id: 'tea', text: 'Ada: zebra-quartz-7731 v2' }] });
      const rowsHolding = async (text: string) => {
        const tables = await env.sql<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [schema]);
        let found = 0;
        for (const { table_name } of tables) {
          const [row] = await env.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}"."${table_name}" t WHERE t::text LIKE $1`, [`%${text}%`]);
          found += row!.n;
        }
        return found;
      };
      expect(await rowsHolding('zebra-quartz')).toBe(2);
      await store.forget({ scope: ada, id: 'tea', at: 3 });
      expect(await rowsHolding('zebra-quartz')).toBe(0);
      expect(await rowsHolding('Ada likes jazz')).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('answer random commits and forgets as the in-memory store does (fast-check; FC_SEED replays)', async () => {
    const schema = env.newSchema();
    const store = await open(schema);
    try {
      await checkAgainstInMemory('versioned memory store model (postgres)', 25, async () => {
        await env.sql(`TRUNCATE "${schema}".cairn_memory_v_scopes, "${schema}".cairn_memory_v_records, "${schema}".cairn_memory_v_revisions,
  "${schema}".cairn_memory_v_receipts, "${schema}".cairn_memory_v_forgotten`);
        return store;
      }, async () => undefined);
    } finally {
      await store.close();
    }
  }, 180_000);

  it('keep their own version table; a newer version is refused and nothing is changed', async () => {
    const schema = env.newSchema();
    const store = await open(schema);
    await store.setup();
    expect((await env.sql<{ version: number }>(`SELECT version FROM "${schema}".cairn_memory_versioned_schema`)).map((r) => r.version)).toEqual([1]);
    await env.sql(`INSERT INTO "${schema}".cairn_memory_versioned_schema (version) VALUES (99)`);
    await expect(store.setup()).rejects.toMatchObject({ name: 'StoreSchemaVersionError', code: 'record_version_unsupported' });
    await store.close();
  });

  it('refuse options of the wrong kind when made, before connecting', () => {
    const invalid = expect.objectContaining({ code: 'invalid_options' });
    expect(() => createPostgresVersionedMemoryStore({ connectionString: env.url }, null as never)).toThrow(invalid);
    expect(() => createPostgresVersionedMemoryStore({ connectionString: env.url }, { schema: 'no-dashes' })).toThrow(invalid);
    expect(() => createPostgresVersionedMemoryStore({} as never)).toThrow(invalid);
  });

  it('say that setup() was not run on a schema without the tables', async () => {
    const store = await open(env.newSchema(), false);
    try {
      await expect(store.list({ scope: ada })).rejects.toMatchObject({ name: 'PersistenceError', message: expect.stringContaining('Call setup() first') });
      await expect(store.commit({ scope: ada, operationId: 'op-1', requestDigest: digest, at: 1, mutations: [] })).rejects.toMatchObject({ name: 'PersistenceError' });
    } finally {
      await store.close();
    }
  });
});

/**
 * The SQLite versioned memory store: the conformance suite (with a second
 * ops store on the same file racing the first), and what is SQLite's own: a
 * forgotten text is found in no byte of the file or its WAL afterwards, a
 * commit that fails midway leaves nothing, the tables' own version, a
 * read-only file.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSqliteOpsStore, type SqliteOpsStore } from 'cairn/ops/sqlite';
import { createSqliteVersionedMemoryStore } from 'cairn/memory/versioned/sqlite';
import { defineVersionedMemoryStoreConformance } from 'cairn/testing';
import { connectionOf } from '../../src/stores/sqlite/index.js';

const digest = `sha256:${'a'.repeat(64)}`;
const ada = { userId: 'ada' };

let n = 0;
defineVersionedMemoryStoreConformance({
  name: 'sqlite',
  durable: true,
  create: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-vmem-'));
    const path = join(dir, `m-${n++}.sqlite`);
    const opened: SqliteOpsStore[] = [createSqliteOpsStore({ path })];
    const fixture = {
      store: createSqliteVersionedMemoryStore(opened[0]!),
      reopen: async () => {
        const ops = createSqliteOpsStore({ path, create: false });
        opened.push(ops);
        return createSqliteVersionedMemoryStore(ops);
      },
      dir, opened,
    };
    return fixture;
  },
  destroy: async (fixture) => {
    const f = fixture as typeof fixture & { dir: string; opened: SqliteOpsStore[] };
    for (const ops of f.opened) ops.close();
    rmSync(f.dir, { recursive: true, force: true });
  },
}, { describe, it });

let dir = '';
let path = '';
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-vmem-own-'));
  path = join(dir, 'memory.sqlite');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The bytes of the file and of its WAL (if any), as latin1 text to search. */
function fileBytes(): string {
  const wal = `${path}-wal`;
  return readFileSync(path).toString('latin1') + (existsSync(wal) ? readFileSync(wal).toString('latin1') : '');
}

describe('a forget on SQLite', () => {
  // A short text and one long enough to spill into overflow pages, each revised twice.
  const secret = 'zebra-quartz-7731';
  const long = `${'plum-orbit-'.repeat(600)}end`;

  const fill = async (store: ReturnType<typeof createSqliteVersionedMemoryStore>) => {
    await store.commit({ scope: ada, operationId: 'op-1', requestDigest: digest, at: 1, mutations: [
      { op: 'add', id: 'short', text: `Ada: ${secret}`, origin: 'explicit' }, { op: 'add', id: 'long', text: long, origin: 'inferred' },
      { op: 'add', id: 'keep', text: 'Ada likes jazz', origin: 'explicit' },
    ] });
    for (let i = 2; i <= 3; i++) {
      await store.commit({ scope: ada, operationId: `op-${i}`, requestDigest: digest, at: i, mutations: [
        { op: 'revise', id: 'short', text: `Ada: ${secret} v${i}` }, { op: 'revise', id: 'long', text: `${long} v${i}` },
      ] });
    }
  };

  it('leaves the forgotten texts in no page of the file nor of its WAL, free pages included', async () => {
    const ops = createSqliteOpsStore({ path });
    const store = createSqliteVersionedMemoryStore(ops);
    await fill(store);
    // Enough rows after them that the tables' pages split and cells move, leaving old copies in free space.
    for (let c = 0; c < 20; c++) {
      await store.commit({ scope: ada, operationId: `filler-${c}`, requestDigest: digest, at: 5, mutations: Array.from({ length: 20 }, (_, i) => (
        { op: 'add' as const, id: `f-${c}-${i}`, text: `filler ${c} ${i} ${'x'.repeat(200)}`, origin: 'explicit' as const })) });
    }
    const before = fileBytes();
    expect(before.includes(secret), 'the text is in the file before the forget').toBe(true);
    expect(before.includes('plum-orbit-plum-orbit-')).toBe(true);
    await store.forget({ scope: ada, id: 'short', at: 10 });
    await store.forget({ scope: ada, id: 'long', at: 10 });
    const after = fileBytes();
    expect(after.includes(secret), 'the short text after the forget').toBe(false);
    expect(after.includes('plum-orbit-'), 'the long text after the forget').toBe(false);
    expect(after.includes('Ada likes jazz'), 'a record not forgotten').toBe(true);
    expect(readFileSync(`${path}-wal`).length, 'the WAL was truncated').toBe(0);
    // The store's rows agree: no revision holds a text of the forgotten records.
    const db = new Database(path, { readonly: true });
    expect(db.prepare("SELECT COUNT(*) FROM cairn_memory_v_revisions WHERE text IS NOT NULL AND record_id IN ('short', 'long')").pluck().get()).toBe(0);
    expect(db.pragma('secure_delete', { simple: true }), 'secure_delete is per connection: a fresh one has it off').toBe(0);
    db.close();
    ops.close();
    expect(fileBytes().includes(secret)).toBe(false);
  });

  it('without the checkpoint leaves the WAL frames that held the text (what checkpointAfterForget is for)', async () => {
    const ops = createSqliteOpsStore({ path });
    const store = createSqliteVersionedMemoryStore(ops, { checkpointAfterForget: false });
    await fill(store);
    await store.forget({ scope: ada, id: 'short', at: 10 });
    expect(readFileSync(`${path}-wal`).toString('latin1').includes(secret)).toBe(true);
    ops.close();
  });

  it('turns secure_delete on for the ops store\'s connection', () => {
    const ops = createSqliteOpsStore({ path });
    expect(connectionOf(ops).pragma('secure_delete', { simple: true })).toBe(0);
    createSqliteVersionedMemoryStore(ops);
    expect(connectionOf(ops).pragma('secure_delete', { simple: true })).toBe(1);
    ops.close();
  });
});

describe('a SQLite commit that fails midway', () => {
  for (const [where, trigger] of [
    ['at its second record revision', `CREATE TRIGGER boom BEFORE INSERT ON cairn_memory_v_revisions WHEN NEW.record_id = 'boom'
  BEGIN SELECT RAISE(ABORT, 'injected fault'); END`],
    ['at its receipt, after every mutation was written', `CREATE TRIGGER boom BEFORE INSERT ON cairn_memory_v_receipts
  BEGIN SELECT RAISE(ABORT, 'injected fault'); END`],
  ] as const) {
    it(`${where} leaves nothing applied and no receipt; the operation commits once the fault is gone`, async () => {
      const ops = createSqliteOpsStore({ path });
      const store = createSqliteVersionedMemoryStore(ops);
      await store.commit({ scope: ada, operationId: 'op-0', requestDigest: digest, at: 1, mutations: [{ op: 'add', id: 'keep', text: 'keeps bees', origin: 'explicit' }] });
      const side = new Database(path);
      side.exec(trigger);
      const commit = {
        scope: ada, operationId: 'op-1', requestDigest: digest, at: 2, mutations: [
          { op: 'revise' as const, id: 'keep', text: 'keeps wasps' }, { op: 'add' as const, id: 'boom', text: 'x', origin: 'explicit' as const },
        ],
      };
      await expect(store.commit(commit)).rejects.toMatchObject({ name: 'PersistenceError', code: 'persistence_failed', message: expect.stringContaining('injected fault') });
      expect(await store.scopeRevision({ scope: ada })).toBe(1);
      expect(await store.receipt({ scope: ada, operationId: 'op-1' })).toBeUndefined();
      expect((await store.history({ scope: ada, id: 'keep' })).map((r) => r.text)).toEqual(['keeps bees']);
      expect(await store.get({ scope: ada, id: 'boom' })).toBeUndefined();
      expect(store.rowCounts()).toEqual({ scopes: 1, records: 1, revisions: 1, receipts: 1, forgotten: 0 });
      side.exec('DROP TRIGGER boom');
      side.close();
      const retry = await store.commit(commit);
      expect(retry).toMatchObject({ replayed: false, receipt: { scopeRevision: 2, planned: 2 } });
      ops.close();
    });
  }
});

describe('the SQLite versioned memory tables', () => {
  it('have a version table of their own; a newer version is refused and nothing is changed', () => {
    const ops = createSqliteOpsStore({ path });
    createSqliteVersionedMemoryStore(ops);
    ops.close();
    const db = new Database(path);
    expect(db.prepare('SELECT version FROM cairn_memory_versioned_schema').pluck().all()).toEqual([1]);
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'cairn_memory_v%' ORDER BY name").pluck().all();
    expect(tables).toEqual(['cairn_memory_v_forgotten', 'cairn_memory_v_receipts', 'cairn_memory_v_records', 'cairn_memory_v_revisions', 'cairn_memory_v_scopes', 'cairn_memory_versioned_schema']);
    db.prepare('INSERT INTO cairn_memory_versioned_schema (version, applied_at) VALUES (99, 0)').run();
    db.close();
    const again = createSqliteOpsStore({ path, create: false });
    expect(() => createSqliteVersionedMemoryStore(again)).toThrow(expect.objectContaining({ name: 'StoreSchemaVersionError', code: 'record_version_unsupported' }));
    again.close();
  });

  it('refuse options of the wrong kind and an ops store not made by createSqliteOpsStore', () => {
    const ops = createSqliteOpsStore({ path });
    const invalid = expect.objectContaining({ code: 'invalid_options' });
    expect(() => createSqliteVersionedMemoryStore(ops, null as never)).toThrow(invalid);
    expect(() => createSqliteVersionedMemoryStore(ops, { checkpointAfterForget: 'yes' as never })).toThrow(invalid);
    expect(() => createSqliteVersionedMemoryStore({} as never)).toThrow(invalid);
    ops.close();
  });

  it('opened read-only: read what is stored, refuse writes; a file without the tables reads as empty', async () => {
    const plain = createSqliteOpsStore({ path });
    plain.close();
    const empty = createSqliteOpsStore({ path, readonly: true });
    const none = createSqliteVersionedMemoryStore(empty);
    expect(await none.list({ scope: ada })).toEqual([]);
    await expect(none.commit({ scope: ada, operationId: 'op-1', requestDigest: digest, at: 1, mutations: [] })).rejects.toMatchObject({ code: 'invalid_options' });
    empty.close();
    const ops = createSqliteOpsStore({ path });
    await createSqliteVersionedMemoryStore(ops).commit({ scope: ada, operationId: 'op-1', requestDigest: digest, at: 1, mutations: [{ op: 'add', id: 'tea', text: 'prefers tea', origin: 'explicit' }] });
    ops.close();
    const ro = createSqliteOpsStore({ path, readonly: true });
    const store = createSqliteVersionedMemoryStore(ro);
    expect((await store.get({ scope: ada, id: 'tea' }))?.text).toBe('prefers tea');
    await expect(store.forget({ scope: ada, id: 'tea', at: 2 })).rejects.toMatchObject({ name: 'PersistenceError' });
    ro.close();
  });
});

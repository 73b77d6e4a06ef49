/**
 * The ops stores' `journal` beyond the conformance suite: its tables and
 * their migration onto an older file or schema, the retention sweep an append
 * runs (`journalRetentionMs`), what a read-only SQLite store does with it, and
 * the bodies a text column cannot keep.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidOptionsError } from 'cairn/agent';
import {
  MIGRATIONS as PG_MIGRATIONS, createPostgresOpsStore, type PostgresOpsStore,
} from 'cairn/ops/postgres';
import { MIGRATIONS, createSqliteOpsStore, type SqliteOpsStore, type SqliteOpsStoreOptions } from 'cairn/ops/sqlite';
import { createManualClock } from 'cairn/testing';
import type { AgentStreamJournal, JournalFrame } from 'cairn/ui';
import { describePostgres } from './pg-env.js';
import { SQLITE_BEFORE_5 } from '../support/old-schemas.js';

const frames = (after: number, count: number, end = false): JournalFrame[] =>
  Array.from({ length: count }, (_, i) => ({ seq: after + i + 1, body: JSON.stringify({ n: after + i + 1 }), end: end && i === count - 1 }));

const rejection = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error);

/** The migration that creates the journal's tables, by position, wherever it ends up in the list. */
const journalMigration = (list: readonly (readonly string[])[]) =>
  list.findIndex((statements) => statements.some((s) => s.startsWith('CREATE TABLE cairn_journal_streams'))) + 1;

/** Cases every durable journal answers alike: bodies a UTF-8 text column would change, and arguments the contract leaves open. */
async function expectRefusals(journal: AgentStreamJournal): Promise<void> {
  for (const body of ['{"a":"\u0000"}', '{"a":"\uD800"}', 'x\uDFFF']) {
    expect(await rejection(journal.append('odd', 0, [{ seq: 1, body, end: false }]))).toBeInstanceOf(InvalidOptionsError);
  }
  expect(await journal.head('odd')).toBeUndefined();
  for (const after of [-1, 1.5, Number.NaN, '0']) {
    expect(await rejection(journal.read('s', after as number))).toMatchObject({ code: 'invalid_options' });
  }
  expect(await rejection(journal.append('s', 0, frames(0, 1), { scope: 7 as unknown as string }))).toMatchObject({ code: 'invalid_options' });
  expect(await rejection(journal.head(7 as unknown as string))).toMatchObject({ code: 'invalid_options' });
  expect(await rejection(journal.prune({} as { before: number }))).toMatchObject({ code: 'invalid_options' });
  expect(await journal.head('')).toBeUndefined();
  expect(await journal.head('s')).toBeUndefined();
  // A pair of surrogates is one character and is kept.
  await journal.append('astral', 0, [{ seq: 1, body: '"\uD83D\uDE00"', end: true }]);
  expect((await journal.read('astral', 0))[0]!.body).toBe('"😀"');
}

describe('sqlite journal', () => {
  let dir = '';
  let file = '';
  const opened: SqliteOpsStore[] = [];
  const raws: Database.Database[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-sqlite-journal-'));
    file = join(dir, 'ops.sqlite');
  });
  afterEach(() => {
    for (const ops of opened.splice(0)) ops.close();
    for (const db of raws.splice(0)) db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const open = (options: Partial<SqliteOpsStoreOptions> = {}) => {
    const ops = createSqliteOpsStore({ path: file, ...options });
    opened.push(ops);
    return ops;
  };
  const raw = () => {
    const db = new Database(file);
    raws.push(db);
    return db;
  };

  it('keeps a row per stream and a row per frame; updated_at on the store clock', async () => {
    const clock = createManualClock(5_000);
    const ops = open({ clock });
    await ops.journal.append('run-1', 0, frames(0, 2), { scope: 'tenant-a' });
    clock.advance(10);
    await ops.journal.append('run-1', 2, frames(2, 1, true), { scope: 'tenant-a' });
    const db = raw();
    expect(db.prepare('SELECT * FROM cairn_journal_streams').all()).toEqual([
      { stream_id: 'run-1', scope: 'tenant-a', last_seq: 3, ended: 1, updated_at: 5_010 },
    ]);
    expect(db.prepare('SELECT stream_id, seq, ends_leg FROM cairn_journal_frames ORDER BY seq').all()).toEqual([
      { stream_id: 'run-1', seq: 1, ends_leg: 0 }, { stream_id: 'run-1', seq: 2, ends_leg: 0 }, { stream_id: 'run-1', seq: 3, ends_leg: 1 },
    ]);
    expect(await ops.journal.head('run-1')).toEqual({ seq: 3, ended: true, scope: 'tenant-a', updatedAt: 5_010 });
  });

  it('migrates a file from before the journal: its runs stay, the tables appear', async () => {
    const version = journalMigration(MIGRATIONS);
    expect(version).toBeGreaterThan(1);
    const before = open();
    before.close();
    const db = new Database(file);
    // Later migrations' tables go too, as a file from before the journal never had them.
    db.exec(`${SQLITE_BEFORE_5}; DROP TABLE cairn_session_turns; DROP TABLE cairn_sessions; DROP TABLE cairn_memories; DROP TABLE cairn_chats; DROP TABLE cairn_budget_entries; DROP TABLE cairn_journal_frames; DROP TABLE cairn_journal_streams; DELETE FROM cairn_ops_schema WHERE version >= ${version}`);
    db.close();
    const ops = open();
    await ops.journal.append('s', 0, frames(0, 1));
    expect((await ops.journal.head('s'))?.seq).toBe(1);
    expect(raw().prepare('SELECT version FROM cairn_ops_schema ORDER BY version').pluck().all())
      .toEqual(MIGRATIONS.map((_, i) => i + 1));
  });

  it('an append sweeps streams older than journalRetentionMs away, at most once a minute', async () => {
    const clock = createManualClock(1_000_000);
    const ops = open({ clock, journalRetentionMs: 120_000 });
    await ops.journal.append('old', 0, frames(0, 3)); // the first append sweeps (nothing yet); the next is due in a minute
    clock.advance(30_000);
    await ops.journal.append('mid', 0, frames(0, 1)); // not due
    clock.advance(100_000);
    // Due: 'old' is 130 s old, over the retention, and goes with its frames; 'mid' (100 s) stays.
    await ops.journal.append('new', 0, frames(0, 1));
    expect(await ops.journal.head('old')).toBeUndefined();
    expect(raw().prepare("SELECT COUNT(*) FROM cairn_journal_frames WHERE stream_id = 'old'").pluck().get()).toBe(0);
    expect((await ops.journal.head('mid'))?.seq).toBe(1);
    // 'mid' is 130 s old 30 s later, but the next sweep is not due for another 30 s.
    clock.advance(30_000);
    await ops.journal.append('new', 1, frames(1, 1));
    expect((await ops.journal.head('mid'))?.seq).toBe(1);
    clock.advance(30_000);
    await ops.journal.append('new', 2, frames(2, 1));
    expect(await ops.journal.head('mid')).toBeUndefined();
    expect((await ops.journal.head('new'))?.seq).toBe(3);
  });

  it('defaults to one day; refuses a retention that is not a positive finite number', async () => {
    const clock = createManualClock(0);
    const ops = open({ clock });
    await ops.journal.append('a', 0, frames(0, 1));
    clock.advance(86_400_000);
    await ops.journal.append('b', 0, frames(0, 1));
    expect(await ops.journal.head('a')).toBeDefined(); // exactly a day old: kept
    clock.advance(60_000);
    await ops.journal.append('b', 1, frames(1, 1));
    expect(await ops.journal.head('a')).toBeUndefined();
    for (const journalRetentionMs of [0, -1, Number.NaN, Infinity, '1000']) {
      expect(() => createSqliteOpsStore({ path: join(dir, 'x.sqlite'), journalRetentionMs: journalRetentionMs as number })).toThrow(InvalidOptionsError);
    }
  });

  it('refuses bodies a text column would change, and malformed arguments', async () => {
    await expectRefusals(open().journal);
  });

  it('read-only: reads the journal and refuses to append or prune, writing nothing', async () => {
    const writer = open();
    await writer.journal.append('s', 0, frames(0, 2, true), { scope: 'tenant-a' });
    writer.close();
    const ops = open({ readonly: true });
    expect(await ops.journal.head('s')).toMatchObject({ seq: 2, ended: true, scope: 'tenant-a' });
    expect((await ops.journal.read('s', 1)).map((f) => f.seq)).toEqual([2]);
    expect(await rejection(ops.journal.append('s', 2, frames(2, 1), { scope: 'tenant-a' }))).toMatchObject({ code: 'SQLITE_READONLY' });
    expect(await rejection(ops.journal.prune({ before: Infinity }))).toMatchObject({ code: 'SQLITE_READONLY' });
    ops.close();
    expect((await open().journal.head('s'))?.seq).toBe(2);
  });

  it('read-only on a file from before the journal: no streams, and writes refused', async () => {
    open().close();
    const db = new Database(file);
    db.exec(`${SQLITE_BEFORE_5}; DROP TABLE cairn_journal_frames; DROP TABLE cairn_journal_streams; DELETE FROM cairn_ops_schema WHERE version >= ${journalMigration(MIGRATIONS)}`);
    db.close();
    const ops = open({ readonly: true });
    expect(await ops.journal.head('s')).toBeUndefined();
    expect(await ops.journal.read('s', 0)).toEqual([]);
    expect(await rejection(ops.journal.append('s', 0, frames(0, 1)))).toMatchObject({ code: 'invalid_options' });
    expect(await rejection(ops.journal.prune({ before: 1 }))).toMatchObject({ code: 'invalid_options' });
  });

  it('rejects calls after close', async () => {
    const ops = open();
    ops.close();
    await expect(ops.journal.head('s')).rejects.toBeInstanceOf(Error);
    await expect(ops.journal.append('s', 0, frames(0, 1))).rejects.toBeInstanceOf(Error);
  });
});

describePostgres('postgres journal', (env) => {
  const opened: PostgresOpsStore[] = [];
  afterEach(async () => {
    for (const ops of opened.splice(0)) await ops.close();
  });
  const open = (schema: string, options: { journalRetentionMs?: number } = {}) => {
    const ops = createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 4 } }, { schema, ...options });
    opened.push(ops);
    return ops;
  };
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

  it('keeps a row per stream and a row per frame; updated_at in ms on the database clock', async () => {
    const schema = env.newSchema();
    const ops = open(schema);
    await ops.setup();
    const [{ now }] = (await env.sql<{ now: number }>('SELECT extract(epoch FROM now())::float8 * 1000 AS now')) as [{ now: number }];
    await ops.journal.append('run-1', 0, frames(0, 2, true), { scope: 'tenant-a' });
    const rows = await env.sql(`SELECT stream_id, scope, last_seq::int AS last_seq, ended FROM "${schema}".cairn_journal_streams`);
    expect(rows).toEqual([{ stream_id: 'run-1', scope: 'tenant-a', last_seq: 2, ended: true }]);
    const head = (await ops.journal.head('run-1'))!;
    expect(Number.isInteger(head.updatedAt)).toBe(true);
    expect(Math.abs(head.updatedAt - now)).toBeLessThan(60_000);
    const frameRows = await env.sql(`SELECT seq::int AS seq, body, ends_leg FROM "${schema}".cairn_journal_frames ORDER BY seq`);
    expect(frameRows).toEqual(frames(0, 2, true).map((f) => ({ seq: f.seq, body: f.body, ends_leg: f.end })));
  });

  it('migrates a schema from before the journal', async () => {
    const schema = env.newSchema();
    const version = journalMigration(PG_MIGRATIONS);
    await env.sql(`CREATE SCHEMA "${schema}"`);
    await env.sql(`CREATE TABLE "${schema}".cairn_ops_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const client = new pg.Client({ connectionString: env.url });
    await client.connect();
    try {
      await client.query(`SET search_path TO "${schema}"`);
      for (const [i, migration] of PG_MIGRATIONS.slice(0, version - 1).entries()) {
        for (const statement of migration) await client.query(statement);
        await client.query('INSERT INTO cairn_ops_schema (version) VALUES ($1)', [i + 1]);
      }
    } finally {
      await client.end();
    }
    const ops = open(schema);
    expect(await rejection(ops.journal.head('s'))).toMatchObject({ code: 'persistence_failed' });
    await ops.setup();
    await ops.journal.append('s', 0, frames(0, 1));
    expect((await ops.journal.head('s'))?.seq).toBe(1);
    const versions = await env.sql<{ version: number }>(`SELECT version FROM "${schema}".cairn_ops_schema ORDER BY version`);
    expect(versions.map((v) => v.version)).toEqual(PG_MIGRATIONS.map((_, i) => i + 1));
  });

  it('an append sweeps streams older than journalRetentionMs away', async () => {
    const schema = env.newSchema();
    const ops = open(schema, { journalRetentionMs: 300 });
    await ops.setup();
    await ops.journal.append('old', 0, frames(0, 2));
    await sleep(400);
    await ops.journal.append('new', 0, frames(0, 1));
    expect(await ops.journal.head('old')).toBeUndefined();
    expect(await env.sql(`SELECT 1 FROM "${schema}".cairn_journal_frames WHERE stream_id = 'old'`)).toEqual([]);
    expect((await ops.journal.head('new'))?.seq).toBe(1);
    expect(() => createPostgresOpsStore({ connectionString: env.url }, { schema, journalRetentionMs: 0 })).toThrow(InvalidOptionsError);
  });

  it('refuses bodies a text column would change, and malformed arguments', async () => {
    const ops = open(env.newSchema());
    await ops.setup();
    await expectRefusals(ops.journal);
  });

  it('of 8 appends on one after through 8 pools, exactly one lands, many times over', async () => {
    const schema = env.newSchema();
    const stores = Array.from({ length: 8 }, () => open(schema));
    await stores[0]!.setup();
    for (let round = 0; round < 10; round++) {
      const streamId = `race-${round}`;
      const after = round % 2 === 0 ? 0 : 5;
      if (after > 0) await stores[0]!.journal.append(streamId, 0, frames(0, after));
      const settled = await Promise.allSettled(stores.map((ops) => ops.journal.append(streamId, after, frames(after, 2))));
      expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
      for (const s of settled) if (s.status === 'rejected') expect(s.reason).toMatchObject({ code: 'journal_conflict' });
      const count = await env.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".cairn_journal_frames WHERE stream_id = $1`, [streamId]);
      expect(count[0]!.n).toBe(after + 2);
    }
  });
});

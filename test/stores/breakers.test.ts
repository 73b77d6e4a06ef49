/**
 * The shared circuit breakers (the BreakerStore conformance suite runs in
 * test/conformance, with each backend's other suites): the migrations that add `cairn_breakers` to
 * a database of the previous version; what the stores refuse; and headless
 * runs whose breaker, opened through one store object, holds back a call made
 * through another.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidOptionsError, createInMemoryAgentRunStore, runAgent, type AgentRunStore } from 'cairn/agent';
import { runHeadless } from 'cairn/headless';
import { type BreakerState, type BreakerStore } from 'cairn/models';
import {
  MIGRATIONS as PG_MIGRATIONS, SCHEMA_VERSION as PG_SCHEMA_VERSION, createPostgresOpsStore, type PostgresOpsStore,
} from 'cairn/ops/postgres';
import { SCHEMA_VERSION, createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel } from 'cairn/testing';
import { describePostgres } from './pg-env.js';
import { recording as recordingStore } from './recording-store.js';
import { copyRunRows, SQLITE_BEFORE_5 } from '../support/old-schemas.js';

/**
 * Headless runs of a model that always answers 503 trip the breaker through
 * `first`; a run through `second` (another process's store object) is then
 * held back before its call; after the cooldown, on the runs' clock, a call
 * goes out and its success closes the breaker for both.
 */
async function tripAndCheck(first: BreakerStore, second: BreakerStore, store: () => AgentRunStore) {
  const down = createMockModel({ strict: false, responses: [() => ({ error: { status: 503, message: 'down' } })] });
  const deps = (breakerStore: BreakerStore, now: number) => ({ breakerStore, clock: { now: () => now }, breaker: { threshold: 2, cooldownMs: 500 } });
  for (let run = 0; run < 3 && typeof (await second.get('mock:mock-model'))?.cooldownUntil !== 'number'; run++) {
    const report = await runHeadless({ model: down, prompt: 'x', store: store(), deps: deps(first, 1_000) });
    expect(report.outcome).toBe('failed');
  }
  const open = await second.get('mock:mock-model');
  expect(open?.failures).toBeGreaterThanOrEqual(2);
  expect(open?.cooldownUntil).toBe(1_500);
  const model = createMockModel({ responses: [{ text: 'ok' }] });
  const blocked = await runHeadless({ model, prompt: 'x', store: store(), deps: deps(second, 1_200) });
  expect(blocked.error?.code).toBe('breaker_open');
  expect(model.calls).toHaveLength(0);
  const ok = await runHeadless({ model, prompt: 'x', store: store(), deps: deps(second, 1_500) });
  expect(ok.outcome).toBe('completed');
  expect(await first.get('mock:mock-model')).toEqual({ failures: 0 });
}

/** States every store refuses, with why. */
const BAD_STATES: [string, unknown][] = [
  ['a negative count', { failures: -1 }],
  ['a fractional count', { failures: 1.5 }],
  ['a count past the integer column', { failures: 2 ** 31 }],
  ['a count that is not a number', { failures: '3' }],
  ['a cooldown that is not a time', { failures: 1, cooldownUntil: Number.NaN }],
  ['an infinite cooldown', { failures: 1, cooldownUntil: Number.POSITIVE_INFINITY }],
  ['a cooldown past the safe integers', { failures: 1, cooldownUntil: 2 ** 60 }],
  ['no state', null],
];

async function expectRefusals(breakers: BreakerStore) {
  for (const [why, state] of BAD_STATES) {
    await expect(Promise.resolve().then(() => breakers.set('k:m', state as BreakerState)), why).rejects.toBeInstanceOf(InvalidOptionsError);
  }
  await expect(Promise.resolve().then(() => breakers.set('', { failures: 1 }))).rejects.toBeInstanceOf(InvalidOptionsError);
  await expect(Promise.resolve().then(() => breakers.get(''))).rejects.toBeInstanceOf(InvalidOptionsError);
  expect(await breakers.get('k:m')).toBeUndefined();
  // A fractional cooldown (a clock with sub-ms resolution) is kept rounded up: open a little longer, never shorter.
  await breakers.set('k:m', { failures: 5, cooldownUntil: 1_500.25 });
  expect(await breakers.get('k:m')).toEqual({ failures: 5, cooldownUntil: 1_501 });
  await breakers.set('k:m', { failures: 5, cooldownUntil: null as unknown as undefined });
  expect(await breakers.get('k:m')).toEqual({ failures: 5 });
}

describe('sqlite breakers', () => {
  let dir = '';
  let file = '';
  const cleanups: (() => void)[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-breakers-'));
    file = join(dir, 'ops.sqlite');
  });
  afterEach(() => {
    for (const cleanup of cleanups.splice(0).reverse()) cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const open = (clock?: { now(): number }) => {
    const ops = createSqliteOpsStore({ path: file, ...(clock ? { clock } : {}) });
    cleanups.push(() => ops.close());
    return ops;
  };
  const raw = () => {
    const db = new Database(file);
    cleanups.push(() => db.close());
    return db;
  };

  it('migrates a version 1 file with a run in it: the breaker table appears, the run loads and saves on', async () => {
    // A file as the previous Cairn left it: saved to by this store, then taken back to version 1 exactly (migration 1's
    // tables are the same in both), with a run in it.
    const store = recording();
    await runAgent({ model: createMockModel({ responses: [{ text: 'one' }] }), prompt: 'x', session: { store, runId: 'old-1', scope: 't' } });
    const before = createSqliteOpsStore({ path: file });
    for (const envelope of store.saved) await before.agentRuns.save(envelope);
    before.close();
    const v1 = new Database(file);
    v1.exec(`${SQLITE_BEFORE_5}; DROP TABLE cairn_session_turns; DROP TABLE cairn_sessions; DROP TABLE cairn_memories; DROP TABLE cairn_chats; DROP TABLE cairn_budget_entries; DROP TABLE cairn_breakers; DROP TABLE cairn_journal_frames; DROP TABLE cairn_journal_streams; DELETE FROM cairn_ops_schema WHERE version > 1`);
    expect(v1.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'cairn%' ORDER BY name").pluck().all())
      .toEqual(['cairn_leases', 'cairn_ops_schema', 'cairn_run_messages', 'cairn_run_receipts', 'cairn_runs']);
    v1.close();

    const ops = open({ now: () => 42 });
    expect(raw().prepare('SELECT version FROM cairn_ops_schema ORDER BY version').pluck().all())
      .toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(2);
    const columns = raw().prepare('SELECT name, type, "notnull", pk FROM pragma_table_info(\'cairn_breakers\') ORDER BY cid').all();
    expect(columns).toEqual([
      { name: 'key', type: 'TEXT', notnull: 0, pk: 1 },
      { name: 'failures', type: 'INTEGER', notnull: 1, pk: 0 },
      { name: 'cooldown_until', type: 'INTEGER', notnull: 0, pk: 0 },
      { name: 'updated_at', type: 'INTEGER', notnull: 1, pk: 0 },
    ]);
    expect(JSON.parse(JSON.stringify(await ops.agentRuns.load('old-1')))).toEqual(JSON.parse(JSON.stringify(store.saved.at(-1))));
    await ops.breakers.set('openai:gpt-4o', { failures: 5, cooldownUntil: 9_000 });
    // One row, `updated_at` on the store's clock.
    expect(raw().prepare('SELECT * FROM cairn_breakers').all()).toEqual([{ key: 'openai:gpt-4o', failures: 5, cooldown_until: 9_000, updated_at: 42 }]);
    const resumed = await runAgent({
      model: createMockModel({ responses: [{ text: 'two' }] }), prompt: 'y', session: { store: ops.agentRuns, runId: 'new-1', scope: 't' },
    });
    expect(resumed.status).toBe('completed');
  });

  it('set is one upsert: a row per key, rewritten in place', async () => {
    const ops = open();
    await ops.breakers.set('a:m', { failures: 1 });
    await ops.breakers.set('a:m', { failures: 5, cooldownUntil: 7_000 });
    await ops.breakers.set('b:m', { failures: 2 });
    await ops.breakers.set('a:m', { failures: 0 });
    expect(raw().prepare('SELECT key, failures, cooldown_until FROM cairn_breakers ORDER BY key').all()).toEqual([
      { key: 'a:m', failures: 0, cooldown_until: null },
      { key: 'b:m', failures: 2, cooldown_until: null },
    ]);
  });

  it('refuses what the columns cannot hold, and rounds a fractional cooldown up', async () => {
    await expectRefusals(open().breakers);
  });

  it('rejects calls after close', async () => {
    const ops = open();
    ops.close();
    await expect(ops.breakers.get('a:m')).rejects.toBeInstanceOf(Error);
    await expect(ops.breakers.set('a:m', { failures: 1 })).rejects.toBeInstanceOf(Error);
  });

  it('a breaker opened by headless runs through one store holds back a call through another store on the file', async () => {
    await tripAndCheck(open().breakers, open().breakers, () => createInMemoryAgentRunStore());
  });
});

/** An in-memory store that keeps a copy of every envelope it saved. */
const recording = () => recordingStore(createInMemoryAgentRunStore());

describePostgres('postgres breakers', (env) => {
  const all: PostgresOpsStore[] = [];
  const open = (schema: string) => {
    const ops = createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 4 } }, { schema });
    all.push(ops);
    return ops;
  };
  afterEach(async () => {
    for (const ops of all.splice(0)) await ops.close();
  });

  it('migrates a version 2 schema with a run in it: the breaker table appears, the run loads and saves on', async () => {
    const schema = env.newSchema();
    await env.sql(`CREATE SCHEMA "${schema}"`);
    await env.sql(`CREATE TABLE "${schema}".cairn_ops_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const client = new pg.Client({ connectionString: env.url });
    await client.connect();
    try {
      await client.query(`SET search_path TO "${schema}"`);
      for (const [i, migration] of PG_MIGRATIONS.slice(0, 2).entries()) {
        for (const statement of migration) await client.query(statement);
        await client.query('INSERT INTO cairn_ops_schema (version) VALUES ($1)', [i + 1]);
      }
    } finally {
      await client.end();
    }
    const store = recording();
    await runAgent({ model: createMockModel({ responses: [{ text: 'one' }] }), prompt: 'x', session: { store, runId: 'old-1', scope: 't' } });
    // Saved by this code into a current schema, then copied into the old one as the old code wrote it.
    const current = env.newSchema();
    const writer = open(current);
    await writer.setup();
    for (const envelope of store.saved) await writer.agentRuns.save(envelope);
    await copyRunRows((text, values) => env.sql(text, values), current, schema, 'old-1');

    const ops = open(schema);
    await ops.setup();
    const versions = await env.sql<{ version: number }>(`SELECT version FROM "${schema}".cairn_ops_schema ORDER BY version`);
    expect(versions.map((v) => v.version)).toEqual(Array.from({ length: PG_SCHEMA_VERSION }, (_, i) => i + 1));
    expect(PG_SCHEMA_VERSION).toBeGreaterThanOrEqual(3);
    const columns = await env.sql(`SELECT column_name, data_type, is_nullable FROM information_schema.columns
      WHERE table_schema = $1 AND table_name = 'cairn_breakers' ORDER BY ordinal_position`, [schema]);
    expect(columns).toEqual([
      { column_name: 'key', data_type: 'text', is_nullable: 'NO' },
      { column_name: 'failures', data_type: 'integer', is_nullable: 'NO' },
      { column_name: 'cooldown_until', data_type: 'bigint', is_nullable: 'YES' },
      { column_name: 'updated_at', data_type: 'timestamp with time zone', is_nullable: 'NO' },
    ]);
    expect(await ops.agentRuns.load('old-1')).toEqual(JSON.parse(JSON.stringify(store.saved.at(-1))));
    await ops.breakers.set('openai:gpt-4o', { failures: 5, cooldownUntil: 1_700_000_060_000 });
    expect(await env.sql(`SELECT key, failures, cooldown_until::text AS cooldown_until FROM "${schema}".cairn_breakers`))
      .toEqual([{ key: 'openai:gpt-4o', failures: 5, cooldown_until: '1700000060000' }]);
    const next = await runAgent({
      model: createMockModel({ responses: [{ text: 'two' }] }), prompt: 'y', session: { store: ops.agentRuns, runId: 'new-1', scope: 't' },
    });
    expect(next.status).toBe('completed');
  });

  it('refuses what the columns cannot hold, and rounds a fractional cooldown up', async () => {
    const ops = open(env.newSchema());
    await ops.setup();
    await expectRefusals(ops.breakers);
  });

  it('tells you to call setup() when the table is missing', async () => {
    const ops = open(env.newSchema());
    await expect(ops.breakers.get('a:m')).rejects.toMatchObject({ name: 'PersistenceError', message: expect.stringMatching(/setup\(\)/) });
  });

  it('a breaker opened by headless runs on one machine holds back a call on another', async () => {
    const schema = env.newSchema();
    const first = open(schema);
    await first.setup();
    await tripAndCheck(first.breakers, open(schema).breakers, () => createInMemoryAgentRunStore());
  });
});

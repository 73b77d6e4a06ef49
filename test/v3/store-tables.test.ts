/**
 * The V3 tables beside the ops tables: their own version table and migration
 * chain, the ops tables and cairn_ops_schema never touched, the ops run store
 * never listing, loading or pruning a V3 run; and what a V3 store refuses of
 * rows it did not write (a future record version, bytes that are not a
 * record), a lapsed lease, and writes on a read-only file.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore, V3_SCHEMA_VERSION } from 'cairn/ops/sqlite';
import { createPostgresAgentRunStoreV3, createPostgresOpsStore } from 'cairn/ops/postgres';
import { createManualClock, v3TestBlob, v3TestEnvelope } from 'cairn/testing';
import { decodePart, encodePart } from '../../src/stores/codec.js';
import { describePostgres } from '../stores/pg-env.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const newPath = () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-v3-tables-'));
  dirs.push(dir);
  return join(dir, 'ops.sqlite');
};

/** Every table's and index's SQL on the file but the V3 ones, and cairn_ops_schema's rows. */
function opsShape(path: string) {
  const db = new Database(path, { readonly: true });
  try {
    return {
      objects: db.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE '%cairn_runs_v3%' ORDER BY name").all(),
      versions: db.prepare('SELECT version, applied_at FROM cairn_ops_schema ORDER BY version').all(),
    };
  } finally {
    db.close();
  }
}

describe('V3 tables on SQLite', () => {
  it('live beside the ops tables, which stay as they were; the ops run store never sees a V3 run', async () => {
    const path = newPath();
    const clock = createManualClock();
    const ops = createSqliteOpsStore({ path, clock });
    const before = opsShape(path);
    const runs = createSqliteAgentRunStoreV3(ops, { clock });
    const blob = v3TestBlob('one package');
    await runs.save(v3TestEnvelope('v3-run', 1, { status: 'completed', context: { steps: [{ step: 0, phase: 'loop', blob: { digest: blob.digest }, manifest: {} }] } }), { blobs: [blob] });
    expect(opsShape(path)).toEqual(before);
    expect((await ops.agentRuns.list()).runs).toEqual([]);
    expect(await ops.agentRuns.load('v3-run')).toBeUndefined();
    expect(await ops.agentRuns.prune({ terminalBefore: Infinity })).toBe(0);
    expect((await runs.load('v3-run'))?.version).toBe(3);
    const db = new Database(path, { readonly: true });
    expect(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'cairn_runs_v3%' ORDER BY name").pluck().all()).toEqual([
      'cairn_runs_v3', 'cairn_runs_v3_blob_records', 'cairn_runs_v3_blob_refs', 'cairn_runs_v3_blobs', 'cairn_runs_v3_forgotten',
      'cairn_runs_v3_messages', 'cairn_runs_v3_receipts', 'cairn_runs_v3_schema', 'cairn_runs_v3_steps',
    ]);
    expect(db.prepare('SELECT version FROM cairn_runs_v3_schema').pluck().all()).toEqual(Array.from({ length: V3_SCHEMA_VERSION }, (_, i) => i + 1));
    db.close();
    ops.close();
  });

  it('migrates once (opening again adds no version row), and a newer version is refused with nothing changed', async () => {
    const path = newPath();
    const ops = createSqliteOpsStore({ path });
    createSqliteAgentRunStoreV3(ops);
    createSqliteAgentRunStoreV3(ops);
    const db = new Database(path);
    expect(db.prepare('SELECT COUNT(*) FROM cairn_runs_v3_schema').pluck().get()).toBe(V3_SCHEMA_VERSION);
    db.prepare('INSERT INTO cairn_runs_v3_schema (version, applied_at) VALUES (?, 0)').run(V3_SCHEMA_VERSION + 1);
    const shape = db.prepare('SELECT name, sql FROM sqlite_master ORDER BY name').all();
    expect(() => createSqliteAgentRunStoreV3(ops)).toThrow(expect.objectContaining({
      name: 'StoreSchemaVersionError', code: 'record_version_unsupported', found: V3_SCHEMA_VERSION + 1, supported: V3_SCHEMA_VERSION,
    }));
    expect(db.prepare('SELECT name, sql FROM sqlite_master ORDER BY name').all()).toEqual(shape);
    db.close();
    ops.close();
  });

  it('refuses a stored row of a future record version, or of bytes that are no record, on load', async () => {
    const path = newPath();
    const ops = createSqliteOpsStore({ path });
    const runs = createSqliteAgentRunStoreV3(ops);
    await runs.save(v3TestEnvelope('future', 1));
    await runs.save(v3TestEnvelope('garbage', 1));
    const db = new Database(path);
    // The head as a newer Cairn might write it: the same layout, record version 4.
    const head = decodePart<{ envelope: { version: number } }>('future', db.prepare('SELECT head FROM cairn_runs_v3 WHERE run_id = ?').pluck().get('future') as Buffer);
    head.envelope.version = 4;
    db.prepare('UPDATE cairn_runs_v3 SET head = ? WHERE run_id = ?').run(encodePart(head), 'future');
    db.prepare('UPDATE cairn_runs_v3 SET head = ? WHERE run_id = ?').run(Buffer.from('not a record'), 'garbage');
    db.close();
    await expect(runs.load('future')).rejects.toMatchObject({ name: 'CheckpointVersionError', code: 'checkpoint_version_unsupported' });
    await expect(runs.load('garbage')).rejects.toMatchObject({ code: 'record_corrupt' });
    ops.close();
  });

  it('checks a save\'s lease against the ops store\'s leases in the same transaction', async () => {
    const path = newPath();
    const clock = createManualClock();
    const ops = createSqliteOpsStore({ path, clock });
    const runs = createSqliteAgentRunStoreV3(ops, { clock });
    const lease = (await ops.leases.acquire('run:r-1', 'me', 1000))!;
    await runs.save(v3TestEnvelope('r-1', 1), { lease });
    clock.advance(2000);
    await expect(runs.save(v3TestEnvelope('r-1', 2), { lease })).rejects.toMatchObject({ code: 'lease_lost' });
    expect((await runs.load('r-1'))!.revision).toBe(1);
    ops.close();
  });

  it('a read-only ops store reads V3 runs and refuses writes; a read-only file without V3 tables is empty', async () => {
    const path = newPath();
    const ops = createSqliteOpsStore({ path });
    const empty = createSqliteAgentRunStoreV3(createSqliteOpsStore({ path, readonly: true }));
    expect(await empty.load('r-1')).toBeUndefined();
    await expect(empty.save(v3TestEnvelope('r-1', 1))).rejects.toMatchObject({ code: 'invalid_options' });
    const runs = createSqliteAgentRunStoreV3(ops);
    await runs.save(v3TestEnvelope('r-1', 1));
    ops.close();
    const reader = createSqliteOpsStore({ path, readonly: true });
    const readOnly = createSqliteAgentRunStoreV3(reader);
    expect((await readOnly.load('r-1'))?.revision).toBe(1);
    expect((await readOnly.list()).runs.map((r) => r.runId)).toEqual(['r-1']);
    await expect(readOnly.save(v3TestEnvelope('r-1', 2))).rejects.toBeDefined();
    reader.close();
  });
});

describePostgres('V3 tables on PostgreSQL', (env) => {
  it('live beside the ops tables in the same schema, which stay as they were; the ops run store never sees a V3 run', async () => {
    const schema = env.newSchema();
    const ops = createPostgresOpsStore({ connectionString: env.url }, { schema });
    await ops.setup();
    const shape = () => env.sql(`SELECT table_name, column_name, data_type FROM information_schema.columns
  WHERE table_schema = $1 AND table_name NOT LIKE 'cairn_runs_v3%' ORDER BY table_name, column_name`, [schema]);
    const versions = () => env.sql(`SELECT version, applied_at FROM "${schema}".cairn_ops_schema ORDER BY version`);
    const [columns, applied] = [await shape(), await versions()];
    const runs = createPostgresAgentRunStoreV3({ connectionString: env.url }, { schema });
    await runs.setup();
    await runs.setup();
    await runs.save(v3TestEnvelope('v3-run', 1, { status: 'completed' }));
    expect(await shape()).toEqual(columns);
    expect(await versions()).toEqual(applied);
    expect((await ops.agentRuns.list()).runs).toEqual([]);
    expect(await ops.agentRuns.prune({ terminalBefore: Number.MAX_SAFE_INTEGER })).toBe(0);
    expect((await runs.load('v3-run'))?.version).toBe(3);
    expect((await env.sql(`SELECT version FROM "${schema}".cairn_runs_v3_schema`)).map((r) => r.version)).toEqual([1]);
    await env.sql(`INSERT INTO "${schema}".cairn_runs_v3_schema (version) VALUES (2)`);
    await expect(runs.setup()).rejects.toMatchObject({ name: 'StoreSchemaVersionError', code: 'record_version_unsupported', found: 2 });
    await runs.close();
    await ops.close();
  }, 30_000);
});

describe('docs/v3.md', () => {
  it('shows each backend\'s V3 schema exactly as its migration chain has it', async () => {
    const { readFileSync } = await import('node:fs');
    const { V3_MIGRATIONS: pg } = await import('cairn/ops/postgres');
    const { V3_MIGRATIONS: sqlite } = await import('cairn/ops/sqlite');
    const page = readFileSync(new URL('../../docs/v3.md', import.meta.url), 'utf8');
    for (const [name, chain] of [['v3-sqlite', sqlite], ['v3-postgres', pg]] as const) {
      const block = new RegExp(`<!-- schema: ${name} -->\\n\`\`\`sql\\n([\\s\\S]*?)\`\`\``).exec(page);
      expect(block, `docs/v3.md has a sql block after <!-- schema: ${name} -->`).not.toBeNull();
      expect(block![1]).toBe(`${chain.flat().map((statement) => `${statement};`).join('\n')}\n`);
    }
  });
});

describe('a save that fails part-way writes nothing', () => {
  it('SQLite: a transcript row write that fails (injected by a trigger) leaves the run, its rows, its package and its refs as they were', async () => {
    const path = newPath();
    const ops = createSqliteOpsStore({ path });
    const runs = createSqliteAgentRunStoreV3(ops);
    const first = v3TestBlob('first');
    const second = v3TestBlob('second');
    const steps = (digests: string[]) => ({ context: { steps: digests.map((digest, step) => ({ step, phase: 'loop' as const, blob: { digest }, manifest: {} })) } });
    await runs.save(v3TestEnvelope('r-1', 1, { ...steps([first.digest]), snapshot: { value: 'running', context: { step: 1, messages: [{ role: 'user', content: 'hi' }] } } }), { blobs: [first] });
    const before = { record: await runs.load('r-1'), counts: runs.rowCounts() };
    const db = new Database(path);
    db.exec("CREATE TRIGGER fail_message BEFORE INSERT ON cairn_runs_v3_messages BEGIN SELECT RAISE(ABORT, 'injected: disk full'); END");
    await expect(runs.save(v3TestEnvelope('r-1', 2, {
      ...steps([first.digest, second.digest]),
      snapshot: { value: 'running', context: { step: 2, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] } },
    }), { blobs: [second] })).rejects.toThrow(/injected: disk full/);
    expect(await runs.load('r-1')).toEqual(before.record);
    expect(runs.rowCounts()).toEqual(before.counts);
    expect((await runs.getBlob(second.digest)).status).toBe('missing');
    db.exec('DROP TRIGGER fail_message');
    db.close();
    // The same save goes through once the fault is gone: nothing half-written stood in its way.
    await runs.save(v3TestEnvelope('r-1', 2, {
      ...steps([first.digest, second.digest]),
      snapshot: { value: 'running', context: { step: 2, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] } },
    }), { blobs: [second] });
    expect((await runs.load('r-1'))!.revision).toBe(2);
    expect((await runs.getBlob(second.digest)).status).toBe('found');
    ops.close();
  });
});

describePostgres('a PostgreSQL save that fails part-way writes nothing', (env) => {
  it('a refs write that fails (injected by a trigger) leaves the run and the package as they were', async () => {
    const schema = env.newSchema();
    const runs = createPostgresAgentRunStoreV3({ connectionString: env.url }, { schema });
    await runs.setup();
    const first = v3TestBlob('first');
    const second = v3TestBlob('second');
    const steps = (digests: string[]) => ({ context: { steps: digests.map((digest, step) => ({ step, phase: 'loop' as const, blob: { digest }, manifest: {} })) } });
    await runs.save(v3TestEnvelope('r-1', 1, steps([first.digest])), { blobs: [first] });
    const before = { record: await runs.load('r-1'), counts: await runs.rowCounts() };
    await env.sql(`CREATE FUNCTION "${schema}".fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected: disk full'; END $$`);
    await env.sql(`CREATE TRIGGER fail_refs BEFORE INSERT ON "${schema}".cairn_runs_v3_blob_refs FOR EACH ROW EXECUTE FUNCTION "${schema}".fail()`);
    await expect(runs.save(v3TestEnvelope('r-1', 2, steps([first.digest, second.digest])), { blobs: [second] })).rejects.toThrow(/injected: disk full/);
    expect(await runs.load('r-1')).toEqual(before.record);
    expect(await runs.rowCounts()).toEqual(before.counts);
    expect((await runs.getBlob(second.digest)).status).toBe('missing');
    await env.sql(`DROP TRIGGER fail_refs ON "${schema}".cairn_runs_v3_blob_refs`);
    await runs.save(v3TestEnvelope('r-1', 2, steps([first.digest, second.digest])), { blobs: [second] });
    expect((await runs.load('r-1'))!.revision).toBe(2);
    await runs.close();
  }, 30_000);
});

/**
 * V3 schemas 2 and 3 on SQLite (step rows keyed by the run's number; list
 * indexes of runs at rest only): a file whose V3
 * tables are at version 1, written by the store of that version
 * (test/v3/fixtures/v3-tables-1.sqlite, with the records that store loaded
 * from it in v3-tables-1.loaded.json; written at commit e8e9f80 by
 * test/v3/fixtures/generate-v3-tables-1.ts, kept as they are), is migrated
 * when a store opens it: every record loads as it did, a run saved after the
 * migration goes on from its stored steps, a new run's steps stay its own,
 * prune takes a pruned run's step rows with it; a read-only file of
 * version 1 is read as it is and left at version 1.
 */
import Database from 'better-sqlite3';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore, V3_SCHEMA_VERSION } from 'cairn/ops/sqlite';
import { createManualClock, v3TestBlob, v3TestEnvelope } from 'cairn/testing';
import type { AgentRunEnvelopeV3 } from '../../src/v3/envelope.js';

const fixture = new URL('./fixtures/v3-tables-1.sqlite', import.meta.url);
const loaded = JSON.parse(readFileSync(new URL('./fixtures/v3-tables-1.loaded.json', import.meta.url), 'utf8')) as Record<string, AgentRunEnvelopeV3>;
const RUNS = ['with-context', 'no-context', 'running'];

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function copyOfFixture(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-v3-migration-'));
  dirs.push(dir);
  const path = join(dir, 'ops.sqlite');
  copyFileSync(fixture, path);
  return path;
}
const json = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;
function inspect(path: string) {
  const db = new Database(path, { readonly: true });
  try {
    return {
      versions: db.prepare('SELECT version FROM cairn_runs_v3_schema ORDER BY version').pluck().all(),
      stepRows: db.prepare('SELECT COUNT(*) FROM cairn_runs_v3_steps').pluck().get() as number,
      columns: db.prepare("SELECT name FROM pragma_table_info('cairn_runs_v3_steps') ORDER BY cid").pluck().all(),
    };
  } finally {
    db.close();
  }
}

describe('V3 tables on SQLite, schema 1 to the current one', () => {
  it('the fixture is what it says: schema 1, step rows keyed by (run_id, idx), three runs', () => {
    const shape = inspect(fileURLToPathOf(fixture));
    expect(shape.versions).toEqual([1]);
    expect(shape.columns).toEqual(['run_id', 'idx', 'body']);
    expect(shape.stepRows).toBe(loaded['with-context']!.context!.steps.length + loaded.running!.context!.steps.length);
    expect(loaded['no-context']!.context).toBeUndefined();
  });

  it('migrates on open: every record loads as the schema-1 store loaded it, and a save after the migration goes on from its steps', async () => {
    const path = copyOfFixture();
    const ops = createSqliteOpsStore({ path });
    const runs = createSqliteAgentRunStoreV3(ops);
    expect(inspect(path)).toMatchObject({ versions: Array.from({ length: V3_SCHEMA_VERSION }, (_, i) => i + 1), columns: ['step_key', 'body'], stepRows: inspect(fileURLToPathOf(fixture)).stepRows });
    for (const runId of RUNS) expect(json(await runs.load(runId)), runId).toEqual(loaded[runId]);

    // The running record: a step added, then the context cut back to two steps.
    const stored = (await runs.load('running'))!;
    const steps = stored.context!.steps;
    const next = { step: 3, phase: 'loop' as const, blob: { digest: steps[2]!.blob.digest }, manifest: { step: 3, note: 'after the migration' } };
    await runs.save(v3TestEnvelope('running', 3, { context: { steps: [...steps, next], compiler: { pass: 4 } } }));
    expect((await runs.load('running'))!.context!.steps.map((s) => s.manifest)).toEqual([...steps.map((s) => s.manifest), next.manifest]);
    await runs.save(v3TestEnvelope('running', 4, { context: { steps: steps.slice(0, 2), compiler: { pass: 4 } } }));
    expect((await runs.load('running'))!.context!.steps).toEqual(steps.slice(0, 2));

    // A run made after the migration takes a number of its own: its steps and the old runs' stay apart.
    const blob = v3TestBlob('new package');
    const own = [0, 1, 2].map((step) => ({ step, phase: 'loop' as const, blob: { digest: blob.digest }, manifest: { step, fresh: true } }));
    await runs.save(v3TestEnvelope('fresh', 1, { context: { steps: own } }), { blobs: [blob] });
    expect((await runs.load('fresh'))!.context!.steps).toEqual(own);
    for (const runId of ['with-context', 'no-context']) expect(json(await runs.load(runId)), runId).toEqual(loaded[runId]);
    expect(inspect(path).stepRows).toBe(loaded['with-context']!.context!.steps.length + 2 + 3);

    // Prune: the two completed fixture runs go, with their step rows; the running ones keep theirs.
    expect(await runs.prune({ terminalBefore: Number.MAX_SAFE_INTEGER })).toBe(2);
    expect(inspect(path).stepRows).toBe(2 + 3);
    expect(await runs.load('with-context')).toBeUndefined();
    expect((await runs.load('running'))!.context!.steps).toEqual(steps.slice(0, 2));
    expect((await runs.load('fresh'))!.context!.steps).toEqual(own);
    ops.close();
  });

  it('a read-only file of schema 1 is read as it is, refuses writes, and stays at schema 1', async () => {
    const path = copyOfFixture();
    // The ops tables first (the fixture holds only the V3 ones), then the file read-only.
    createSqliteOpsStore({ path }).close();
    const reader = createSqliteOpsStore({ path, readonly: true });
    const runs = createSqliteAgentRunStoreV3(reader);
    for (const runId of RUNS) expect(json(await runs.load(runId)), runId).toEqual(loaded[runId]);
    await expect(runs.save({ ...(await runs.load('running'))!, revision: 3 })).rejects.toMatchObject({ code: 'invalid_options' });
    await expect(runs.prune({ terminalBefore: Number.MAX_SAFE_INTEGER })).rejects.toMatchObject({ code: 'invalid_options' });
    reader.close();
    expect(inspect(path)).toMatchObject({ versions: [1], columns: ['run_id', 'idx', 'body'] });
  });
});

describe('V3 runs table on SQLite, schema 3: list indexes of runs at rest only', () => {
  it('a running run saved as running again lists with its new time; one that ends moves to the runs at rest; ties go by run id', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-v3-migration-'));
    dirs.push(dir);
    const clock = createManualClock(1_000);
    const ops = createSqliteOpsStore({ path: join(dir, 'ops.sqlite'), clock });
    const runs = createSqliteAgentRunStoreV3(ops, { clock });
    await runs.save(v3TestEnvelope('b', 1));
    await runs.save(v3TestEnvelope('a', 1, { status: 'completed' }));
    clock.advance(10);
    await runs.save(v3TestEnvelope('c', 1, { status: 'suspended' }));
    await runs.save(v3TestEnvelope('b', 2));
    const ids = async (query: Parameters<typeof runs.list>[0] = {}) => (await runs.list(query)).runs.map((r) => `${r.runId}:${r.status}:${r.revision}:${r.updatedAt}`);
    expect(await ids()).toEqual(['c:suspended:1:1010', 'b:running:2:1010', 'a:completed:1:1000']);
    expect(await ids({ status: 'running', scope: 'tenant-a' })).toEqual(['b:running:2:1010']);
    // Page by page across the two indexes.
    const first = await runs.list({ limit: 1 });
    const second = await runs.list({ limit: 1, cursor: first.nextCursor });
    const third = await runs.list({ limit: 1, cursor: second.nextCursor });
    expect([first, second, third].map((p) => p.runs.map((r) => r.runId))).toEqual([['c'], ['b'], ['a']]);
    expect(third.nextCursor).toBeUndefined();
    clock.advance(10);
    await runs.save(v3TestEnvelope('b', 3, { status: 'completed' }));
    expect(await ids({ status: 'running' })).toEqual([]);
    expect(await ids({ status: ['completed', 'running'] })).toEqual(['b:completed:3:1020', 'a:completed:1:1000']);
    expect(await runs.prune({ terminalBefore: 1_015 })).toBe(1);
    expect(await ids()).toEqual(['b:completed:3:1020', 'c:suspended:1:1010']);
    ops.close();
  });
});

describe('V3 runs table on SQLite, schema 4: a running run\'s row keeps its size', () => {
  it('padded to one size while the run runs (its head growing and shrinking within a class), unpadded once it ends', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-v3-migration-'));
    dirs.push(dir);
    const path = join(dir, 'ops.sqlite');
    const ops = createSqliteOpsStore({ path });
    const runs = createSqliteAgentRunStoreV3(ops);
    const db = new Database(path, { readonly: true });
    // The row's whole payload (the file's only V3 run): dbstat sums it over the row's leaf and overflow pages.
    const size = () => ({
      total: db.prepare("SELECT sum(payload) FROM dbstat WHERE name = 'cairn_runs_v3'").pluck().get() as number,
      pad: db.prepare("SELECT length(pad) FROM cairn_runs_v3 WHERE run_id = 'p'").pluck().get() as number | null,
    });
    const notes = (n: number) => ({ value: 'running', context: { step: n, messages: [], note: 'x'.repeat(n) } });
    const sizes: number[] = [];
    for (const [revision, n] of [[1, 40], [2, 90], [3, 10], [4, 200], [5, 60]] as const) {
      await runs.save(v3TestEnvelope('p', revision, { snapshot: notes(n) }));
      sizes.push(size().total);
      expect(size().pad).toBeGreaterThan(0);
      expect((await runs.load('p'))!.snapshot).toEqual(notes(n));
    }
    expect(new Set(sizes).size).toBe(1);
    // A head past its class by more than one page takes the next class, and keeps it.
    await runs.save(v3TestEnvelope('p', 6, { snapshot: notes(2_500) }));
    const grown = size().total;
    expect(grown).toBeGreaterThan(sizes[0]!);
    await runs.save(v3TestEnvelope('p', 7, { snapshot: notes(2_400) }));
    expect(size().total).toBe(grown);
    await runs.save(v3TestEnvelope('p', 8, { status: 'completed', snapshot: notes(5) }));
    expect(size().pad).toBeNull();
    expect((await runs.load('p'))!.status).toBe('completed');
    db.close();
    ops.close();
  });
});

function fileURLToPathOf(url: URL): string {
  return decodeURIComponent(url.pathname);
}

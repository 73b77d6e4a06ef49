/**
 * V3 schema 2 on SQLite (step rows keyed by the run's number): a file whose V3
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
import { createSqliteAgentRunStoreV3, createSqliteOpsStore } from 'cairn/ops/sqlite';
import { v3TestBlob, v3TestEnvelope } from 'cairn/testing';
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

describe('V3 tables on SQLite, schema 1 to 2', () => {
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
    expect(inspect(path)).toMatchObject({ versions: [1, 2], columns: ['step_key', 'body'], stepRows: inspect(fileURLToPathOf(fixture)).stepRows });
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

function fileURLToPathOf(url: URL): string {
  return decodeURIComponent(url.pathname);
}

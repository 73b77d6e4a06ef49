/**
 * cairn/ops/sqlite opened `readonly: true` or `create: false`: a read-only
 * store reads runs (inspectRun too) without writing the file or creating
 * anything beside it, whether its last writer closed (no -wal) or is still at
 * work (a -wal); and a file that is not a Cairn store is refused, unchanged.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent, type AgentTool } from 'cairn/agent';
import { inspectRun } from 'cairn/headless';
import { createMockModel } from 'cairn/testing';
import { SCHEMA_VERSION, StoreSchemaVersionError, createSqliteOpsStore, type SqliteOpsStore } from 'cairn/ops/sqlite';

let dir = '';
let file = '';
const cleanups: (() => void)[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-sqlite-ro-'));
  file = join(dir, 'ops.sqlite');
});

afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
  rmSync(dir, { recursive: true, force: true });
});

function open(options: { readonly?: boolean; create?: boolean } = {}, path = file): SqliteOpsStore {
  const ops = createSqliteOpsStore({ path, ...options });
  cleanups.push(() => ops.close());
  return ops;
}

/** The directory's names with each file's hash and mtime: what "nothing was written" is checked against. */
function state(at = dir): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(at).sort()) {
    const path = join(at, name);
    out[name] = `${createHash('sha256').update(readFileSync(path)).digest('hex')} ${statSync(path).mtimeMs}`;
  }
  return out;
}

const publish: AgentTool = { parameters: { type: 'object', properties: {} }, needsApproval: true, execute: () => 'published' };

/** A run that waits for an approval, saved through a writing store. */
async function waitingRun(ops: SqliteOpsStore, runId = 'r-1') {
  const result = await runAgent({
    model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'publish', args: {} }] }, { text: 'Done.' }] }),
    prompt: 'Publish.',
    tools: { publish },
    session: { store: ops.agentRuns, runId, scope: 'tenant-a' },
  });
  expect(result.status).toBe('suspended');
}

const rejection = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error);

describe('readonly: true', () => {
  it('reads a store whose writer closed from a copy: loads, lists and inspects, writes nothing, creates no -wal or -shm', async () => {
    const writer = open();
    await waitingRun(writer);
    writer.close();
    expect(readdirSync(dir)).toEqual(['ops.sqlite']);
    const before = state();

    const ops = open({ readonly: true });
    expect((await ops.agentRuns.load('r-1'))?.status).toBe('suspended');
    expect((await ops.agentRuns.list()).runs.map((r) => r.runId)).toEqual(['r-1']);
    const report = await inspectRun(ops.agentRuns, 'r-1', { scope: 'tenant-a' });
    expect(report).toMatchObject({ outcome: 'pending', status: 'suspended' });
    expect(await ops.leases.inspect('k')).toBeNull();
    expect(await ops.breakers.get('mock:m')).toBeUndefined();
    const stored = await ops.agentRuns.load('r-1');
    // Refused because the store is read-only: the save is otherwise a valid next revision.
    expect(await rejection(ops.agentRuns.save({ ...stored!, revision: stored!.revision + 1 }))).toMatchObject({ code: 'SQLITE_READONLY' });
    expect(await rejection(ops.leases.acquire('k', 'me', 1000))).toMatchObject({ code: 'SQLITE_READONLY' });
    ops.close();
    expect(state()).toEqual(before);
  });

  it('reads a store a writer has open in place, through its -wal, and sees its last commit', async () => {
    const writer = open();
    await waitingRun(writer);
    expect(readdirSync(dir).sort()).toEqual(['ops.sqlite', 'ops.sqlite-shm', 'ops.sqlite-wal']);
    const main = createHash('sha256').update(readFileSync(file)).digest('hex');
    const ops = open({ readonly: true });
    expect((await ops.agentRuns.load('r-1'))?.status).toBe('suspended');
    await waitingRun(writer, 'r-2');
    expect((await ops.agentRuns.list()).runs.map((r) => r.runId).sort()).toEqual(['r-1', 'r-2']);
    ops.close();
    expect(readdirSync(dir).sort()).toEqual(['ops.sqlite', 'ops.sqlite-shm', 'ops.sqlite-wal']);
    expect(createHash('sha256').update(readFileSync(file)).digest('hex')).toBe(main);
  });

  it('refuses a store of a newer schema', () => {
    const writer = open();
    writer.close();
    const db = new Database(file);
    db.prepare('INSERT INTO cairn_ops_schema (version, applied_at) VALUES (?, 0)').run(SCHEMA_VERSION + 1);
    db.close();
    expect(() => open({ readonly: true })).toThrow(StoreSchemaVersionError);
  });
});

describe('a file that is not a Cairn store', () => {
  const foreign = (path: string, wal: boolean) => {
    const db = new Database(path);
    if (wal) db.pragma('journal_mode = WAL');
    db.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')");
    db.close();
  };
  const files: Array<[string, (path: string) => void, RegExp]> = [
    ['a text file', (path) => writeFileSync(path, 'hello, not a database\n'), /is not a Cairn store: it is not a SQLite database/],
    ['an empty file', (path) => writeFileSync(path, ''), /is not a Cairn store: the file is empty/],
    ['a SQLite file with other tables', (path) => foreign(path, false), /without Cairn's tables/],
    ['a WAL-mode SQLite file with other tables', (path) => foreign(path, true), /without Cairn's tables/],
    ['an empty SQLite database', (path) => new Database(path).pragma('user_version = 7'), /the database is empty/],
  ];

  it.each(files)('%s: refused by readonly and by create: false, and left as it was', (_name, make, message) => {
    make(file);
    const before = state();
    for (const options of [{ readonly: true }, { create: false }]) {
      let thrown: unknown;
      try {
        open(options);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(options)).toMatchObject({ name: 'NotACairnStoreError', code: 'invalid_options', path: file });
      expect((thrown as Error).message).toMatch(message);
      expect((thrown as Error).message).toContain(file);
      expect(state()).toEqual(before);
    }
  });

  it('create: false refuses a missing file and creates none; it opens (and keeps up to date) a real store', async () => {
    expect(() => open({ create: false })).toThrow(/there is no such file/);
    expect(readdirSync(dir)).toEqual([]);
    const writer = open();
    await waitingRun(writer);
    writer.close();
    const ops = open({ create: false });
    expect((await ops.agentRuns.load('r-1'))?.status).toBe('suspended');
  });
});

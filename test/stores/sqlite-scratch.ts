/**
 * A scratch directory for a SQLite store test file: made before each test and removed after it, with the stores and
 * raw connections a test opened closed first (in reverse order).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach } from 'vitest';
import { createSqliteOpsStore, type SqliteOpsStore } from 'cairn/ops/sqlite';

export function sqliteScratch(prefix: string) {
  let dir = '';
  const cleanups: (() => void)[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  afterEach(() => {
    for (const cleanup of cleanups.splice(0).reverse()) cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    /** A file's path in this test's directory. */
    file: (name: string): string => join(dir, name),
    /** An ops store on `path`, closed after the test. */
    open(path: string): SqliteOpsStore {
      const ops = createSqliteOpsStore({ path });
      cleanups.push(() => ops.close());
      return ops;
    },
    /** A raw better-sqlite3 connection to `path`, closed after the test. */
    raw(path: string): Database.Database {
      const db = new Database(path);
      cleanups.push(() => db.close());
      return db;
    },
  };
}

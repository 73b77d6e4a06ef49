/**
 * Opening an ops database without writing anything, and telling a Cairn
 * store from any other file.
 *
 * SQLite opens a WAL-mode file read-only by creating its `-wal` and `-shm`
 * files when they are missing (and leaves them behind), even with
 * SQLITE_OPEN_READONLY. They are missing whenever the last writer closed
 * cleanly: its checkpoint moved every commit into the main file. So a
 * read-only open of such a file reads an in-memory copy of it instead (the
 * main file is then the whole database), and only a file with a `-wal`
 * beside it, which a writer is using or a crash left, is opened in place:
 * SQLite then uses the `-wal` and `-shm` that are there.
 */
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync, type Stats } from 'node:fs';
import Database from 'better-sqlite3';
import { CairnError } from '../../errors/index.js';
import { SCHEMA_VERSION, StoreSchemaVersionError } from './schema.js';

/** The file is not a Cairn ops database: empty, not SQLite, or SQLite without Cairn's tables. Nothing was written to it. */
export class NotACairnStoreError extends CairnError {
  readonly backend = 'sqlite' as const;
  constructor(readonly path: string, readonly why: string) {
    super('invalid_options', `${path} is not a Cairn store: ${why}.`, { fault: 'user' });
    this.name = 'NotACairnStoreError';
  }
}

const MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
/** Bytes 18 and 19 of the header are the write and read format versions: 2 means WAL. */
const WAL_FORMAT = 2;
const LEGACY_FORMAT = 1;

/** The first 100 bytes (the database header), or fewer for a shorter file. */
function header(path: string): Buffer {
  const fd = openSync(path, 'r');
  try {
    const bytes = Buffer.alloc(100);
    return bytes.subarray(0, readSync(fd, bytes, 0, 100, 0));
  } finally {
    closeSync(fd);
  }
}

const same = (a: Stats, b: Stats) => a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino;

/**
 * The whole file, read while no `-wal` exists and unchanged from start to end
 * (a writer that opened meanwhile would have made a `-wal` first); undefined
 * when that could not be had, or the file is too large to hold in memory.
 */
function checkpointedCopy(path: string): Buffer | undefined {
  for (let attempt = 0; attempt < 3; attempt++) {
    if (existsSync(`${path}-wal`)) return undefined;
    try {
      const before = statSync(path);
      const bytes = readFileSync(path);
      const after = statSync(path);
      if (!existsSync(`${path}-wal`) && same(before, after) && bytes.length === after.size) return bytes;
    } catch (error) {
      if (error instanceof RangeError) return undefined; // over the largest Buffer
      throw error;
    }
  }
  return undefined;
}

/** Refuses a path that is missing, not a file, or an empty file, before SQLite opens it. */
export function refuseNonFile(path: string): void {
  if (!existsSync(path)) throw new NotACairnStoreError(path, 'there is no such file');
  const stats = statSync(path);
  if (!stats.isFile()) throw new NotACairnStoreError(path, 'it is not a file');
  if (stats.size === 0) throw new NotACairnStoreError(path, 'the file is empty');
}

/**
 * Opens `path` read-only: nothing is written to the file or beside it when no
 * `-wal` is there, and nothing but SQLite's own `-shm` index when one is.
 * Throws NotACairnStoreError for an empty or non-SQLite file, or one without
 * Cairn's tables; StoreSchemaVersionError for a newer schema.
 * @internal Takes or gives a better-sqlite3 handle, whose types stay out of the published declarations (a user need not install @types/better-sqlite3).
 */
export function openReadOnlyDatabase(path: string, busyTimeoutMs: number): Database.Database {
  refuseNonFile(path);
  const head = header(path);
  if (head.length < MAGIC.length || !head.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new NotACairnStoreError(path, 'it is not a SQLite database');
  }
  const wal = head[18] === WAL_FORMAT || head[19] === WAL_FORMAT;
  const copy = wal ? checkpointedCopy(path) : undefined;
  let db: Database.Database;
  if (copy) {
    // An in-memory database cannot be in WAL mode: the copy says rollback journal, the file keeps what it says.
    copy[18] = LEGACY_FORMAT;
    copy[19] = LEGACY_FORMAT;
    db = new Database(copy, { readonly: true });
  } else {
    db = new Database(path, { readonly: true, fileMustExist: true, timeout: busyTimeoutMs });
  }
  try {
    db.pragma(`busy_timeout = ${Math.floor(busyTimeoutMs)}`);
    checkCairnSchema(db, path);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * Refuses a database that holds no Cairn schema, or a newer one, with a read
 * of its catalogue only. A file SQLite cannot read as a database is not a store.
 * @internal Takes or gives a better-sqlite3 handle, whose types stay out of the published declarations (a user need not install @types/better-sqlite3).
 */
export function checkCairnSchema(db: Database.Database, path: string): number {
  let tables: string[];
  try {
    tables = db.prepare<[], string>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('cairn_ops_schema', 'cairn_runs')").pluck().all();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') throw new NotACairnStoreError(path, 'it is not a SQLite database');
    throw error;
  }
  if (tables.length < 2) {
    const any = db.prepare<[], number>("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'").pluck().get()!;
    throw new NotACairnStoreError(path, any === 0 ? 'the database is empty' : "it is a SQLite database without Cairn's tables");
  }
  const version = db.prepare<[], number | null>('SELECT MAX(version) FROM cairn_ops_schema').pluck().get() ?? 0;
  if (version > SCHEMA_VERSION) throw new StoreSchemaVersionError(version, SCHEMA_VERSION);
  return version;
}

/**
 * Whether the database has a table (an older schema may lack one a newer migration adds).
 * @internal Takes or gives a better-sqlite3 handle, whose types stay out of the published declarations (a user need not install @types/better-sqlite3).
 */
export function hasTable(db: Database.Database, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

/**
 * `cairn backup <dest>`: a consistent copy of a run store, taken while runs
 * may be working on it, with SQLite's online backup through a read-only
 * connection (so the commits still in the store's `-wal` are in the copy).
 * A plain file copy of a live store is not safe: see docs/cli.md, Backups.
 *
 * The copy is written beside `dest` under a temporary name, checked, and only
 * then linked to `dest`, which must not exist: a backup never overwrites a
 * file, and a half-written copy never carries the name.
 */
import { constants, copyFileSync, existsSync, linkSync, rmSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { PersistenceError } from '../errors/index.js';
import { connectionOf } from '../stores/sqlite/index.js';
import { atMost, flag, parse, str, UsageError, type OptionSpecs } from './args.js';
import { DEFAULT_STORE, openStoreReadOnly, printJson, storeLocation, type Io } from './context.js';
import { BACKUP_HELP } from './help.js';

const BACKUP_OPTIONS = { store: { type: 'string' }, json: { type: 'boolean' } } as const satisfies OptionSpecs;

const refuseExisting = (dest: string) =>
  new UsageError(`${dest} exists already; cairn backup never overwrites a file: pass a path that does not exist yet.`);

/** Gives `from` the name `to` unless `to` exists (atomically where the file system has hard links). */
function claim(from: string, to: string, shownTo: string): void {
  try {
    linkSync(from, to);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'EEXIST') throw refuseExisting(shownTo);
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EXDEV') throw error;
    try {
      copyFileSync(from, to, constants.COPYFILE_EXCL);
    } catch (copyError) {
      if ((copyError as { code?: unknown }).code === 'EEXIST') throw refuseExisting(shownTo);
      throw copyError;
    }
  }
}

/** Sets the copy up as a store of its own (WAL, like every store) and checks it; resolves to its number of runs. */
function checkCopy(path: string): number {
  const copy = new Database(path, { fileMustExist: true });
  try {
    copy.pragma('journal_mode = WAL');
    const integrity = copy.pragma('integrity_check', { simple: true });
    if (integrity !== 'ok') throw new PersistenceError(`The copy failed SQLite's integrity check (${String(integrity)}); the store was left as it was.`);
    return copy.prepare<[], number>('SELECT COUNT(*) FROM cairn_runs').pluck().get()!;
  } finally {
    copy.close(); // the last connection: SQLite folds the copy's -wal back in and deletes it
  }
}

export async function backupCommand(argv: string[], io: Io): Promise<number> {
  const parsed = parse(argv, BACKUP_OPTIONS);
  if (flag(parsed, 'help')) {
    io.stdout.write(BACKUP_HELP);
    return 0;
  }
  atMost(parsed, 1, 'backup');
  const dest = parsed.positionals[0];
  if (dest === undefined || dest === '') throw new UsageError('cairn backup needs the path of the copy: cairn backup <dest>.');
  const given = str(parsed, 'store');
  const location = storeLocation(given, io.cwd);
  const target = resolve(io.cwd, dest);
  if (target === location.path) throw new UsageError(`${dest} is the store itself; pass another path for the copy.`);
  if (existsSync(target)) throw refuseExisting(dest);
  let dirOk = false;
  try {
    dirOk = statSync(dirname(target)).isDirectory();
  } catch {
    // reported below
  }
  if (!dirOk) throw new UsageError(`${dest}: there is no directory ${dirname(dest)} to write the copy in.`);

  const ops = openStoreReadOnly(location, given);
  const partial = `${target}.partial-${process.pid}`;
  let runs: number;
  try {
    await connectionOf(ops).backup(partial);
    runs = checkCopy(partial);
    claim(partial, target, dest);
  } finally {
    ops.close();
    for (const leftover of [partial, `${partial}-wal`, `${partial}-shm`]) rmSync(leftover, { force: true });
  }
  const store = given ?? DEFAULT_STORE;
  if (flag(parsed, 'json')) {
    printJson(io, { store, backup: dest, runs });
  } else {
    io.stdout.write([
      `Backed up ${store} to ${dest}: ${runs} run(s), as of one moment.`,
      `To restore it: stop every cairn process that uses ${store}, delete ${store} and its -wal and -shm files, then copy ${dest} to ${store}.`,
      '',
    ].join('\n'));
  }
  return 0;
}

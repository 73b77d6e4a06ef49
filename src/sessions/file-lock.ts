/**
 * A per-session write lock for the file service: a lock file created
 * exclusively (`wx`) beside the session file. Reads take no lock (a session
 * file is only ever replaced whole, by rename); a write holds the lock from
 * reading the stored revision until its rename is durable, which is what
 * makes the revision check and the write one step across processes.
 */
import { randomBytes } from 'node:crypto';
import { readFile, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';

export interface LockOptions {
  /** How long to wait for another writer's lock before giving up (ms). */
  waitMs: number;
  /** A lock older than this is taken to be left by a writer that died (ms). */
  staleMs: number;
  clock: () => number;
}

interface LockBody {
  token: string;
  pid: number;
  host: string;
  at: number;
  /** The temp file the holder writes the next session to (a basename in the same directory). */
  temp: string;
}

/** The only temp names a lock may point at: whatever a lock file says, nothing else is ever removed. */
const TEMP_NAME = /^\.[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}\.[0-9a-f]{12}\.tmp$/;

export interface HeldLock {
  /** The temp file to write the session to before the rename (removed by whoever breaks this lock, should this writer die). */
  readonly temp: string;
  /** True while the lock file is still this writer's (checked right before the rename). */
  stillHeld(): Promise<boolean>;
  release(): Promise<void>;
}

const HOST = hostname();

/** How long a lock file with no readable body is waited for before it is taken to be a killed writer's (ms). */
const HALF_WRITTEN_GRACE_MS = 1_000;

function readBody(text: string): LockBody | undefined {
  try {
    const body = JSON.parse(text) as Partial<LockBody>;
    return typeof body.token === 'string' && typeof body.pid === 'number' && typeof body.at === 'number' && typeof body.host === 'string' &&
      typeof body.temp === 'string'
      ? (body as LockBody)
      : undefined;
  } catch {
    return undefined;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether a lock found on disk was left by a writer that is gone (a dead process on this host, or too old). */
function isStale(body: LockBody | undefined, options: LockOptions, seenSince: number): boolean {
  // Empty or half-written: its writer was killed between creating the file and writing it (a live writer fills it
  // within the same instant). Judge it by how long we have seen it, with a short grace; should a writer that was only
  // slow come back, its token check before the rename finds the lock is no longer its own and it writes nothing.
  if (!body) return options.clock() - seenSince > Math.min(options.staleMs, HALF_WRITTEN_GRACE_MS);
  if (body.host === HOST && body.pid !== process.pid && !pidAlive(body.pid)) return true;
  return options.clock() - body.at > options.staleMs;
}

/**
 * Takes the lock at `path`, waiting up to `waitMs` for another writer;
 * undefined when it stays taken. A stale lock (its process is dead, or it
 * is older than `staleMs`) is removed, if it is still the same lock.
 */
export async function acquireLock(path: string, tempName: string, options: LockOptions): Promise<HeldLock | undefined> {
  const token = randomBytes(12).toString('hex');
  const body: LockBody = { token, pid: process.pid, host: HOST, at: options.clock(), temp: tempName };
  const started = options.clock();
  for (;;) {
    try {
      await writeFile(path, JSON.stringify(body), { flag: 'wx' });
      return {
        temp: join(dirname(path), tempName),
        async stillHeld() {
          try {
            return readBody(await readFile(path, 'utf8'))?.token === token;
          } catch {
            return false;
          }
        },
        async release() {
          try {
            if (readBody(await readFile(path, 'utf8'))?.token === token) await unlink(path);
          } catch {
            // Already gone: nothing to release.
          }
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let found: LockBody | undefined;
    try {
      found = readBody(await readFile(path, 'utf8'));
    } catch {
      continue; // released between our attempt and our read: try again at once
    }
    if (isStale(found, options, started)) {
      try {
        const again = readBody(await readFile(path, 'utf8'));
        if (again?.token === found?.token) {
          // The dead writer's half-written temp file goes with its lock.
          if (found && TEMP_NAME.test(found.temp)) await unlink(join(dirname(path), found.temp)).catch(() => undefined);
          await unlink(path);
        }
      } catch {
        // Someone else removed it first.
      }
      continue;
    }
    if (options.clock() - started >= options.waitMs) return undefined;
    // A short, flat poll: a write holds the lock for a few ms, and a waiter that
    // slept longer than the holder's gap between two writes would never get it.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 2));
  }
}

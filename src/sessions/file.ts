/** `createFileSessionService`: one JSON file per session in a directory. */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { SessionConflictError, SessionCorruptError, SessionIdError } from './errors.js';
import { acquireLock, type HeldLock } from './file-lock.js';
import {
  buildSession,
  bySessionAge,
  checkExpectedRevision,
  checkOwner,
  checkSessionId,
  checkSessionKey,
  checkSessionOwner,
  checkTurnInput,
  revisionMatches,
  storedTurn,
  summarize,
} from './records.js';
import { parseStoredSession, SESSION_KIND, SESSION_VERSION, type StoredSession } from './stored.js';
import type { AppendTurnResult, Session, SessionKey, SessionService, SessionServiceOptions } from './types.js';

export interface FileSessionServiceOptions extends SessionServiceOptions {
  /** The directory the session files live in; created on the first write. Relative paths resolve against the working directory. */
  directory: string;
  /** How long a write waits for another process's write to the same session (ms) before answering `conflict`. @default 5000 */
  lockWaitMs?: number;
  /** A write lock older than this is taken to be a dead writer's and removed (ms). Keep it well above a write's duration. @default 30000 */
  lockStaleMs?: number;
}

const SUFFIX = '.json';

/**
 * A session service on a directory of files, for local development and
 * single-machine apps: `<directory>/<sessionId>.json`, one file per session,
 * holding its owner, revision and turns. Every write replaces the file whole
 * and durably (a temp file in the same directory, fsync, rename, fsync of the
 * directory), under a per-session lock file, so a crash leaves the old or the
 * new session and two processes appending at once both keep their turns.
 * A file that does not parse, or one of another app or user, is a typed
 * error; a session id that could name a path outside the directory is
 * refused before any file is touched.
 *
 * @example
 * ```ts
 * const sessionService = createFileSessionService({ directory: '.cairn/sessions' });
 * ```
 */
export function createFileSessionService(options: FileSessionServiceOptions): SessionService {
  if (typeof options?.directory !== 'string' || options.directory.length === 0 || options.directory.includes('\0')) {
    throw new SessionIdError('sessionId', 'createFileSessionService needs a directory: a non-empty path.');
  }
  const directory = resolve(options.directory);
  const clock = options.clock ?? Date.now;
  const lockOptions = { waitMs: options.lockWaitMs ?? 5000, staleMs: options.lockStaleMs ?? 30_000, clock: Date.now };

  /** The session's file; a checked id cannot leave the directory, and this checks it again. */
  const fileOf = (sessionId: string): string => {
    const path = join(directory, checkSessionId(sessionId) + SUFFIX);
    if (dirname(path) !== directory) throw new SessionIdError('sessionId', `Session id ${JSON.stringify(sessionId)} is not allowed.`);
    return path;
  };

  /** The stored session under the id (not yet checked for its owner), or undefined when there is no file. */
  const readStored = async (sessionId: string): Promise<StoredSession | undefined> => {
    let text: string;
    try {
      // O_NOFOLLOW: a symbolic link planted in the directory is not followed out of it.
      const handle = await open(fileOf(sessionId), constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        text = await handle.readFile('utf8');
      } finally {
        await handle.close();
      }
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return undefined;
      if (code === 'ELOOP' || code === 'EISDIR') {
        throw new SessionCorruptError(sessionId, `Session ${sessionId} cannot be read: its file is not a regular file.`, error);
      }
      throw error;
    }
    return parseStoredSession(sessionId, text);
  };

  const readOwned = async (key: SessionKey): Promise<StoredSession | undefined> => {
    const stored = await readStored(key.sessionId);
    if (stored) checkOwner(key, stored);
    return stored;
  };

  const syncDirectory = async (): Promise<void> => {
    const handle = await open(directory, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  };

  /** Replaces the session's file with `stored`, durably, or leaves the old one (false: the lock was lost, nothing written). */
  const writeStored = async (stored: StoredSession, lock: HeldLock): Promise<boolean> => {
    const temp = lock.temp;
    const handle = await open(temp, 'wx', 0o600);
    try {
      try {
        await handle.writeFile(JSON.stringify(stored), 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      // A writer whose lock was broken as stale must not overwrite the writer that broke it.
      if (!(await lock.stillHeld())) {
        await unlink(temp).catch(() => undefined);
        return false;
      }
      await rename(temp, fileOf(stored.sessionId));
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      throw error;
    }
    await syncDirectory();
    return true;
  };

  const withLock = async <T>(sessionId: string, conflict: () => Promise<T>, body: (lock: HeldLock) => Promise<T>): Promise<T> => {
    await mkdir(directory, { recursive: true });
    const lock = await acquireLock(join(directory, `.${sessionId}.lock`), `.${sessionId}.${randomBytes(6).toString('hex')}.tmp`, lockOptions);
    if (!lock) return conflict();
    try {
      return await body(lock);
    } finally {
      await lock.release();
    }
  };

  // Every StoredSession here was just parsed or built for this call: nobody else holds its turns.
  const view = (s: StoredSession): Session => buildSession(s, s.revision, s.createdAt, s.updatedAt, s.turns, true);

  return {
    kind: 'file',
    async getSession(rawKey) {
      const stored = await readOwned(checkSessionKey(rawKey));
      return stored ? view(stored) : undefined;
    },
    async appendTurn(rawKey, rawTurn, rawOptions): Promise<AppendTurnResult> {
      const key = checkSessionKey(rawKey);
      const turn = checkTurnInput(key.sessionId, rawTurn);
      const expected = checkExpectedRevision(key.sessionId, rawOptions);
      const stale = async (): Promise<AppendTurnResult> => ({ status: 'conflict', revision: (await readOwned(key))?.revision ?? 0 });
      return withLock(key.sessionId, stale, async (lock) => {
        const current = await readOwned(key);
        if (current?.turns.some((t) => t.turnId === turn.turnId)) return { status: 'duplicate', session: view(current) };
        const revision = current?.revision ?? 0;
        if (!revisionMatches(expected, revision)) return { status: 'conflict', revision };
        const now = clock();
        const next: StoredSession = {
          kind: SESSION_KIND,
          version: SESSION_VERSION,
          appName: key.appName,
          userId: key.userId,
          sessionId: key.sessionId,
          revision: revision + 1,
          createdAt: current?.createdAt ?? now,
          updatedAt: now,
          turns: [...(current?.turns ?? []), storedTurn(turn, revision + 1, now)],
        };
        if (!(await writeStored(next, lock))) return { status: 'conflict', revision: (await readOwned(key))?.revision ?? 0 };
        return { status: 'appended', session: view(next) };
      });
    },
    async listSessions(rawOwner) {
      const owner = checkSessionOwner(rawOwner);
      let names: string[];
      try {
        names = await readdir(directory);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw error;
      }
      const found = [];
      for (const name of names) {
        if (!name.endsWith(SUFFIX) || name.startsWith('.')) continue;
        const sessionId = name.slice(0, -SUFFIX.length);
        try {
          checkSessionId(sessionId);
        } catch {
          continue; // not a file this service wrote
        }
        const stored = await readStored(sessionId);
        if (!stored) continue; // deleted while we listed
        checkOwner({ appName: stored.appName, userId: stored.userId, sessionId }, stored);
        if (stored.appName === owner.appName && stored.userId === owner.userId) found.push(summarize(view(stored)));
      }
      return found.sort(bySessionAge);
    },
    async deleteSession(rawKey) {
      const key = checkSessionKey(rawKey);
      const before = await readOwned(key);
      if (!before) return false;
      return withLock(
        key.sessionId,
        async () => {
          throw new SessionConflictError(key.sessionId, 1, before.revision);
        },
        async () => {
          if (!(await readOwned(key))) return false;
          await unlink(fileOf(key.sessionId));
          await syncDirectory();
          return true;
        },
      );
    },
  };
}

/**
 * `cairn/sessions/sqlite`: a session service in the SQLite ops file
 * (`cairn_sessions`, `cairn_session_turns`, created by the ops store's
 * migrations), for one machine; several processes may share the file.
 */
import type Database from 'better-sqlite3';
import { InvalidOptionsError } from '../../errors/index.js';
import { connectionOf, createSqliteOpsStore, type SqliteOpsStore } from '../../stores/sqlite/index.js';
import { buildSession, bySessionAge, checkExpectedRevision, revisionMatches, checkOwner, checkSessionKey, checkSessionOwner, checkTurnInput, storedTurn } from '../records.js';
import { sessionFromRows, turnText, type SessionRow, type TurnRow } from '../rows.js';
import type { AppendTurnResult, Session, SessionKey, SessionService, SessionServiceOptions, SessionSummary, SessionTurnInput } from '../types.js';

export interface SqliteSessionServiceOptions extends SessionServiceOptions {
  /** An ops store of `createSqliteOpsStore` (cairn/ops/sqlite): the sessions go in its file, on its connection. */
  ops?: SqliteOpsStore;
  /** Or the ops file to open (created, with its schema, when missing); `close()` closes it. */
  path?: string;
  /** As the ops store's `synchronous`, for a file opened by `path`. @default 'full' */
  synchronous?: 'full' | 'normal';
}

export interface SqliteSessionService extends SessionService {
  /** Closes the file when the service opened it (`path`); an `ops` store you passed stays open. */
  close(): void;
}

/**
 * A session service in the SQLite ops file. A turn is one IMMEDIATE
 * transaction that checks the owner, the turn id and the revision, moves the
 * revision and inserts the turn's row: writers in every process on the file
 * are serialized by SQLite, so of two at one revision one is written and the
 * other answers `conflict`.
 *
 * @example
 * ```ts
 * const ops = createSqliteOpsStore({ path: './cairn.sqlite' });
 * const sessionService = createSqliteSessionService({ ops });
 * ```
 */
export function createSqliteSessionService(options: SqliteSessionServiceOptions): SqliteSessionService {
  if (!options || (options.ops === undefined) === (options.path === undefined)) {
    throw new InvalidOptionsError('createSqliteSessionService needs exactly one of ops (an ops store) and path (a file).');
  }
  const owned = options.ops === undefined;
  const ops = options.ops ?? createSqliteOpsStore({ path: options.path!, ...(options.synchronous ? { synchronous: options.synchronous } : {}) });
  const db = connectionOf(ops);
  const clock = options.clock ?? Date.now;
  let prepared: ReturnType<typeof prepare> | undefined;
  const sql = () => (prepared ??= prepare(db));

  const readSession = (key: SessionKey): Session | undefined => {
    const row = sql().session.get(key.sessionId) as SessionRow | undefined;
    if (!row) return undefined;
    checkOwner(key, { appName: row.app_name, userId: row.user_id });
    return sessionFromRows(key, row, sql().turns.all(key.sessionId) as TurnRow[]);
  };

  const append = db.transaction((key: SessionKey, turn: SessionTurnInput, expected: number | 'latest'): AppendTurnResult => {
    const s = sql();
    // Read whole and checked first: a session that cannot be read is refused, never written over.
    const current = readSession(key);
    if (current?.turns.some((t) => t.turnId === turn.turnId)) return { status: 'duplicate', session: current };
    const revision = current?.revision ?? 0;
    if (!revisionMatches(expected, revision)) return { status: 'conflict', revision };
    const now = clock();
    if (current) s.bump.run(now, key.sessionId, revision);
    else s.create.run(key.sessionId, key.appName, key.userId, now, now);
    const stored = storedTurn(turn, revision + 1, now);
    s.addTurn.run(key.sessionId, revision + 1, turn.turnId, turnText(stored));
    // Written under the transaction's lock: the session is what was read plus this turn (no second read).
    const turns = [...(current?.turns ?? []), structuredClone(stored)];
    return { status: 'appended', session: buildSession(key, revision + 1, current?.createdAt ?? now, now, turns, true) };
  });

  return {
    kind: 'sqlite',
    async getSession(rawKey) {
      const key = checkSessionKey(rawKey);
      return db.transaction(() => readSession(key))();
    },
    async appendTurn(rawKey, rawTurn, rawOptions) {
      const key = checkSessionKey(rawKey);
      const turn = checkTurnInput(key.sessionId, rawTurn);
      const expected = checkExpectedRevision(key.sessionId, rawOptions);
      return append.immediate(key, turn, expected);
    },
    async listSessions(rawOwner) {
      const owner = checkSessionOwner(rawOwner);
      const rows = sql().list.all(owner.appName, owner.userId) as (SessionRow & { turn_count: number })[];
      return rows.map((r): SessionSummary => ({
        appName: r.app_name,
        userId: r.user_id,
        sessionId: r.session_id,
        revision: Number(r.revision),
        createdAt: r.created_at,
        updatedAt: r.updated_at,
        turnCount: Number(r.turn_count),
      })).sort(bySessionAge);
    },
    async deleteSession(rawKey) {
      const key = checkSessionKey(rawKey);
      return db.transaction(() => {
        const row = sql().session.get(key.sessionId) as SessionRow | undefined;
        if (!row) return false;
        checkOwner(key, { appName: row.app_name, userId: row.user_id });
        return sql().remove.run(key.sessionId).changes === 1;
      }).immediate();
    },
    close() {
      if (owned) ops.close();
    },
  };
}

function prepare(db: Database.Database) {
  return {
    session: db.prepare('SELECT session_id, app_name, user_id, revision, created_at, updated_at FROM cairn_sessions WHERE session_id = ?'),
    turns: db.prepare('SELECT revision, body FROM cairn_session_turns WHERE session_id = ? ORDER BY revision'),
    create: db.prepare('INSERT INTO cairn_sessions (session_id, app_name, user_id, revision, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?)'),
    bump: db.prepare('UPDATE cairn_sessions SET revision = revision + 1, updated_at = ? WHERE session_id = ? AND revision = ?'),
    addTurn: db.prepare('INSERT INTO cairn_session_turns (session_id, revision, turn_id, body) VALUES (?, ?, ?, ?)'),
    list: db.prepare(`SELECT s.session_id, s.app_name, s.user_id, s.revision, s.created_at, s.updated_at,
  (SELECT count(*) FROM cairn_session_turns t WHERE t.session_id = s.session_id) AS turn_count
FROM cairn_sessions s WHERE s.app_name = ? AND s.user_id = ? ORDER BY s.created_at, s.session_id`),
    remove: db.prepare('DELETE FROM cairn_sessions WHERE session_id = ?'),
  };
}

/**
 * `cairn/sessions/postgres`: a session service in the PostgreSQL ops schema
 * (`cairn_sessions`, `cairn_session_turns`, created by the ops store's
 * migrations), for deployments where many processes and machines serve one
 * user's conversation.
 */
import { opsTables, migrate } from '../../stores/postgres/migrations.js';
import { Db, quoteSchema, type PostgresConnection } from '../../stores/postgres/sql.js';
import { buildSession, checkExpectedRevision, revisionMatches, checkOwner, checkSessionKey, checkSessionOwner, checkTurnInput, bySessionAge, storedTurn } from '../records.js';
import { sessionFromRows, turnText, type SessionRow, type TurnRow } from '../rows.js';
import type { AppendTurnResult, Session, SessionKey, SessionService, SessionServiceOptions, SessionSummary } from '../types.js';

export type { PostgresConnection } from '../../stores/postgres/sql.js';

export interface PostgresSessionServiceOptions extends SessionServiceOptions {
  /** The schema of the ops tables (the same as your `createPostgresOpsStore`'s). @default 'public' */
  schema?: string;
}

export interface PostgresSessionService extends SessionService {
  /** Creates or migrates the ops schema (the same migrations as the ops store's `setup()`). Idempotent; concurrent calls are safe. */
  setup(): Promise<void>;
  /** Ends the pool if the service created it (from a connection string); a pool you passed stays open. */
  close(): Promise<void>;
}

type Client = { query(text: string, values?: unknown[]): Promise<{ rows: object[] }> };

/**
 * A session service in PostgreSQL. A turn is one transaction: the session's
 * row is locked (`FOR UPDATE`, or created with `ON CONFLICT DO NOTHING`), the
 * owner, turn id and revision are checked, the revision moves and the turn's
 * row is inserted. Of two writers at one revision, on any machines, one is
 * written and the other answers `conflict`.
 *
 * @example
 * ```ts
 * const sessionService = createPostgresSessionService({ connectionString: process.env.DATABASE_URL! });
 * await sessionService.setup();
 * ```
 */
export function createPostgresSessionService(connection: PostgresConnection, options: PostgresSessionServiceOptions = {}): PostgresSessionService {
  const schema = options.schema ?? 'public';
  const quoted = quoteSchema(schema);
  const db = Db.open(connection, schema);
  const clock = options.clock ?? Date.now;
  const sessions = `${quoted}.cairn_sessions`;
  const turns = `${quoted}.cairn_session_turns`;
  const sql = {
    session: `SELECT session_id, app_name, user_id, revision, created_at, updated_at FROM ${sessions} WHERE session_id = $1`,
    turns: `SELECT revision, body FROM ${turns} WHERE session_id = $1 ORDER BY revision`,
    create: `INSERT INTO ${sessions} (session_id, app_name, user_id, revision, created_at, updated_at) VALUES ($1, $2, $3, 1, $4, $4)
ON CONFLICT (session_id) DO NOTHING RETURNING revision`,
    bump: `UPDATE ${sessions} SET revision = revision + 1, updated_at = $1 WHERE session_id = $2 AND revision = $3`,
    addTurn: `INSERT INTO ${turns} (session_id, revision, turn_id, body) VALUES ($1, $2, $3, $4)`,
    list: `SELECT s.session_id, s.app_name, s.user_id, s.revision, s.created_at, s.updated_at,
  (SELECT count(*) FROM ${turns} t WHERE t.session_id = s.session_id) AS turn_count
FROM ${sessions} s WHERE s.app_name = $1 AND s.user_id = $2 ORDER BY s.created_at, s.session_id`,
    remove: `DELETE FROM ${sessions} WHERE session_id = $1`,
  };

  const readWith = async (client: Client, key: SessionKey, lock = false): Promise<Session | undefined> => {
    const row = (await client.query(lock ? `${sql.session} FOR UPDATE` : sql.session, [key.sessionId])).rows[0] as SessionRow | undefined;
    if (!row) return undefined;
    checkOwner(key, { appName: row.app_name, userId: row.user_id });
    return sessionFromRows(key, row, (await client.query(sql.turns, [key.sessionId])).rows as TurnRow[]);
  };
  // REPEATABLE READ: the row and the turns are read from one snapshot.
  const read = (key: SessionKey) => db.transaction('Reading a session', 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', (c) => readWith(c as Client, key));

  return {
    kind: 'postgres',
    setup: () => migrate(db, opsTables(quoted)),
    async getSession(rawKey) {
      return read(checkSessionKey(rawKey));
    },
    async appendTurn(rawKey, rawTurn, rawOptions) {
      const key = checkSessionKey(rawKey);
      const turn = checkTurnInput(key.sessionId, rawTurn);
      const expected = checkExpectedRevision(key.sessionId, rawOptions);
      const attempt = () => db.transaction('Appending a session turn', 'BEGIN ISOLATION LEVEL READ COMMITTED', async (raw): Promise<AppendTurnResult | 'retry'> => {
        const client = raw as Client;
        // Locked, then read whole and checked: a session that cannot be read is refused, never written over.
        const current = await readWith(client, key, true);
        if (current?.turns.some((t) => t.turnId === turn.turnId)) return { status: 'duplicate', session: current };
        const revision = current?.revision ?? 0;
        if (!revisionMatches(expected, revision)) return { status: 'conflict', revision };
        const now = clock();
        if (current) await client.query(sql.bump, [now, key.sessionId, revision]);
        // Another writer created the session since our read: read again, outside this transaction.
        else if ((await client.query(sql.create, [key.sessionId, key.appName, key.userId, now])).rows.length === 0) return 'retry';
        const stored = storedTurn(turn, revision + 1, now);
        await client.query(sql.addTurn, [key.sessionId, revision + 1, turn.turnId, turnText(stored)]);
        // Written under the row's lock: the session is what was read plus this turn (no second read).
        const turns = [...(current?.turns ?? []), structuredClone(stored)];
        return { status: 'appended', session: buildSession(key, revision + 1, current?.createdAt ?? now, now, turns, true) };
      });
      let result = await attempt();
      // 'latest' goes after whatever is there: a session another writer just created is locked and appended to.
      if (result === 'retry' && expected === 'latest') result = await attempt();
      if (result !== 'retry') return result;
      const now = await read(key);
      if (now?.turns.some((t) => t.turnId === turn.turnId)) return { status: 'duplicate', session: now };
      return { status: 'conflict', revision: now?.revision ?? 0 };
    },
    async listSessions(rawOwner) {
      const owner = checkSessionOwner(rawOwner);
      const rows = await db.query<SessionRow & { turn_count: string }>('Listing sessions', sql.list, [owner.appName, owner.userId]);
      return rows.map((r): SessionSummary => ({
        appName: r.app_name,
        userId: r.user_id,
        sessionId: r.session_id,
        revision: Number(r.revision),
        createdAt: Number(r.created_at),
        updatedAt: Number(r.updated_at),
        turnCount: Number(r.turn_count),
      })).sort(bySessionAge);
    },
    async deleteSession(rawKey) {
      const key = checkSessionKey(rawKey);
      return db.transaction('Deleting a session', 'BEGIN ISOLATION LEVEL READ COMMITTED', async (raw) => {
        const client = raw as Client;
        const row = (await client.query(`${sql.session} FOR UPDATE`, [key.sessionId])).rows[0] as SessionRow | undefined;
        if (!row) return false;
        checkOwner(key, { appName: row.app_name, userId: row.user_id });
        await client.query(sql.remove, [key.sessionId]);
        return true;
      });
    },
    close: () => db.close(),
  };
}

/**
 * The session service contract: a user's conversation with an app, kept
 * across turns (a Runner reads it before a turn and appends the turn after).
 * Every backend (in memory, a directory of files, SQLite, PostgreSQL, yours)
 * answers these calls the same way; `defineSessionServiceConformance` in
 * cairn/testing checks a service against this file.
 */
import type { JsonValue } from '../agent/json.js';
import type { ModelMessage } from '../models/types.js';

/** A conversation message: the same message shape a run sends to its model. */
export type SessionMessage = ModelMessage;

/**
 * Which session: the app, the user it belongs to and its id. A session id
 * names one session in a service (one file in a directory, one row in a
 * table): asking for it with another app name or user id is refused with
 * `SessionForeignError`, never answered with someone else's conversation.
 *
 * `sessionId` is 1 to 128 characters of `A-Z a-z 0-9 _ - .`, not starting
 * with a dot; `appName` and `userId` are non-empty strings of at most 256
 * characters without NUL. Anything else is refused with `SessionIdError`
 * before any file or row is touched.
 */
export interface SessionKey {
  appName: string;
  userId: string;
  sessionId: string;
}

/** One turn to append: the messages it added to the conversation (its prompt, the model's answers, tool results). */
export interface SessionTurnInput {
  /**
   * Names the turn within the session (a Runner uses the run id). Appending an
   * id the session already holds writes nothing and answers `duplicate`, so a
   * write retried after an unclear failure never stores a turn twice.
   */
  turnId: string;
  /** The run that produced the turn, when a run did. */
  runId?: string;
  /** At least one message; plain JSON data. */
  messages: SessionMessage[];
  /**
   * The revision the turn was decided at (the one its history was read at).
   * Kept as given: when it is below the revision before the turn, a turn of
   * another process landed in between and this one was computed without it.
   */
  basedOnRevision?: number;
  /** Plain JSON the application keeps with the turn. */
  metadata?: { [key: string]: JsonValue };
}

/** A stored turn. */
export interface SessionTurn extends SessionTurnInput {
  /** The session's revision this turn's write produced (1 for the first turn). */
  revision: number;
  /** When the service stored it (ms, on the service's clock). */
  createdAt: number;
}

/**
 * A stored session. `messages` is every turn's messages in turn order: the
 * history the next turn's model request starts from. Returned sessions are
 * copies: changing one changes nothing stored.
 */
export interface Session extends SessionKey {
  /** Moves up by one with every write; the number to pass as `expectedRevision`. */
  revision: number;
  /** When the first turn was stored (ms). */
  createdAt: number;
  /** When the last turn was stored (ms). */
  updatedAt: number;
  turns: SessionTurn[];
  messages: SessionMessage[];
}

/** A session in a listing: no messages. */
export interface SessionSummary extends SessionKey {
  revision: number;
  createdAt: number;
  updatedAt: number;
  turnCount: number;
}

export interface AppendTurnOptions {
  /**
   * The revision the caller read (`session.revision`; 0 for a session not
   * stored yet, which the write then creates). The turn is written only if the
   * stored revision is still this one.
   *
   * `'latest'`: the turn goes after whatever is stored, in the same atomic
   * step that reads the revision (the revision still moves by one, and no
   * turn is replaced). This is how `appendSessionTurn` retries a conflict:
   * set the turn's `basedOnRevision` so a reader can tell what it was decided at.
   */
  expectedRevision: number | 'latest';
}

/**
 * What `appendTurn` did. A conflict is an answer, not an error: nothing was
 * written, and the caller decides again (`appendSessionTurn` appends the same
 * turn after the others, with `expectedRevision: 'latest'`).
 */
export type AppendTurnResult =
  | { status: 'appended'; session: Session }
  /** The session already holds a turn with this id; nothing was written. */
  | { status: 'duplicate'; session: Session }
  /**
   * Nothing was written; `revision` is the one stored now (0 when no session is
   * stored). Also the answer, at any `expectedRevision`, of a service that
   * could not get its write in at all (the file service after `lockWaitMs`).
   */
  | { status: 'conflict'; revision: number };

/**
 * A session service. Every write is a compare-and-swap on the session's
 * revision: of any number of concurrent `appendTurn` calls at one revision,
 * in one process or many, exactly one is written, so no turn is ever lost to
 * a last writer. Every call validates the key first (`SessionIdError`), and
 * refuses a session of another app or user (`SessionForeignError`) and a
 * stored session it cannot read (`SessionCorruptError`): a broken session is
 * never silently replaced by an empty one.
 */
export interface SessionService {
  /** Which backend this is: `'memory'`, `'file'`, `'sqlite'`, `'postgres'` or yours. */
  readonly kind: string;
  /** The stored session, or `undefined` when none is stored under the id. */
  getSession(key: SessionKey): Promise<Session | undefined>;
  /** Appends one turn if the stored revision is `options.expectedRevision` (a malformed turn: `SessionTurnError`, nothing written). */
  appendTurn(key: SessionKey, turn: SessionTurnInput, options: AppendTurnOptions): Promise<AppendTurnResult>;
  /** The user's sessions of this app, oldest first (by `createdAt`, then id). */
  listSessions(owner: { appName: string; userId: string }): Promise<SessionSummary[]>;
  /** Deletes the session; false when none was stored. Its id can then be used again, from revision 0. */
  deleteSession(key: SessionKey): Promise<boolean>;
}

/** Options every built-in service takes. */
export interface SessionServiceOptions {
  /** The clock stamped on turns (ms). @default Date.now */
  clock?: () => number;
}

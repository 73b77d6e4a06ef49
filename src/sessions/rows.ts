/**
 * Rows of the SQL session services (`cairn_sessions`, `cairn_session_turns`):
 * a turn is stored as the JSON text of its stored form, and read back as
 * strictly as a file.
 */
import { SessionCorruptError } from './errors.js';
import { buildSession, readStoredTurn } from './records.js';
import type { Session, SessionKey, SessionTurn } from './types.js';

export interface SessionRow {
  session_id: string;
  app_name: string;
  user_id: string;
  revision: number | string;
  created_at: number;
  updated_at: number;
}

export interface TurnRow {
  revision: number | string;
  body: string;
}

export function turnText(turn: SessionTurn): string {
  return JSON.stringify(turn);
}

/** A turn row read back; a body that does not parse, or names another revision, is SessionCorruptError. */
export function turnFromRow(sessionId: string, row: TurnRow): SessionTurn {
  let value: unknown;
  try {
    value = JSON.parse(row.body);
  } catch (error) {
    throw new SessionCorruptError(sessionId, `Session ${sessionId} cannot be read: a turn row is not JSON.`, error);
  }
  const turn = readStoredTurn(sessionId, value);
  if (turn.revision !== Number(row.revision)) {
    throw new SessionCorruptError(sessionId, `Session ${sessionId} cannot be read: a turn row holds another revision than its key.`);
  }
  return turn;
}

/** The session of a row and its turn rows (in revision order), checked. */
export function sessionFromRows(key: SessionKey, row: SessionRow, turns: readonly TurnRow[]): Session {
  const revision = Number(row.revision);
  if (!Number.isSafeInteger(revision) || revision < 1 || typeof row.created_at !== 'number' || typeof row.updated_at !== 'number') {
    throw new SessionCorruptError(key.sessionId, `Session ${key.sessionId} cannot be read: its row is not a session row.`);
  }
  const read = turns.map((t) => turnFromRow(key.sessionId, t));
  if (read.length === 0 || read[read.length - 1]!.revision > revision) {
    throw new SessionCorruptError(key.sessionId, `Session ${key.sessionId} cannot be read: its turns do not match its revision.`);
  }
  return buildSession(key, revision, row.created_at, row.updated_at, read, true);
}

/**
 * The stored form of a whole session (a file's content; the SQL services keep
 * the same fields in columns and rows), and its strict reader.
 */
import { SessionCorruptError } from './errors.js';
import { readStoredTurn } from './records.js';
import type { SessionKey, SessionTurn } from './types.js';

export const SESSION_KIND = 'cairn-session';
export const SESSION_VERSION = 1;

export interface StoredSession extends SessionKey {
  kind: typeof SESSION_KIND;
  version: typeof SESSION_VERSION;
  revision: number;
  createdAt: number;
  updatedAt: number;
  turns: SessionTurn[];
}

/**
 * Reads a stored session's text (found under `sessionId`): it must parse and
 * be a session of this format and version, or SessionCorruptError is thrown;
 * nothing is repaired. Whose it is, the caller checks (`checkOwner`).
 */
export function parseStoredSession(sessionId: string, text: string): StoredSession {
  const corrupt = (why: string, cause?: unknown): never => {
    throw new SessionCorruptError(sessionId, `Session ${sessionId} cannot be read: ${why}.`, cause);
  };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return corrupt('it is not JSON', error);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return corrupt('it is not an object');
  const v = value as Record<string, unknown>;
  if (v.kind !== SESSION_KIND) return corrupt('it is not a Cairn session');
  if (v.version !== SESSION_VERSION) return corrupt(`its format version ${JSON.stringify(v.version)} is not one this reader knows (${SESSION_VERSION})`);
  if (typeof v.appName !== 'string' || typeof v.userId !== 'string' || typeof v.sessionId !== 'string') return corrupt('it names no owner');
  const revision = v.revision;
  if (!Number.isSafeInteger(revision) || (revision as number) < 1) return corrupt('its revision is not a whole number of 1 or more');
  if (typeof v.createdAt !== 'number' || typeof v.updatedAt !== 'number') return corrupt('its times are missing');
  if (!Array.isArray(v.turns)) return corrupt('it has no turns');
  const turns = v.turns.map((turn) => readStoredTurn(sessionId, turn));
  let last = 0;
  for (const turn of turns) {
    if (turn.revision <= last || turn.revision > (revision as number)) return corrupt('its turns are out of revision order');
    last = turn.revision;
  }
  return {
    kind: SESSION_KIND,
    version: SESSION_VERSION,
    appName: v.appName,
    userId: v.userId,
    sessionId: v.sessionId,
    revision: revision as number,
    createdAt: v.createdAt,
    updatedAt: v.updatedAt,
    turns,
  };
}

/**
 * Checks shared by every session service: keys before any I/O, turns before
 * any write, and stored sessions on every read (a stored session is data from
 * disk or a database: it is checked as strictly as a caller's input).
 */
import type { JsonValue } from '../agent/json.js';
import { SessionCorruptError, SessionForeignError, SessionIdError, SessionTurnError } from './errors.js';
import type { Session, SessionKey, SessionMessage, SessionSummary, SessionTurn, SessionTurnInput } from './types.js';

/** Letters, digits, `_`, `-` and `.`, not starting with a dot: no separator, no `..` segment, no NUL, nothing a path could resolve. */
const SESSION_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;
const NAME_LIMIT = 256;
const ROLES: ReadonlySet<string> = new Set(['system', 'user', 'assistant', 'tool']);

/** Refuses a session id a file name or a key could misuse; returns it unchanged. */
export function checkSessionId(value: unknown): string {
  if (typeof value !== 'string' || !SESSION_ID.test(value)) {
    const shown = typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : typeof value;
    throw new SessionIdError(
      'sessionId',
      `Session id ${shown} is not allowed: use 1 to 128 of A-Z a-z 0-9 _ - . (not starting with a dot).`,
    );
  }
  return value;
}

function checkName(field: 'appName' | 'userId', value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > NAME_LIMIT || value.includes('\0')) {
    throw new SessionIdError(field, `${field} must be a non-empty string of at most ${NAME_LIMIT} characters without NUL.`);
  }
  return value;
}

/** The key's three parts, checked, as a fresh object (no other property of the caller's object is read later). */
export function checkSessionKey(key: unknown): SessionKey {
  if (typeof key !== 'object' || key === null) throw new SessionIdError('sessionId', 'A session key must be an object.');
  const k = key as Record<string, unknown>;
  return { appName: checkName('appName', k.appName), userId: checkName('userId', k.userId), sessionId: checkSessionId(k.sessionId) };
}

/** The owner of a listing (an app and a user), checked. */
export function checkSessionOwner(owner: unknown): { appName: string; userId: string } {
  if (typeof owner !== 'object' || owner === null) throw new SessionIdError('userId', 'A session owner must be an object.');
  const o = owner as Record<string, unknown>;
  return { appName: checkName('appName', o.appName), userId: checkName('userId', o.userId) };
}

export function checkExpectedRevision(sessionId: string, options: unknown): number | 'latest' {
  const revision = (options as { expectedRevision?: unknown } | undefined)?.expectedRevision;
  if (revision === 'latest') return revision;
  if (typeof revision !== 'number' || !Number.isSafeInteger(revision) || revision < 0) {
    throw new SessionTurnError(sessionId, "appendTurn needs options.expectedRevision: an integer of 0 or more, or 'latest'.");
  }
  return revision;
}

/** Whether a write at `expected` may go on a session stored at `stored`. */
export function revisionMatches(expected: number | 'latest', stored: number): boolean {
  return expected === 'latest' || expected === stored;
}

/** A copy of plain JSON, or undefined when `value` is not plain JSON (a function, a class instance, a cycle, NaN ...). */
function plainJson(value: unknown, depth = 0): JsonValue | undefined {
  if (depth > 64) return undefined;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (Array.isArray(value)) {
    const out: JsonValue[] = [];
    for (const item of value) {
      const copy = plainJson(item, depth + 1);
      if (copy === undefined) return undefined;
      out.push(copy);
    }
    return out;
  }
  if (typeof value !== 'object') return undefined;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return undefined;
  const out: { [key: string]: JsonValue } = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === '__proto__') return undefined;
    if (v === undefined) continue;
    const copy = plainJson(v, depth + 1);
    if (copy === undefined) return undefined;
    out[k] = copy;
  }
  return out;
}

/** Why `message` is not a session message, or undefined when it is one. */
function messageProblem(message: unknown): string | undefined {
  if (typeof message !== 'object' || message === null) return 'is not an object';
  const m = message as Record<string, unknown>;
  if (typeof m.role !== 'string' || !ROLES.has(m.role)) return 'has no known role';
  if (m.role === 'tool') {
    if (typeof m.toolCallId !== 'string' || typeof m.toolName !== 'string') return 'is a tool message without toolCallId and toolName';
    return m.content === undefined ? 'has no content' : undefined;
  }
  if (m.role === 'user') return typeof m.content === 'string' || Array.isArray(m.content) ? undefined : 'has no content';
  return typeof m.content === 'string' ? undefined : 'has no string content';
}

/** Why `turn` is not a turn, or undefined when its shape is one (plain JSON is checked apart). */
function turnProblem(turn: unknown): string | undefined {
  if (typeof turn !== 'object' || turn === null) return 'is not an object';
  const t = turn as Record<string, unknown>;
  if (typeof t.turnId !== 'string' || t.turnId.length === 0 || t.turnId.length > NAME_LIMIT) return 'needs a turnId (1 to 256 characters)';
  if (t.runId !== undefined && typeof t.runId !== 'string') return 'has a runId that is not a string';
  if (!Array.isArray(t.messages) || t.messages.length === 0) return 'needs at least one message';
  for (let i = 0; i < t.messages.length; i++) {
    const problem = messageProblem(t.messages[i]);
    if (problem) return `has message ${i} that ${problem}`;
  }
  if (t.basedOnRevision !== undefined && (!Number.isSafeInteger(t.basedOnRevision) || (t.basedOnRevision as number) < 0)) {
    return 'has a basedOnRevision that is not an integer of 0 or more';
  }
  if (t.metadata !== undefined && (typeof t.metadata !== 'object' || t.metadata === null || Array.isArray(t.metadata))) {
    return 'has metadata that is not an object';
  }
  return undefined;
}

/** The turn, checked and copied as plain JSON; a malformed turn throws SessionTurnError. */
export function checkTurnInput(sessionId: string, turn: unknown): SessionTurnInput {
  const problem = turnProblem(turn);
  const t = turn as Record<string, unknown>;
  const copy = problem ? undefined : plainJson({ turnId: t.turnId, runId: t.runId, messages: t.messages, basedOnRevision: t.basedOnRevision, metadata: t.metadata });
  if (copy === undefined) throw new SessionTurnError(sessionId, `The turn for session ${sessionId} ${problem ?? 'is not plain JSON data'}.`);
  return copy as unknown as SessionTurnInput;
}

/** A stored turn as the service writes it: the input plus its revision and time. */
export function storedTurn(input: SessionTurnInput, revision: number, createdAt: number): SessionTurn {
  return { ...input, revision, createdAt };
}

/**
 * A stored turn read back: a value JSON.parse just made (so plain JSON, and
 * this caller's own), checked in place; a bad one throws SessionCorruptError.
 */
export function readStoredTurn(sessionId: string, value: unknown): SessionTurn {
  const t = value as Record<string, unknown> | null;
  if (typeof t !== 'object' || t === null || !Number.isSafeInteger(t.revision) || typeof t.createdAt !== 'number') {
    throw new SessionCorruptError(sessionId, `Session ${sessionId} holds a turn without its revision and time.`);
  }
  const problem = turnProblem(t);
  if (problem) throw new SessionCorruptError(sessionId, `Session ${sessionId} holds a turn that ${problem.replace(/^(is|has|needs) /, '$1 ')}.`);
  return t as unknown as SessionTurn;
}

/**
 * The session a caller gets, with `messages` flattened from the turns. The
 * turns are copied unless `owned` (just parsed, nobody else holds them); the
 * messages are always a copy of their own.
 */
export function buildSession(
  key: SessionKey, revision: number, createdAt: number, updatedAt: number, turns: readonly SessionTurn[], owned = false,
): Session {
  const copies = owned ? [...turns] : turns.map((turn) => structuredClone(turn));
  const messages: SessionMessage[] = copies.flatMap((turn) => structuredClone(turn.messages));
  return { appName: key.appName, userId: key.userId, sessionId: key.sessionId, revision, createdAt, updatedAt, turns: copies, messages };
}

export function summarize(session: Session): SessionSummary {
  const { appName, userId, sessionId, revision, createdAt, updatedAt } = session;
  return { appName, userId, sessionId, revision, createdAt, updatedAt, turnCount: session.turns.length };
}

/** Oldest first, then by id: the order every service lists in. */
export function bySessionAge(a: SessionSummary, b: SessionSummary): number {
  return a.createdAt - b.createdAt || (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0);
}

/** Refuses a stored session whose owner is not the key's: another app first, then another user. */
export function checkOwner(key: SessionKey, stored: { appName: string; userId: string; sessionId?: string }): void {
  if (stored.sessionId !== undefined && stored.sessionId !== key.sessionId) throw new SessionForeignError(key.sessionId, 'sessionId');
  if (stored.appName !== key.appName) throw new SessionForeignError(key.sessionId, 'appName');
  if (stored.userId !== key.userId) throw new SessionForeignError(key.sessionId, 'userId');
}

/** `appendSessionTurn`: append a turn, retrying at the new revision when another writer got there first. */
import { SessionConflictError } from './errors.js';
import { checkSessionKey } from './records.js';
import type { Session, SessionKey, SessionService, SessionTurnInput } from './types.js';

export interface AppendSessionTurnOptions {
  /**
   * The revision the turn was decided at (the session's revision when its
   * history was read; 0 for a new session). Without it the current revision
   * is read first. It is recorded on the turn as `basedOnRevision`.
   */
  expectedRevision?: number;
  /** How many writes to try before `SessionConflictError`. @default 12 */
  maxAttempts?: number;
  /** The pause before retry n (1-based), in ms. @default a random wait of up to 2 ** n ms, at most 250 */
  backoff?: (attempt: number) => number;
}

const defaultBackoff = (attempt: number): number => Math.random() * Math.min(250, 2 ** attempt);

/**
 * Appends `turn` to the session: the call a Runner makes after a turn ran.
 * When another writer appended first (a conflict), the same turn is appended
 * after that writer's, at the new revision, so both turns are kept in the
 * order they were stored; after `maxAttempts` conflicts it throws
 * `SessionConflictError` with nothing of the turn written. A turn whose id the
 * session already holds is not written again (the stored session is returned).
 *
 * @example
 * ```ts
 * const before = await sessions.getSession(key);
 * // ... run the turn on before?.messages ...
 * const after = await appendSessionTurn(sessions, key, { turnId: runId, messages }, { expectedRevision: before?.revision ?? 0 });
 * ```
 */
export async function appendSessionTurn(
  service: SessionService,
  key: SessionKey,
  turn: SessionTurnInput,
  options: AppendSessionTurnOptions = {},
): Promise<Session> {
  const checked = checkSessionKey(key);
  const maxAttempts = options.maxAttempts ?? 12;
  const backoff = options.backoff ?? defaultBackoff;
  let revision = options.expectedRevision ?? (await service.getSession(checked))?.revision ?? 0;
  const input: SessionTurnInput = turn.basedOnRevision === undefined ? { ...turn, basedOnRevision: revision } : turn;
  for (let attempt = 1; ; attempt++) {
    const result = await service.appendTurn(checked, input, { expectedRevision: revision });
    if (result.status !== 'conflict') return result.session;
    if (attempt >= maxAttempts) throw new SessionConflictError(checked.sessionId, attempt, result.revision);
    revision = result.revision;
    const wait = backoff(attempt);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

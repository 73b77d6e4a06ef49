/** `appendSessionTurn`: append a turn, and after any turns another writer stored first when it lost the race. */
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
  /**
   * What a conflict (another writer stored a turn since that revision) does:
   * `'append'` writes the same turn after the others, in one atomic step
   * (`expectedRevision: 'latest'`); `'throw'` writes nothing and throws
   * SessionConflictError, so you can run the turn again on the newer history.
   * @default 'append'
   */
  onConflict?: 'append' | 'throw';
}

/**
 * Appends `turn` to the session: the call a Runner makes after a turn ran.
 * The turn is written at `expectedRevision` (a compare-and-swap). If another
 * writer appended first, the same turn is appended after that writer's turns
 * (never over them), with `basedOnRevision` saying what it was decided at; so
 * two processes running turns on one session at once keep every turn, in the
 * order they were stored. A turn whose id the session already holds is not
 * written again (the stored session is returned). Throws
 * SessionConflictError, with nothing written, with `onConflict: 'throw'`, or
 * when the service could not get the write in at all (the file service's
 * lock wait ran out).
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
  const revision = options.expectedRevision ?? (await service.getSession(checked))?.revision ?? 0;
  const input: SessionTurnInput = turn.basedOnRevision === undefined ? { ...turn, basedOnRevision: revision } : turn;
  const first = await service.appendTurn(checked, input, { expectedRevision: revision });
  if (first.status !== 'conflict') return first.session;
  if (options.onConflict === 'throw') throw new SessionConflictError(checked.sessionId, 1, first.revision);
  const second = await service.appendTurn(checked, input, { expectedRevision: 'latest' });
  if (second.status !== 'conflict') return second.session;
  throw new SessionConflictError(checked.sessionId, 2, second.revision);
}

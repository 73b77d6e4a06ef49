/** `createInMemorySessionService`: sessions in this process's memory. */
import { checkExpectedRevision, revisionMatches, checkOwner, checkSessionKey, checkSessionOwner, checkTurnInput, buildSession, bySessionAge, storedTurn, summarize } from './records.js';
import type { Session, SessionKey, SessionService, SessionServiceOptions, SessionTurn } from './types.js';

interface Entry {
  key: SessionKey;
  revision: number;
  createdAt: number;
  updatedAt: number;
  turns: SessionTurn[];
}

/**
 * A session service in memory, for tests, demos and single-process apps:
 * nothing survives the process. It keeps the same contract as the durable
 * services (revisions, duplicate turn ids, foreign sessions refused), and
 * copies everything it takes and returns.
 *
 * @example
 * ```ts
 * const sessions = createInMemorySessionService();
 * const runner = createRunner({ appName: 'support-copilot', agent, sessionService: sessions });
 * ```
 */
export function createInMemorySessionService(options: SessionServiceOptions = {}): SessionService {
  const clock = options.clock ?? Date.now;
  const sessions = new Map<string, Entry>();
  const view = (entry: Entry): Session => buildSession(entry.key, entry.revision, entry.createdAt, entry.updatedAt, entry.turns);
  const owned = (key: SessionKey): Entry | undefined => {
    const entry = sessions.get(key.sessionId);
    if (entry) checkOwner(key, entry.key);
    return entry;
  };
  return {
    kind: 'memory',
    async getSession(rawKey) {
      const entry = owned(checkSessionKey(rawKey));
      return entry ? view(entry) : undefined;
    },
    async appendTurn(rawKey, rawTurn, rawOptions) {
      const key = checkSessionKey(rawKey);
      const turn = checkTurnInput(key.sessionId, rawTurn);
      const expected = checkExpectedRevision(key.sessionId, rawOptions);
      const entry = owned(key);
      if (entry?.turns.some((t) => t.turnId === turn.turnId)) return { status: 'duplicate', session: view(entry) };
      const stored = entry?.revision ?? 0;
      if (!revisionMatches(expected, stored)) return { status: 'conflict', revision: stored };
      const now = clock();
      const next: Entry = entry ?? { key, revision: 0, createdAt: now, updatedAt: now, turns: [] };
      next.revision = stored + 1;
      next.updatedAt = now;
      next.turns.push(storedTurn(turn, next.revision, now));
      sessions.set(key.sessionId, next);
      return { status: 'appended', session: view(next) };
    },
    async listSessions(rawOwner) {
      const owner = checkSessionOwner(rawOwner);
      return [...sessions.values()]
        .filter((e) => e.key.appName === owner.appName && e.key.userId === owner.userId)
        .map((e) => summarize(view(e)))
        .sort(bySessionAge);
    },
    async deleteSession(rawKey) {
      const key = checkSessionKey(rawKey);
      if (!owned(key)) return false;
      sessions.delete(key.sessionId);
      return true;
    },
  };
}

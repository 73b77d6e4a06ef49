/**
 * Properties of the session services, with fast-check (it prints the seed of
 * a failure; FC_SEED replays it):
 *
 * - any session id at all: the file service either refuses it with
 *   SessionIdError or keeps it in `<directory>/<id>.json`; nothing ever
 *   appears anywhere else;
 * - any sequence of appends (right, stale or future revisions, repeated turn
 *   ids, other users) and deletions gives the same answers and the same
 *   sessions on the in-memory, file and SQLite services as on a model of
 *   twenty lines.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createFileSessionService, createInMemorySessionService, SessionIdError, type SessionService } from 'cairn/sessions';
import { createSqliteSessionService } from 'cairn/sessions/sqlite';

const seed = process.env.FC_SEED;
const params = (numRuns: number) => ({ numRuns, ...(seed !== undefined && seed !== '' ? { seed: Number(seed) } : {}) });
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-session-props-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;
const owner = { appName: 'app', userId: 'u1' };

describe('session ids', () => {
  it('are refused or kept inside the directory, whatever they hold', async () => {
    const parent = tempDir();
    const directory = join(parent, 'sessions');
    const service = createFileSessionService({ directory });
    const piece = fc.constantFrom('..', '.', '/', '\\', '\0', 'a', 'Z', '9', '_', '-', '%2e', ':', '~', ' ', '\u00e9', '\u{1F4E6}', 'etc', 'passwd');
    const id = fc.oneof(fc.string({ maxLength: 20 }), fc.array(piece, { maxLength: 8 }).map((parts) => parts.join('')), fc.string({ unit: 'grapheme', maxLength: 10 }));
    await fc.assert(fc.asyncProperty(id, async (sessionId) => {
      const result = await service.appendTurn({ ...owner, sessionId }, { turnId: 't', messages: [{ role: 'user', content: 'x' }] }, { expectedRevision: 0 })
        .catch((error: unknown) => error);
      if (ID.test(sessionId)) expect(['appended', 'duplicate']).toContain((result as { status: string }).status);
      else expect(result).toBeInstanceOf(SessionIdError);
    }), params(300));
    expect(readdirSync(parent)).toEqual(['sessions']);
    for (const name of readdirSync(directory)) expect(name).toMatch(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}\.json$/);
  });
});

type Op =
  | { kind: 'append'; session: string; userId: string; turnId: string; revision: number | 'current' }
  | { kind: 'delete'; session: string; userId: string };

/** What a session service must answer: sessions by id, each with its owner and turn ids. */
class Model {
  readonly sessions = new Map<string, { userId: string; turns: string[] }>();
  apply(op: Op): string {
    const stored = this.sessions.get(op.session);
    if (stored && stored.userId !== op.userId) return 'SessionForeignError';
    if (op.kind === 'delete') return String(this.sessions.delete(op.session));
    const revision = stored?.turns.length ?? 0;
    if (stored?.turns.includes(op.turnId)) return 'duplicate';
    const expected = op.revision === 'current' ? revision : op.revision;
    if (expected !== revision) return `conflict@${revision}`;
    this.sessions.set(op.session, { userId: op.userId, turns: [...(stored?.turns ?? []), op.turnId] });
    return 'appended';
  }
}

async function applyTo(service: SessionService, op: Op): Promise<string> {
  const key = { appName: 'app', userId: op.userId, sessionId: op.session };
  try {
    if (op.kind === 'delete') return String(await service.deleteSession(key));
    const expectedRevision = op.revision === 'current' ? (await service.getSession(key))?.revision ?? 0 : op.revision;
    const result = await service.appendTurn(key, { turnId: op.turnId, messages: [{ role: 'user', content: op.turnId }] }, { expectedRevision });
    return result.status === 'conflict' ? `conflict@${result.revision}` : result.status;
  } catch (error) {
    return (error as Error).name;
  }
}

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({
    kind: fc.constant('append' as const), session: fc.constantFrom('s1', 's2'), userId: fc.constantFrom('u1', 'u1', 'u1', 'u2'),
    turnId: fc.constantFrom('t0', 't1', 't2', 't3', 't4', 't5'), revision: fc.oneof(fc.constant('current' as const), fc.nat(4)),
  }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), session: fc.constantFrom('s1', 's2'), userId: fc.constantFrom('u1', 'u2') }) },
);

describe('any sequence of writes', () => {
  it('answers as the model does, on the in-memory, file and SQLite services', async () => {
    await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
      const dir = tempDir();
      const sqlite = createSqliteSessionService({ path: join(dir, 'ops.sqlite'), synchronous: 'normal' });
      const services = [createInMemorySessionService(), createFileSessionService({ directory: join(dir, 'files') }), sqlite];
      try {
        const model = new Model();
        for (const o of ops) {
          const expected = model.apply(o);
          for (const service of services) expect(await applyTo(service, o), `${service.kind}: ${JSON.stringify(o)}`).toBe(expected);
        }
        for (const [sessionId, stored] of model.sessions) {
          for (const service of services) {
            const session = (await service.getSession({ appName: 'app', userId: stored.userId, sessionId }))!;
            expect(session.turns.map((t) => t.turnId), service.kind).toEqual(stored.turns);
            expect(session.revision).toBe(stored.turns.length);
          }
        }
      } finally {
        sqlite.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }), params(60));
  }, 120_000);
});

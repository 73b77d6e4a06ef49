/**
 * The session service conformance suite: what a Runner relies on of a
 * session service (docs/sessions.md). The same cases run against the
 * in-memory, file, SQLite and PostgreSQL services, and against yours.
 */
import assert from 'node:assert/strict';
import { appendSessionTurn } from '../sessions/append.js';
import type { SessionService } from '../sessions/types.js';
import { describeConformance } from './conformance/suite.js';
import type { ConformanceTestApi } from './conformance/types.js';
import { ADA, BAD_SESSION_IDS, call, key, refusedWith, turn, type SessionRegister, type SessionServiceInitializer } from './session-fixture.js';

export type { SessionServiceFixture, SessionServiceInitializer } from './session-fixture.js';

/**
 * Registers the session service conformance cases with your test framework.
 * Each case gets a fresh service from `initializer.create()`.
 *
 * @example
 * ```ts
 * import { describe, it } from 'vitest';
 * import { createInMemorySessionService } from 'cairn/sessions';
 * import { defineSessionServiceConformance } from 'cairn/testing';
 *
 * defineSessionServiceConformance({ name: 'in-memory', create: async () => ({ service: createInMemorySessionService() }) }, { describe, it });
 * ```
 */
export function defineSessionServiceConformance(initializer: SessionServiceInitializer, api: ConformanceTestApi): void {
  describeConformance('SessionService', initializer, api, (register: SessionRegister) => {
    api.describe('turns and revisions', () => registerTurnCases(register));
    api.describe('owners and ids', () => registerOwnerCases(register));
    api.describe('bad input', () => registerBadInputCases(register));
    api.describe('concurrency, durability and corruption', () => registerRaceCases(register));
  });
}

function registerTurnCases(register: SessionRegister): void {
  register('holds nothing for a new id; the first turn at revision 0 creates the session', async ({ service }) => {
    assert.equal(typeof service.kind, 'string');
    assert.equal(await service.getSession(ADA), undefined);
    const result = await service.appendTurn(ADA, turn('t1'), { expectedRevision: 0 });
    assert.equal(result.status, 'appended');
    const session = (await service.getSession(ADA))!;
    assert.deepEqual(result.status === 'appended' && result.session, session);
    assert.equal(session.revision, 1);
    assert.deepEqual([session.appName, session.userId, session.sessionId], [ADA.appName, ADA.userId, ADA.sessionId]);
    assert.deepEqual(session.messages, turn('t1').messages, 'messages come back byte for byte');
    assert.equal(session.turns.length, 1);
    assert.deepEqual({ ...session.turns[0], createdAt: 0 }, { ...turn('t1'), revision: 1, createdAt: 0 });
    assert.equal(typeof session.createdAt, 'number');
    assert.equal(session.updatedAt, session.turns[0]!.createdAt);
  });

  register('each turn moves the revision by one and adds its messages after the others, in order', async ({ service }) => {
    for (let i = 1; i <= 5; i++) {
      const result = await service.appendTurn(ADA, turn(`t${i}`), { expectedRevision: i - 1 });
      assert.equal(result.status, 'appended');
    }
    const session = (await service.getSession(ADA))!;
    assert.equal(session.revision, 5);
    assert.deepEqual(session.turns.map((t) => [t.turnId, t.revision]), [1, 2, 3, 4, 5].map((i) => [`t${i}`, i]));
    assert.deepEqual(session.messages, [1, 2, 3, 4, 5].flatMap((i) => turn(`t${i}`).messages));
    assert.ok(session.updatedAt >= session.createdAt);
  });

  register('a write at a revision that is not the stored one is a conflict and writes nothing', async ({ service }) => {
    await service.appendTurn(ADA, turn('t1'), { expectedRevision: 0 });
    await service.appendTurn(ADA, turn('t2'), { expectedRevision: 1 });
    for (const expectedRevision of [0, 1, 3, 99]) {
      assert.deepEqual(await service.appendTurn(ADA, turn(`late-${expectedRevision}`), { expectedRevision }), { status: 'conflict', revision: 2 });
    }
    assert.deepEqual(await service.appendTurn(key('never'), turn('x'), { expectedRevision: 4 }), { status: 'conflict', revision: 0 });
    assert.equal(await service.getSession(key('never')), undefined);
    assert.deepEqual((await service.getSession(ADA))!.turns.map((t) => t.turnId), ['t1', 't2']);
  });

  register('a turn id the session holds is not written again, at any revision', async ({ service }) => {
    await service.appendTurn(ADA, turn('t1'), { expectedRevision: 0 });
    await service.appendTurn(ADA, turn('t2'), { expectedRevision: 1 });
    for (const expectedRevision of [0, 1, 2]) {
      const again = await service.appendTurn(ADA, turn('t1', 'something else'), { expectedRevision });
      assert.equal(again.status, 'duplicate');
      assert.equal(again.status === 'duplicate' && again.session.revision, 2);
    }
    const session = (await service.getSession(ADA))!;
    assert.deepEqual(session.turns.map((t) => t.turnId), ['t1', 't2']);
    assert.deepEqual(session.turns[0]!.messages, turn('t1').messages);
  });

  register('returns copies, and keeps copies of what it is given', async ({ service }) => {
    const input = turn('t1');
    const result = await service.appendTurn(ADA, input, { expectedRevision: 0 });
    (input.messages[0] as { content: string }).content = 'changed by the caller';
    if (result.status === 'appended') result.session.messages.length = 0;
    const first = (await service.getSession(ADA))!;
    first.turns[0]!.messages.pop();
    (first.messages[3] as { content: string }).content = 'changed';
    assert.deepEqual((await service.getSession(ADA))!.messages, turn('t1').messages);
  });

  register('deletes a session: gone, then its id starts again from revision 0', async ({ service }) => {
    await service.appendTurn(ADA, turn('t1'), { expectedRevision: 0 });
    assert.equal(await service.deleteSession(ADA), true);
    assert.equal(await service.deleteSession(ADA), false);
    assert.equal(await service.getSession(ADA), undefined);
    assert.deepEqual(await service.appendTurn(ADA, turn('t2'), { expectedRevision: 1 }), { status: 'conflict', revision: 0 });
    assert.equal((await service.appendTurn(ADA, turn('t1'), { expectedRevision: 0 })).status, 'appended');
    assert.deepEqual((await service.getSession(ADA))!.turns.map((t) => [t.turnId, t.revision]), [['t1', 1]]);
  });
}

function registerOwnerCases(register: SessionRegister): void {
  register('a session of another user or app is refused on every call, and nothing is read out or written', async ({ service }) => {
    await service.appendTurn(ADA, turn('t1'), { expectedRevision: 0 });
    const others = [{ key: key(ADA.sessionId, { userId: 'user_bob' }), mismatch: 'userId' }, { key: key(ADA.sessionId, { appName: 'billing' }), mismatch: 'appName' }];
    for (const { key: other, mismatch } of others) {
      const errors = [
        await refusedWith(call(() => service.getSession(other)), 'SessionForeignError', 'session_foreign'),
        await refusedWith(call(() => service.appendTurn(other, turn('t2'), { expectedRevision: 1 })), 'SessionForeignError', 'session_foreign'),
        await refusedWith(call(() => service.appendTurn(other, turn('t1'), { expectedRevision: 1 })), 'SessionForeignError', 'session_foreign'),
        await refusedWith(call(() => service.deleteSession(other)), 'SessionForeignError', 'session_foreign'),
      ];
      for (const error of errors) {
        assert.equal((error as unknown as { mismatch: string }).mismatch, mismatch);
        assert.ok(!error.message.includes(ADA.userId), 'the message does not say whose session it is');
      }
    }
    const session = (await service.getSession(ADA))!;
    assert.equal(session.revision, 1);
    assert.deepEqual(session.turns.map((t) => t.turnId), ['t1']);
  });

  register('lists a user\'s sessions of one app, oldest first, without messages', async ({ service }) => {
    await service.appendTurn(key('s-b'), turn('t1'), { expectedRevision: 0 });
    await service.appendTurn(key('s-a'), turn('t1'), { expectedRevision: 0 });
    await service.appendTurn(key('s-a'), turn('t2'), { expectedRevision: 1 });
    await service.appendTurn(key('s-bob', { userId: 'user_bob' }), turn('t1'), { expectedRevision: 0 });
    await service.appendTurn(key('s-app', { appName: 'billing' }), turn('t1'), { expectedRevision: 0 });
    const listed = await service.listSessions({ appName: ADA.appName, userId: ADA.userId });
    assert.deepEqual(new Set(listed.map((s) => s.sessionId)), new Set(['s-a', 's-b']));
    for (let i = 1; i < listed.length; i++) assert.ok(listed[i - 1]!.createdAt <= listed[i]!.createdAt);
    const a = listed.find((s) => s.sessionId === 's-a')!;
    assert.deepEqual({ ...a, createdAt: 0, updatedAt: 0 }, { ...key('s-a'), revision: 2, turnCount: 2, createdAt: 0, updatedAt: 0 });
    assert.deepEqual((await service.listSessions({ appName: 'billing', userId: ADA.userId })).map((s) => s.sessionId), ['s-app']);
    assert.deepEqual(await service.listSessions({ appName: 'nobody', userId: 'nobody' }), []);
  });
}

function registerBadInputCases(register: SessionRegister): void {
  register('a session id that could leave its directory or key is refused before anything is touched', async ({ service }) => {
    for (const sessionId of BAD_SESSION_IDS) {
      const bad = { ...ADA, sessionId } as typeof ADA;
      const attempts: (() => Promise<unknown>)[] = [
        () => service.getSession(bad),
        () => service.appendTurn(bad, turn('t1'), { expectedRevision: 0 }),
        () => service.deleteSession(bad),
      ];
      for (const attempt of attempts) {
        const error = await refusedWith(call(attempt), 'SessionIdError', 'session_id_invalid');
        assert.equal((error as unknown as { field: string }).field, 'sessionId', `for ${JSON.stringify(sessionId)}`);
      }
    }
    assert.deepEqual(await service.listSessions({ appName: ADA.appName, userId: ADA.userId }), []);
    for (const id of ['a', 'A-Z_0.9', 'x'.repeat(128), 'a..b', 'v1.2']) {
      assert.equal((await service.appendTurn(key(id), turn('t1'), { expectedRevision: 0 })).status, 'appended', id);
    }
  });

  register('an app name or user id that is empty, too long or holds a NUL is refused', async ({ service }) => {
    const bad = [{ appName: '' }, { userId: '' }, { userId: 'a\0b' }, { appName: 'x'.repeat(257) }, { userId: 7 }, { appName: undefined }];
    for (const over of bad) {
      const k = { ...ADA, ...over } as typeof ADA;
      await refusedWith(call(() => service.getSession(k)), 'SessionIdError', 'session_id_invalid');
      await refusedWith(call(() => service.appendTurn(k, turn('t1'), { expectedRevision: 0 })), 'SessionIdError', 'session_id_invalid');
      await refusedWith(call(() => service.listSessions(k)), 'SessionIdError', 'session_id_invalid');
    }
    assert.equal(await service.getSession(ADA), undefined);
  });

  register('a malformed turn or revision is refused and nothing is written', async ({ service }) => {
    class Money { constructor(readonly cents: number) {} }
    const bad: unknown[] = [
      null, 'turn', { ...turn('t1'), turnId: '' }, { ...turn('t1'), turnId: undefined }, { ...turn('t1'), messages: [] },
      { ...turn('t1'), messages: [{ role: 'robot', content: 'x' }] }, { ...turn('t1'), messages: [{ role: 'assistant' }] },
      { ...turn('t1'), messages: [{ role: 'tool', content: 1 }] }, { ...turn('t1'), messages: [{ role: 'user', content: new Money(5) }] },
      { ...turn('t1'), metadata: { f: () => 1 } }, { ...turn('t1'), metadata: { n: Number.NaN } }, { ...turn('t1'), runId: 5 },
      { ...turn('t1'), basedOnRevision: -1 },
    ];
    for (const t of bad) {
      await refusedWith(call(() => service.appendTurn(ADA, t as never, { expectedRevision: 0 })), 'SessionTurnError', 'session_turn_invalid');
    }
    for (const options of [undefined, {}, { expectedRevision: -1 }, { expectedRevision: 1.5 }, { expectedRevision: '0' }, { expectedRevision: 'any' }]) {
      await refusedWith(call(() => service.appendTurn(ADA, turn('t1'), options as never)), 'SessionTurnError', 'session_turn_invalid');
    }
    assert.equal(await service.getSession(ADA), undefined);
  });
}

function registerRaceCases(register: SessionRegister): void {
  register('of 10 writes at one revision, through several service objects when it has them, exactly one is written', async (fixture) => {
    await fixture.service.appendTurn(ADA, turn('t0'), { expectedRevision: 0 });
    const services = await servicesOf(fixture, 3);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      services[i % services.length]!.appendTurn(ADA, turn(`r${i}`), { expectedRevision: 1 })));
    assert.equal(results.filter((r) => r.status === 'appended').length, 1);
    for (const r of results) if (r.status === 'conflict') assert.equal(r.revision, 2);
    assert.equal((await fixture.service.getSession(ADA))!.turns.length, 2);
  });

  register('appendSessionTurn from 3 writers x 8 turns at once keeps every turn exactly once, in one order', async (fixture) => {
    const services = await servicesOf(fixture, 3);
    await Promise.all(services.map(async (service, w) => {
      for (let i = 0; i < 8; i++) {
        // As a Runner does: read, decide (a pause), append at the revision read.
        const before = await service.getSession(ADA);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 2));
        await appendSessionTurn(service, ADA, turn(`w${w}-${i}`), { expectedRevision: before?.revision ?? 0 });
      }
    }));
    const session = (await fixture.service.getSession(ADA))!;
    const ids = session.turns.map((t) => t.turnId);
    assert.equal(ids.length, 24);
    assert.equal(new Set(ids).size, 24);
    assert.deepEqual(session.turns.map((t) => t.revision), Array.from({ length: 24 }, (_, i) => i + 1));
    for (let w = 0; w < 3; w++) {
      const own = ids.filter((id) => id.startsWith(`w${w}-`));
      assert.deepEqual(own, Array.from({ length: 8 }, (_, i) => `w${w}-${i}`), 'each writer\'s turns in its own order');
    }
    for (const t of session.turns) assert.ok(t.basedOnRevision !== undefined && t.basedOnRevision < t.revision);
  });

  register("'latest' appends after whatever is stored: 10 such writes at once are all kept, each once", async (fixture) => {
    await fixture.service.appendTurn(ADA, turn('t0'), { expectedRevision: 0 });
    const services = await servicesOf(fixture, 3);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      services[i % services.length]!.appendTurn(ADA, { ...turn(`l${i}`), basedOnRevision: 1 }, { expectedRevision: 'latest' })));
    assert.deepEqual(results.map((r) => r.status), Array(10).fill('appended'));
    const session = (await fixture.service.getSession(ADA))!;
    assert.deepEqual(session.turns.map((t) => t.revision), Array.from({ length: 11 }, (_, i) => i + 1));
    assert.deepEqual(new Set(session.turns.slice(1).map((t) => t.turnId)), new Set(Array.from({ length: 10 }, (_, i) => `l${i}`)));
    assert.equal((await fixture.service.appendTurn(ADA, turn('l3'), { expectedRevision: 'latest' })).status, 'duplicate');
    assert.equal((await fixture.service.appendTurn(key('fresh'), turn('t1'), { expectedRevision: 'latest' })).status, 'appended');
  });

  register("appendSessionTurn after a conflict: appends after the other turn, or throws with onConflict 'throw'", async ({ service }) => {
    await service.appendTurn(ADA, turn('t1'), { expectedRevision: 0 });
    await service.appendTurn(ADA, turn('other'), { expectedRevision: 1 });
    await refusedWith(appendSessionTurn(service, ADA, turn('t2'), { expectedRevision: 1, onConflict: 'throw' }), 'SessionConflictError', 'session_conflict');
    assert.equal((await service.getSession(ADA))!.revision, 2);
    const after = await appendSessionTurn(service, ADA, turn('t2'), { expectedRevision: 1 });
    assert.deepEqual(after.turns.map((t) => [t.turnId, t.revision, t.basedOnRevision ?? null]), [['t1', 1, null], ['other', 2, null], ['t2', 3, 1]]);
    assert.equal((await appendSessionTurn(service, ADA, turn('t2'), { expectedRevision: 0 })).revision, 3, 'a turn already stored is not written again');
  });

  register('what one service object wrote, another over the same data reads (when it has reopen)', async (fixture) => {
    if (!fixture.reopen) return;
    await fixture.service.appendTurn(ADA, turn('t1'), { expectedRevision: 0 });
    const other = await fixture.reopen();
    assert.deepEqual(await other.getSession(ADA), await fixture.service.getSession(ADA));
    assert.equal((await other.appendTurn(ADA, turn('t2'), { expectedRevision: 1 })).status, 'appended');
    assert.equal((await fixture.service.getSession(ADA))!.revision, 2);
  });

  register('a corrupted session is refused by every call and never reset (when it has corrupt)', async (fixture) => {
    if (!fixture.corrupt) return;
    const { service } = fixture;
    await service.appendTurn(ADA, turn('t1'), { expectedRevision: 0 });
    await fixture.corrupt(ADA.sessionId);
    for (let round = 0; round < 2; round++) {
      await refusedWith(call(() => service.getSession(ADA)), 'SessionCorruptError', 'session_corrupt');
      await refusedWith(call(() => service.appendTurn(ADA, turn('t2'), { expectedRevision: 1 })), 'SessionCorruptError', 'session_corrupt');
      await refusedWith(call(() => service.appendTurn(ADA, turn('t2'), { expectedRevision: 0 })), 'SessionCorruptError', 'session_corrupt');
    }
  });
}

async function servicesOf(fixture: { service: SessionService; reopen?(): Promise<SessionService> }, n: number): Promise<SessionService[]> {
  // Without reopen, the writers share the one service object (still concurrent calls).
  const out = [fixture.service];
  for (let i = 1; i < n; i++) out.push(fixture.reopen ? await fixture.reopen() : fixture.service);
  return out;
}

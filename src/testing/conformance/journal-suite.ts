/**
 * The AgentStreamJournal conformance suite: what the UI wire relies on when
 * it journals a run's frames and serves a client from its cursor. The same
 * cases run against the in-memory journal and the SQLite and PostgreSQL ops
 * stores' `journal`, and against yours.
 */
import assert from 'node:assert/strict';
import type { AgentStreamJournal, JournalFrame } from '../../ui/journal.js';
import { exactlyOneWins, rejectsWith } from './assert.js';
import { AWKWARD_BODIES, framesAfter, headOf, largeBody, plain, readAll } from './journal-frames.js';
import { describeConformance } from './suite.js';
import type { ConformanceTestApi } from './types.js';

/** What `create()` hands one journal case. */
export interface JournalFixture {
  /** A journal holding no streams. Every case gets its own (reset a shared database in `create`). */
  journal: AgentStreamJournal;
  /**
   * Moves the clock the journal stamps `updatedAt` with forward by `ms`. A
   * journal on a database clock passes one that sleeps.
   */
  advance(ms: number): Promise<void>;
  /**
   * Another journal object over the same data, as another process opens it,
   * while `journal` stays open. When given, the race cases append through
   * several objects at once and the sharing cases read through the other.
   */
  reopen?(): Promise<AgentStreamJournal>;
  /**
   * Closes every object the fixture opened and opens a new one on the same
   * data, as a restarted process does. When given, the durability case reads
   * the frames back through it.
   */
  restart?(): Promise<AgentStreamJournal>;
}

export interface JournalInitializer {
  /** Names the describe block: `AgentStreamJournal conformance: <name>`. */
  name: string;
  /** Makes the journal for one case. Called once per case. */
  create(): Promise<JournalFixture>;
  /** Closes what `create`, `reopen` and `restart` opened. Called after each case, passed or failed. */
  destroy?(fixture: JournalFixture): Promise<void>;
}

type Register = (name: string, body: (fixture: JournalFixture) => Promise<void>) => void;

const CONFLICT = { name: 'JournalConflictError', code: 'journal_conflict' };
const INVALID = { name: 'InvalidOptionsError', code: 'invalid_options' };

/**
 * Registers the AgentStreamJournal conformance cases with your test
 * framework. Each case gets a fresh journal from `initializer.create()`.
 *
 * @example
 * ```ts
 * import { describe, it } from 'vitest';
 * import { createInMemoryAgentStreamJournal } from 'cairn/ui';
 * import { createManualClock, defineJournalConformance } from 'cairn/testing';
 *
 * defineJournalConformance({
 *   name: 'in-memory',
 *   async create() {
 *     const clock = createManualClock();
 *     return { journal: createInMemoryAgentStreamJournal({ clock }), advance: async (ms) => clock.advance(ms) };
 *   },
 * }, { describe, it });
 * ```
 */
export function defineJournalConformance(initializer: JournalInitializer, api: ConformanceTestApi): void {
  describeConformance('AgentStreamJournal', initializer, api, (register: Register) => {
    api.describe('append and read', () => registerRoundTripCases(register));
    api.describe('the head check', () => registerConflictCases(register));
    api.describe('sharing and durability', () => registerSharingCases(register));
    api.describe('prune', () => registerPruneCases(register));
    api.describe('refusals', () => registerRefusalCases(register));
  });
}

function registerRoundTripCases(register: Register): void {
  register('a stream never written has no head and no frames', async ({ journal }) => {
    assert.equal(await journal.head('never'), undefined, 'head of an unknown stream must be undefined');
    assert.deepStrictEqual(await journal.read('never', 0), [], 'read of an unknown stream must be []');
    await journal.append('other', 0, framesAfter(0, 2));
    assert.equal(await journal.head('never'), undefined, 'head of an unknown stream once another exists');
    assert.equal(await journal.head('othe'), undefined, 'a prefix of a stream id is another stream');
    assert.deepStrictEqual(await journal.read('never', 0), []);
  });

  register('frames come back exactly as appended, awkward and unicode bodies byte for byte', async ({ journal }) => {
    const frames = AWKWARD_BODIES.map((body, i) => ({ seq: i + 1, body, end: false }));
    await journal.append('s', 0, frames.slice(0, 3), { scope: 'tenant-a' });
    await journal.append('s', 3, frames.slice(3), { scope: 'tenant-a' });
    const read = await journal.read('s', 0);
    assert.deepStrictEqual(plain(read), frames);
    for (const [i, frame] of read.entries()) {
      assert.equal(Buffer.from(frame.body, 'utf8').equals(Buffer.from(AWKWARD_BODIES[i]!, 'utf8')), true, `body ${i} changed`);
    }
    assert.deepStrictEqual(headOf(await journal.head('s')), { seq: frames.length, ended: false, scope: 'tenant-a' });
  });

  register('keeps large bodies whole: 256 KB frames, one alone and three in one append', async ({ journal }) => {
    const big = largeBody(256 * 1024);
    assert.equal(big.length, 256 * 1024);
    const others = [1, 2, 3].map((n) => largeBody(256 * 1024 - n));
    await journal.append('big', 0, [{ seq: 1, body: big, end: false }]);
    await journal.append('big', 1, others.map((body, i) => ({ seq: i + 2, body, end: i === 2 })));
    const read = await journal.read('big', 0);
    assert.equal(read.length, 4);
    assert.equal(read[0]!.body === big, true, 'the 256 KB body changed');
    for (const [i, body] of others.entries()) assert.equal(read[i + 1]!.body === body, true, `large body ${i + 2} changed`);
    assert.deepStrictEqual(headOf(await journal.head('big')), { seq: 4, ended: true, scope: null });
  });

  register('read pages from any cursor with a limit, across 9 to 10 and 99 to 100, default 1000', async ({ journal }) => {
    // Appends of many sizes: 1, 8, 1, 89, 1, 150 frames.
    let after = 0;
    for (const count of [1, 8, 1, 89, 1, 150]) {
      await journal.append('p', after, framesAfter(after, count));
      after += count;
    }
    const all = await journal.read('p', 0);
    assert.deepStrictEqual(all.map((f) => f.seq), Array.from({ length: 250 }, (_, i) => i + 1), 'frames must come in seq order, no gap');
    for (const [cursor, limit] of [[0, 1], [8, 2], [9, 1], [98, 3], [99, 1], [100, 7], [249, 10], [250, 10], [300, 5], [0, 250], [1, 10_000]] as const) {
      const page = await journal.read('p', cursor, limit);
      const expected = all.filter((f) => f.seq > cursor).slice(0, limit);
      assert.deepStrictEqual(plain(page), plain(expected), `read after ${cursor}, limit ${limit}`);
    }
    for (const limit of [1, 7, 100, 249, 250]) {
      assert.deepStrictEqual(plain(await readAll(journal, 'p', limit)), plain(all), `paging with limit ${limit}`);
    }
    // Without a limit: at most 1000.
    await journal.append('p', 250, framesAfter(250, 1000));
    const first = await journal.read('p', 0);
    assert.equal(first.length, 1000, 'read without a limit gives at most 1000 frames');
    assert.equal(first[999]!.seq, 1000);
    assert.deepStrictEqual((await journal.read('p', 1000)).map((f) => f.seq), Array.from({ length: 250 }, (_, i) => i + 1001));
  });

  register('the end flag is kept per frame, and head.ended is the last frame\'s', async ({ journal }) => {
    await journal.append('e', 0, [{ seq: 1, body: '{"a":1}', end: false }, { seq: 2, body: '{"a":2}', end: true }]);
    assert.deepStrictEqual(headOf(await journal.head('e')), { seq: 2, ended: true, scope: null });
    await journal.append('e', 2, [{ seq: 3, body: '{"a":3}', end: false }]);
    assert.deepStrictEqual(headOf(await journal.head('e')), { seq: 3, ended: false, scope: null }, 'a new leg began: not ended');
    await journal.append('e', 3, [{ seq: 4, body: '{"a":4}', end: true }, { seq: 5, body: '{"a":5}', end: false }, { seq: 6, body: '{"a":6}', end: true }]);
    assert.deepStrictEqual(headOf(await journal.head('e')), { seq: 6, ended: true, scope: null });
    assert.deepStrictEqual((await journal.read('e', 0)).map((f) => f.end), [false, true, false, true, false, true]);
    for (const frame of await journal.read('e', 0)) assert.equal(typeof frame.end, 'boolean', 'end must come back as a boolean');
  });

  register('head moves with every append: seq, scope and a later or equal updatedAt', async ({ journal, advance }) => {
    await journal.append('h', 0, framesAfter(0, 2), { scope: 'tenant-a' });
    const one = (await journal.head('h'))!;
    assert.deepStrictEqual(headOf(one), { seq: 2, ended: false, scope: 'tenant-a' });
    await advance(25);
    await journal.append('h', 2, framesAfter(2, 1, { end: true }), { scope: 'tenant-a' });
    const two = (await journal.head('h'))!;
    assert.deepStrictEqual(headOf(two), { seq: 3, ended: true, scope: 'tenant-a' });
    assert.ok(two.updatedAt > one.updatedAt, `updatedAt must move on with the clock: ${one.updatedAt} then ${two.updatedAt}`);
    assert.equal(typeof two.seq, 'number');
  });

  register('shares nothing with its caller: frames handed in or read out can be changed freely', async ({ journal }) => {
    const frames = framesAfter(0, 2);
    await journal.append('c', 0, frames);
    frames[0]!.body = 'changed';
    frames[1]!.end = true;
    const read = await journal.read('c', 0);
    assert.deepStrictEqual(plain(read), framesAfter(0, 2), 'the journal kept the frames it was handed');
    read[0]!.body = 'changed too';
    assert.deepStrictEqual(plain(await journal.read('c', 0)), framesAfter(0, 2), 'read handed out the stored frames themselves');
  });
}

function registerConflictCases(register: Register): void {
  /** Checks that `streamId` holds exactly `frames` (and the head that goes with them). */
  const holds = async (journal: AgentStreamJournal, streamId: string, frames: JournalFrame[], scope: string | null, what: string) => {
    assert.deepStrictEqual(plain(await journal.read(streamId, 0)), frames, `${what}: the frames changed`);
    const last = frames[frames.length - 1];
    assert.deepStrictEqual(headOf(await journal.head(streamId)), { seq: last?.seq ?? 0, ended: last?.end ?? true, scope }, `${what}: the head changed`);
  };

  register('refuses an append whose after is not the head, with journal_conflict, and writes nothing', async ({ journal }) => {
    const stored = framesAfter(0, 3);
    await journal.append('s', 0, stored, { scope: 'tenant-a' });
    for (const after of [0, 1, 2, 4, 10]) {
      const error = await rejectsWith(journal.append('s', after, framesAfter(after, 2, { tag: 'late' }), { scope: 'tenant-a' }), CONFLICT, `append after ${after} on a stream at 3`);
      assert.equal(error.streamId, 's');
      assert.equal(error.expected, after);
      assert.equal(error.found, 3);
      await holds(journal, 's', stored, 'tenant-a', `the refused append after ${after}`);
    }
  });

  register('refuses an append after a seq on a stream that does not exist, and creates nothing', async ({ journal }) => {
    const error = await rejectsWith(journal.append('new', 4, framesAfter(4, 1)), CONFLICT, 'append after 4 on a new stream');
    assert.equal(error.found, null, 'found must be null for a stream the journal does not hold');
    assert.equal(await journal.head('new'), undefined, 'a refused append created the stream');
    assert.deepStrictEqual(await journal.read('new', 0), []);
    await journal.append('new', 0, framesAfter(0, 1));
    assert.deepStrictEqual(headOf(await journal.head('new')), { seq: 1, ended: false, scope: null });
  });

  register('refuses an append under another scope, or none, on a stream of a scope, and the reverse', async ({ journal }) => {
    const scoped = framesAfter(0, 2);
    await journal.append('scoped', 0, scoped, { scope: 'tenant-a' });
    for (const options of [{ scope: 'tenant-b' }, { scope: 'Tenant-a' }, { scope: '' }, {}, undefined]) {
      await rejectsWith(journal.append('scoped', 2, framesAfter(2, 1), options), CONFLICT, `append with ${JSON.stringify(options)} on tenant-a's stream`);
      await holds(journal, 'scoped', scoped, 'tenant-a', `the append with ${JSON.stringify(options)}`);
    }
    const open = framesAfter(0, 1);
    await journal.append('open', 0, open);
    await rejectsWith(journal.append('open', 1, framesAfter(1, 1), { scope: 'tenant-a' }), CONFLICT, 'append with a scope on a stream without one');
    await holds(journal, 'open', open, null, 'the scoped append on a stream without scope');
    // The right scope (and none, for the stream without one) goes on.
    await journal.append('scoped', 2, framesAfter(2, 1), { scope: 'tenant-a' });
    await journal.append('open', 1, framesAfter(1, 1));
    assert.equal((await journal.head('scoped'))?.seq, 3);
    assert.equal((await journal.head('open'))?.seq, 2);
  });

  register('refuses a whole append when its first frame conflicts: no frame of it is written', async ({ journal }) => {
    await journal.append('w', 0, framesAfter(0, 2));
    // A writer that read seq 1 sends frames 2 to 5: frame 2 exists, so none of 3 to 5 may land either.
    await rejectsWith(journal.append('w', 1, framesAfter(1, 4, { tag: 'stale' })), CONFLICT, 'append after a stale head');
    assert.deepStrictEqual(plain(await journal.read('w', 0)), framesAfter(0, 2));
  });
}

function registerSharingCases(register: Register): void {
  /** Journal objects over the same data: reopened ones when the backend can, else the fixture's. */
  const objects = async ({ journal, reopen }: JournalFixture, n: number): Promise<AgentStreamJournal[]> => {
    if (!reopen) return Array.from({ length: n }, () => journal);
    return [journal, ...(await Promise.all(Array.from({ length: n - 1 }, () => reopen())))];
  };

  register('two objects on the same data see each other\'s appends at once', async (fixture) => {
    const [a, b] = (await objects(fixture, 2)) as [AgentStreamJournal, AgentStreamJournal];
    await a.append('s', 0, framesAfter(0, 2), { scope: 'tenant-a' });
    assert.deepStrictEqual(headOf(await b.head('s')), { seq: 2, ended: false, scope: 'tenant-a' });
    await b.append('s', 2, framesAfter(2, 1, { end: true }), { scope: 'tenant-a' });
    assert.deepStrictEqual(plain(await a.read('s', 0)), [...framesAfter(0, 2), ...framesAfter(2, 1, { end: true })]);
    await rejectsWith(a.append('s', 2, framesAfter(2, 1)), CONFLICT, 'the other object\'s append moved the head');
  });

  register('of appends on the same after through several objects at once, exactly one wins', async (fixture) => {
    const journals = await objects(fixture, 5);
    for (const [round, after] of [0, 3, 4, 10].entries()) {
      const streamId = `race-${round}`;
      if (after > 0) await journals[0]!.append(streamId, 0, framesAfter(0, after));
      const racers = journals.map((journal, i) => journal.append(streamId, after, framesAfter(after, 3, { tag: `writer-${i}` })));
      const { winner, losers } = await exactlyOneWins(racers, `5 appends after ${after}`);
      for (const loser of losers) {
        assert.equal((loser as { code?: unknown }).code, 'journal_conflict', `a losing append failed with ${String(loser)}, not journal_conflict`);
      }
      const frames = await journals[(winner + 1) % journals.length]!.read(streamId, 0);
      assert.deepStrictEqual(plain(frames), [...framesAfter(0, after), ...framesAfter(after, 3, { tag: `writer-${winner}` })],
        'the stream must hold the winner\'s frames and no loser\'s');
      assert.equal((await journals[0]!.head(streamId))?.seq, after + 3);
    }
  });

  register('frames survive closing the journal and opening it again', async (fixture) => {
    const big = largeBody(64 * 1024);
    await fixture.journal.append('d', 0, [{ seq: 1, body: AWKWARD_BODIES[2]!, end: false }, { seq: 2, body: big, end: true }], { scope: 'tenant-a' });
    await fixture.journal.append('e', 0, framesAfter(0, 3));
    const before = (await fixture.journal.head('d'))!;
    const after = fixture.restart ? await fixture.restart() : fixture.journal;
    assert.deepStrictEqual(plain(await after.read('d', 0)), [{ seq: 1, body: AWKWARD_BODIES[2]!, end: false }, { seq: 2, body: big, end: true }]);
    assert.deepStrictEqual(await after.head('d'), before, 'the head must be the same after a restart, updatedAt included');
    assert.deepStrictEqual(plain(await after.read('e', 1)), framesAfter(0, 3).slice(1));
    await after.append('e', 3, framesAfter(3, 1), {});
    assert.equal((await after.head('e'))?.seq, 4, 'appends go on after a restart');
  });
}

function registerPruneCases(register: Register): void {
  register('prune deletes whole streams last written strictly before the time, and returns how many', async ({ journal, advance }) => {
    assert.equal(await journal.prune({ before: Number.MAX_SAFE_INTEGER }), 0, 'an empty journal prunes nothing');
    await journal.append('old-1', 0, framesAfter(0, 3));
    await journal.append('old-2', 0, framesAfter(0, 1, { end: true }), { scope: 'tenant-a' });
    await advance(50);
    await journal.append('young', 0, framesAfter(0, 2));
    // An old stream written again is young again.
    await journal.append('old-1', 3, framesAfter(3, 1));
    const young = (await journal.head('young'))!;
    const oldTwo = (await journal.head('old-2'))!;
    assert.ok(oldTwo.updatedAt < young.updatedAt, 'updatedAt must follow the clock');

    assert.equal(await journal.prune({ before: oldTwo.updatedAt }), 0, 'a stream written at `before` is not before it');
    assert.equal(await journal.prune({ before: young.updatedAt }), 1, 'prune must delete the one stream last written before');
    assert.equal(await journal.head('old-2'), undefined, 'the pruned stream still has a head');
    assert.deepStrictEqual(await journal.read('old-2', 0), [], 'the pruned stream still has frames');
    assert.deepStrictEqual((await journal.read('old-1', 0)).map((f) => f.seq), [1, 2, 3, 4], 'the stream written again lost frames');
    assert.deepStrictEqual(plain(await journal.read('young', 0)), framesAfter(0, 2));

    // A pruned stream id is free again: it starts at 0, under any scope.
    await rejectsWith(journal.append('old-2', 1, framesAfter(1, 1), { scope: 'tenant-a' }), CONFLICT, 'append after 1 on a pruned stream');
    await journal.append('old-2', 0, framesAfter(0, 1), { scope: 'tenant-b' });
    assert.deepStrictEqual(headOf(await journal.head('old-2')), { seq: 1, ended: false, scope: 'tenant-b' });

    await advance(50);
    const latest = Math.max(...(await Promise.all(['old-1', 'old-2', 'young'].map(async (id) => (await journal.head(id))!.updatedAt))));
    assert.equal(await journal.prune({ before: latest + 1 }), 3);
    for (const id of ['old-1', 'old-2', 'young']) assert.equal(await journal.head(id), undefined, `${id} survived a prune of everything`);
  });
}

function registerRefusalCases(register: Register): void {
  const bad: Array<[string, (journal: AgentStreamJournal) => Promise<unknown>]> = [
    ['an empty stream id', (j) => j.append('', 0, framesAfter(0, 1))],
    ['a stream id that is not a string', (j) => j.append(7 as unknown as string, 0, framesAfter(0, 1))],
    ['a negative after', (j) => j.append('fresh', -1, [{ seq: 0, body: '{}', end: false }])],
    ['a fractional after', (j) => j.append('fresh', 0.5, [{ seq: 1.5, body: '{}', end: false }])],
    ['an after that is not a number', (j) => j.append('fresh', '0' as unknown as number, framesAfter(0, 1))],
    ['no frames', (j) => j.append('fresh', 0, [])],
    ['frames that are not an array', (j) => j.append('fresh', 0, { 0: framesAfter(0, 1)[0] } as unknown as JournalFrame[])],
    ['a first seq that is not after + 1', (j) => j.append('fresh', 0, [{ seq: 2, body: '{}', end: false }])],
    ['a gap between seqs', (j) => j.append('fresh', 0, [{ seq: 1, body: '{}', end: false }, { seq: 3, body: '{}', end: false }])],
    ['a repeated seq', (j) => j.append('fresh', 0, [{ seq: 1, body: '{}', end: false }, { seq: 1, body: '{}', end: false }])],
    ['a body that is not a string', (j) => j.append('fresh', 0, [{ seq: 1, body: { a: 1 } as unknown as string, end: false }])],
    ['a frame without end', (j) => j.append('fresh', 0, [{ seq: 1, body: '{}' } as JournalFrame])],
    ['an end that is not a boolean', (j) => j.append('fresh', 0, [{ seq: 1, body: '{}', end: 1 as unknown as boolean }])],
    ['a null frame', (j) => j.append('fresh', 0, [null as unknown as JournalFrame])],
    ['a good frame then a bad one', (j) => j.append('fresh', 0, [{ seq: 1, body: '{}', end: false }, { seq: 2, body: 2 as unknown as string, end: false }])],
    ['a read limit of 0', (j) => j.read('s', 0, 0)],
    ['a negative read limit', (j) => j.read('s', 0, -1)],
    ['a read limit above 10,000', (j) => j.read('s', 0, 10_001)],
    ['a fractional read limit', (j) => j.read('s', 0, 1.5)],
    ['a read limit that is not a number', (j) => j.read('s', 0, '10' as unknown as number)],
  ];

  register('refuses malformed appends and reads with invalid_options, and writes nothing', async ({ journal }) => {
    await journal.append('s', 0, framesAfter(0, 1));
    // The reads name a stream that exists; the appends name a new one, which none of them may create.
    for (const [what, call] of bad) await rejectsWith(call(journal), INVALID, what);
    assert.equal(await journal.head('fresh'), undefined, 'a refused append created its stream');
    assert.equal(await journal.head(''), undefined);
    assert.deepStrictEqual(plain(await journal.read('s', 0)), framesAfter(0, 1), 'a refused call changed a stream');
  });

  register('a refusal on a stream that exists leaves it as it was', async ({ journal }) => {
    const stored = framesAfter(0, 2, { end: true });
    await journal.append('s', 0, stored);
    await rejectsWith(journal.append('s', 2, [{ seq: 3, body: '{}', end: false }, { seq: 5, body: '{}', end: false }]), INVALID, 'a gap after the head');
    await rejectsWith(journal.append('s', 2, [{ seq: 2, body: '{}', end: false }]), INVALID, 'a seq that does not follow after');
    assert.deepStrictEqual(plain(await journal.read('s', 0)), stored);
    assert.deepStrictEqual(headOf(await journal.head('s')), { seq: 2, ended: true, scope: null });
  });

  register('a body no JSON text is (a raw NUL, a lone surrogate) is refused with invalid_options, creating nothing', async ({ journal }) => {
    for (const [i, body] of ['{"a":"\u0000"}', '{"a":"\uD800"}', '{"a":"\uDC00x"}', '\uDBFF'].entries()) {
      const streamId = `odd-${i}`;
      await rejectsWith(journal.append(streamId, 0, [{ seq: 1, body, end: false }]), INVALID, `body ${JSON.stringify(body)}`);
      assert.equal(await journal.head(streamId), undefined, 'a refused body created its stream');
    }
  });
}

/**
 * The SwarmStore conformance suite: what runAgentGroup relies on of a swarm
 * store (docs/swarm.md, "Stores"). The same cases run against the in-memory,
 * SQLite and PostgreSQL swarm stores, and against yours.
 */
import assert from 'node:assert/strict';
import { CairnError } from '../errors/index.js';
import type { AgentRunEnvelope } from '../agent/types.js';
import type { ConformanceTestApi } from './conformance/types.js';
import { describeConformance, type CaseRegister } from './conformance/suite.js';
import type { SwarmRecord, SwarmStore } from '../swarm/types.js';

export interface SwarmStoreFixture {
  /** A store holding no swarms. Every case gets its own. */
  store: SwarmStore;
  /** Another store object over the same data, as a second process opens it (durable stores). */
  reopen?(): Promise<SwarmStore>;
}

export interface SwarmStoreInitializer {
  /** Names the describe block: `SwarmStore conformance: <name>`. */
  name: string;
  /** The data outlives the store object: `create()` must give `reopen`. @default false */
  durable?: boolean;
  create(): Promise<SwarmStoreFixture>;
  destroy?(fixture: SwarmStoreFixture): Promise<void>;
}

const AT = 1_700_000_000_000;

function record(revision: number, tasks: Record<string, string> = { a: 'running' }, swarmId = 's1', scope = 'tenant-a'): SwarmRecord {
  return {
    kind: 'cairn-swarm', version: 1, swarmId, scope, revision, machine: { id: 'swarm', version: 1 },
    snapshot: { value: 'running', revision }, definition: 'd', status: 'running',
    tasks: Object.fromEntries(Object.entries(tasks).map(([id, status]) => [id, { status: status as never, runId: `${swarmId}.${id}`, dependsOn: [] }])),
    ledger: null, createdAt: AT, updatedAt: AT + revision,
  };
}

function envelope(runId: string, revision: number, scope = 'tenant-a'): AgentRunEnvelope {
  return { kind: 'cairn-agent-run', version: 2, runId, scope, revision, status: 'running', snapshot: { n: revision }, updatedAt: AT } as unknown as AgentRunEnvelope;
}

async function refused(work: Promise<unknown>, code: string): Promise<void> {
  const error = await work.then(() => undefined, (e: unknown) => e);
  assert.ok(CairnError.isInstance(error), `expected a Cairn error ${code}, got ${String(error)}`);
  assert.equal((error as CairnError).code, code);
}

type Register = CaseRegister<SwarmStoreFixture>;

/**
 * Registers the SwarmStore conformance cases with your test framework. Each
 * case gets a fresh store from `initializer.create()`.
 *
 * @example
 * ```ts
 * import { describe, it } from 'vitest';
 * import { createInMemorySwarmStore } from 'cairn/swarm';
 * import { defineSwarmStoreConformance } from 'cairn/testing';
 *
 * defineSwarmStoreConformance({ name: 'in-memory', create: async () => ({ store: createInMemorySwarmStore() }) }, { describe, it });
 * ```
 */
export function defineSwarmStoreConformance(initializer: SwarmStoreInitializer, api: ConformanceTestApi): void {
  describeConformance('SwarmStore', initializer, api, (register: Register) => {
    registerRecordCases(register);
    registerRunCases(register);
    registerBlackboardCases(register);
    if (initializer.durable) registerDurableCases(register);
  });
}

function registerRecordCases(register: Register): void {
  register('saves a record with its journal events, numbered 1, 2, 3 ... in the swarm', async ({ store }) => {
    assert.equal(await store.loadSwarm('s1', { scope: 'tenant-a' }), undefined);
    const first = await store.saveSwarm(record(1), [{ type: 'swarm-started' }, { type: 'task-started', taskId: 'a', data: { runId: 's1.a' } }]);
    assert.deepEqual(first.map((e) => [e.seq, e.type, e.swarmId]), [[1, 'swarm-started', 's1'], [2, 'task-started', 's1']]);
    await store.saveSwarm(record(2, { a: 'completed' }), [{ type: 'task-completed', taskId: 'a' }]);
    assert.deepEqual(await store.loadSwarm('s1', { scope: 'tenant-a' }), record(2, { a: 'completed' }));
    const journal = await store.readJournal('s1');
    assert.deepEqual(journal.map((e) => e.seq), [1, 2, 3]);
    assert.deepEqual(journal[1], { swarmId: 's1', seq: 2, type: 'task-started', taskId: 'a', data: { runId: 's1.a' }, at: AT + 1 });
    assert.deepEqual((await store.readJournal('s1', { after: 1, limit: 1 })).map((e) => e.seq), [2]);
    assert.deepEqual(await store.readJournal('other'), []);
  });

  register('refuses a save at the wrong revision, and appends none of its events', async ({ store }) => {
    await store.saveSwarm(record(1), [{ type: 'swarm-started' }]);
    await refused(store.saveSwarm(record(1), [{ type: 'task-failed', taskId: 'a' }]), 'revision_conflict');
    await refused(store.saveSwarm(record(3), [{ type: 'task-failed', taskId: 'a' }]), 'revision_conflict');
    assert.equal((await store.loadSwarm('s1', { scope: 'tenant-a' }))?.revision, 1);
    assert.deepEqual((await store.readJournal('s1')).map((e) => e.type), ['swarm-started']);
    await refused(store.saveSwarm(record(2, { a: 'running' }, 's2'), []), 'revision_conflict');
    assert.equal(await store.loadSwarm('s2', { scope: 'tenant-a' }), undefined);
  });

  register('keeps another scope out: load and save refused, nothing of it returned', async ({ store }) => {
    await store.saveSwarm(record(1), []);
    await refused(store.loadSwarm('s1', { scope: 'tenant-b' }), 'scope_mismatch');
    await refused(store.saveSwarm(record(2, {}, 's1', 'tenant-b'), []), 'scope_mismatch');
    assert.equal((await store.loadSwarm('s1', { scope: 'tenant-a' }))?.revision, 1);
  });

  register('refuses bad input before writing', async ({ store }) => {
    await refused(store.loadSwarm('a.b', { scope: 'tenant-a' }), 'invalid_options');
    await refused(store.saveSwarm({ ...record(1), kind: 'nope' } as never, []), 'invalid_options');
    await refused(store.saveSwarm(record(1), [{ type: '' } as never]), 'invalid_options');
    await refused(store.readJournal('s1', { after: -1 }), 'invalid_options');
    assert.equal(await store.loadSwarm('s1', { scope: 'tenant-a' }), undefined);
  });
}

function registerRunCases(register: Register): void {
  register('keeps each task run\'s envelope in its task\'s row, fenced by revision', async ({ store }) => {
    await store.saveSwarm(record(1, { a: 'running', b: 'pending' }), []);
    assert.equal(await store.runs.load('s1.a', { scope: 'tenant-a' }), undefined);
    await store.runs.save(envelope('s1.a', 1));
    await store.runs.save(envelope('s1.a', 2));
    await refused(store.runs.save(envelope('s1.a', 2)), 'revision_conflict');
    assert.deepEqual(await store.runs.load('s1.a', { scope: 'tenant-a' }), envelope('s1.a', 2));
    // A step of the swarm moves the task's state, not its envelope.
    await store.saveSwarm(record(2, { a: 'completed', b: 'running' }), []);
    assert.deepEqual(await store.runs.load('s1.a', { scope: 'tenant-a' }), envelope('s1.a', 2));
    await refused(store.runs.load('s1.a', { scope: 'tenant-b' }), 'scope_mismatch');
    await refused(store.runs.save(envelope('s1.a', 3, 'tenant-b')), 'scope_mismatch');
  });

  register('refuses the envelope of a run that is no task of a stored swarm', async ({ store }) => {
    await refused(store.runs.save(envelope('s9.x', 1)), 'persistence_failed');
    assert.equal(await store.runs.load('s9.x', { scope: 'tenant-a' }), undefined);
  });
}

function registerBlackboardCases(register: Register): void {
  register('applies a blackboard write once by its writeId, versions each key, journals each write', async ({ store }) => {
    await store.saveSwarm(record(1), [{ type: 'swarm-started' }]);
    const w = (key: string, value: unknown, writeId: string) => ({ key, value: value as never, taskId: 'a', writeId, at: AT });
    const first = await store.writeBlackboard('s1', w('facts', { n: 1 }, 'r:1:c1'));
    assert.deepEqual(first, { applied: true, entry: { key: 'facts', value: { n: 1 }, taskId: 'a', writeId: 'r:1:c1', version: 1, at: AT } });
    const replay = await store.writeBlackboard('s1', w('facts', { n: 999 }, 'r:1:c1'));
    assert.equal(replay.applied, false);
    assert.deepEqual(replay.entry.value, { n: 1 }, 'a replay is answered with what the write stored');
    await store.writeBlackboard('s1', w('facts', { n: 2 }, 'r:2:c1'));
    await store.writeBlackboard('s1', w('alpha', 'x', 'r:2:c2'));
    const board = await store.readBlackboard('s1');
    assert.deepEqual(board.map((e) => [e.key, e.value, e.version]), [['alpha', 'x', 1], ['facts', { n: 2 }, 2]]);
    assert.deepEqual((await store.readBlackboard('s1', 'facts')).map((e) => e.version), [2]);
    assert.deepEqual(await store.readBlackboard('s1', 'none'), []);
    const journal = await store.readJournal('s1');
    assert.deepEqual(journal.map((e) => [e.seq, e.type]), [[1, 'swarm-started'], [2, 'blackboard-written'], [3, 'blackboard-written'], [4, 'blackboard-written']]);
    // The next step's events follow the writes.
    const next = await store.saveSwarm(record(2), [{ type: 'task-completed', taskId: 'a' }]);
    assert.equal(next[0]!.seq, 5);
  });

  register('refuses a blackboard write on no swarm, or with a bad key', async ({ store }) => {
    await refused(store.writeBlackboard('s1', { key: 'k', value: 1, taskId: 'a', writeId: 'w', at: AT }), 'persistence_failed');
    await store.saveSwarm(record(1), []);
    await refused(store.writeBlackboard('s1', { key: '', value: 1, taskId: 'a', writeId: 'w', at: AT }), 'invalid_options');
    assert.deepEqual(await store.readBlackboard('s1'), []);
  });
}

function registerDurableCases(register: Register): void {
  register('a second store object over the same data reads every part, and is fenced with the first', async (fixture) => {
    const { store } = fixture;
    await store.saveSwarm(record(1), [{ type: 'swarm-started' }]);
    await store.runs.save(envelope('s1.a', 1));
    await store.writeBlackboard('s1', { key: 'k', value: [1, 2], taskId: 'a', writeId: 'w1', at: AT });
    const other = await fixture.reopen!();
    assert.deepEqual(await other.loadSwarm('s1', { scope: 'tenant-a' }), record(1));
    assert.deepEqual(await other.runs.load('s1.a', { scope: 'tenant-a' }), envelope('s1.a', 1));
    assert.deepEqual((await other.readBlackboard('s1')).map((e) => e.value), [[1, 2]]);
    assert.deepEqual((await other.readJournal('s1')).map((e) => e.type), ['swarm-started', 'blackboard-written']);
    assert.equal((await other.writeBlackboard('s1', { key: 'k', value: 3, taskId: 'a', writeId: 'w1', at: AT })).applied, false);
    await other.saveSwarm(record(2), []);
    await refused(store.saveSwarm(record(2), []), 'revision_conflict');
    await other.runs.save(envelope('s1.a', 2));
    await refused(store.runs.save(envelope('s1.a', 2)), 'revision_conflict');
  });
}

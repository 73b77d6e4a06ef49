/**
 * reconcileAgentRun settles an extraction a failed save left unsettled, by
 * the rules: every planned mutation in the store → completed without a
 * memory LLM call; some → failed with memory_extraction_partial, never run
 * again; none (or nothing planned yet) → run now.
 */
import { describe, expect, it } from 'vitest';
import {
  agentRunLeaseKey, createInMemoryAgentRunStore, createInMemoryLeaseProvider, reconcileAgentRun, runAgent, type AgentRunStore,
} from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { testMemory, type TestMemory } from './run-helpers.js';

const SCOPE = { userId: 'ada' };

/** A run store whose `failAt`-th save fails (the write does not land). A one-turn run saves its start, its answer with its end, the extraction's plan, then its outcome. */
function failingAt(failAt: number): AgentRunStore {
  const inner = createInMemoryAgentRunStore();
  let saves = 0;
  return Object.assign(Object.create(inner) as AgentRunStore, {
    save: async (e: never, o: never) => {
      if (++saves === failAt) throw new Error('disk full');
      return inner.save(e, o);
    },
    load: inner.load.bind(inner),
  });
}

async function completedRun(memory: TestMemory, store: AgentRunStore, runId = 'r1') {
  const result = await runAgent({ model: createMockModel({ responses: [{ text: 'Noted.' }] }), prompt: 'I prefer tea and biscuits.', memory, session: { store, runId, scope: 't' } });
  expect(result.status).toBe('completed');
  return { store, runId, scope: 't' };
}

const opsOf = async (memory: TestMemory) => (await memory.store.list({ scope: SCOPE })).map((r) => r.metadata.cairn?.operationId);

describe('reconcileAgentRun settles a memory extraction', () => {
  it('nothing planned was saved (the plan\'s save failed): it runs the extraction now', async () => {
    const memory = testMemory();
    const session = await completedRun(memory, failingAt(3));
    expect((await session.store.load('r1'))?.memory?.extraction?.status).toBe('pending');
    expect(await opsOf(memory)).toEqual([]);
    expect(await reconcileAgentRun({ session, memory })).toEqual({ runId: 'r1', memory: 'completed' });
    const envelope = await session.store.load('r1');
    expect(envelope?.memory?.extraction).toMatchObject({ status: 'completed', planned: 1, mutations: 1 });
    expect(await opsOf(memory)).toEqual([envelope!.memory!.extraction!.operationId]);
    // Settled: a second call changes nothing and asks nothing.
    const asked = memory.asked.length;
    const revision = envelope!.revision;
    expect(await reconcileAgentRun({ session, memory })).toEqual({ runId: 'r1', memory: 'completed' });
    expect(memory.asked.length).toBe(asked);
    expect((await session.store.load('r1'))?.revision).toBe(revision);
  });

  it('every planned mutation is in the store (the outcome\'s save failed): completed without another memory LLM call', async () => {
    const memory = testMemory();
    const session = await completedRun(memory, failingAt(4));
    expect((await session.store.load('r1'))?.memory?.extraction).toMatchObject({ status: 'planned', planned: 1 });
    const asked = memory.asked.length;
    expect(await reconcileAgentRun({ session, memory })).toEqual({ runId: 'r1', memory: 'completed' });
    expect(memory.asked.length).toBe(asked);
    expect(await memory.store.list({ scope: SCOPE })).toHaveLength(1);
    expect((await session.store.load('r1'))?.memory?.extraction).toMatchObject({ status: 'completed', mutations: 1 });
  });

  it('some of them are: failed with memory_extraction_partial and a warning, never run again', async () => {
    const memory = testMemory({ events: '{"memory":[{"event":"ADD","text":"prefers tea"},{"event":"ADD","text":"likes biscuits"}]}' });
    const add = memory.store.add.bind(memory.store);
    let adds = 0;
    memory.seams.store = { ...memory.store, add: (i) => (++adds === 2 ? Promise.reject(new Error('memory db down')) : add(i)) };
    const warned: string[] = [];
    memory.seams.logger = { warn: (m) => warned.push(m) };
    const session = await completedRun(memory, failingAt(4));
    expect((await session.store.load('r1'))?.memory?.extraction).toMatchObject({ status: 'planned', planned: 2 });
    const first = await reconcileAgentRun({ session, memory });
    expect(first).toMatchObject({ runId: 'r1', memory: 'failed', warnings: [{ type: 'warning', setting: 'memory', code: 'memory_extraction_partial' }] });
    expect(warned).toHaveLength(1);
    expect((await session.store.load('r1'))?.memory?.extraction).toMatchObject({
      status: 'failed', planned: 2, mutations: 1, error: { code: 'memory_extraction_partial' },
    });
    const asked = memory.asked.length;
    const again = await reconcileAgentRun({ session, memory });
    expect(again).toMatchObject({ memory: 'failed', warnings: [{ code: 'memory_extraction_partial' }] });
    expect(memory.asked.length).toBe(asked);
    expect(await memory.store.list({ scope: SCOPE })).toHaveLength(1);
  });

  it('a failed extraction with nothing in the store runs again; without the memory option it is only reported', async () => {
    const memory = testMemory({ events: 'not json' });
    const store = createInMemoryAgentRunStore();
    const session = await completedRun(memory, store);
    expect((await store.load('r1'))?.memory?.extraction).toMatchObject({ status: 'failed', error: { code: 'memory_llm_invalid' } });
    expect(await reconcileAgentRun({ session })).toEqual({ runId: 'r1', memory: 'failed' });
    const fixed = testMemory({ store: memory.store });
    expect(await reconcileAgentRun({ session, memory: fixed })).toEqual({ runId: 'r1', memory: 'completed' });
    // A completed reconciliation keeps no error of the earlier attempt.
    expect((await store.load('r1'))?.memory?.extraction).toEqual({ operationId: expect.any(String), status: 'completed', planned: 1, mutations: 1 });
  });

  it('refuses another memory scope, and an executor\'s lease, before anything is written', async () => {
    const memory = testMemory();
    const leases = createInMemoryLeaseProvider();
    const session = await completedRun(memory, failingAt(3));
    const revision = (await session.store.load('r1'))!.revision;
    const asked = memory.asked.length;
    await expect(reconcileAgentRun({ session, memory: testMemory({ scope: { userId: 'bob' } }) })).rejects.toMatchObject({ name: 'BindingChangedError' });
    const held = await leases.acquire(agentRunLeaseKey(session), 'worker', 30_000);
    await expect(reconcileAgentRun({ session, memory, lease: { provider: leases } })).rejects.toMatchObject({ name: 'AgentRunLeaseError', code: 'lease_held' });
    expect((await session.store.load('r1'))!.revision).toBe(revision);
    expect(memory.asked.length).toBe(asked);
    await leases.release(held!);
    expect(await reconcileAgentRun({ session, memory, lease: { provider: leases } })).toEqual({ runId: 'r1', memory: 'completed' });
    expect(await leases.inspect(agentRunLeaseKey(session))).toBeNull();
  });
});

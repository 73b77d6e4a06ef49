/**
 * Every model attempt of a run with a store and an in-memory ledger finds its
 * reservation in the run's stored record when it is sent: loop steps and the
 * finalization after a turn without calls through the save before them (no
 * save of their own), and the calls no save precedes (a repair, a call after a
 * verifier's feedback, the first call of a drained run's resume, a retry and a
 * fail-over inside one call) through a save of the last record with the newer
 * ledger. A crash at any of those calls keeps the hold.
 */
import { describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunEnvelope, type AgentRunStore, type LeaseProvider,
} from 'cairn/agent';
import { createExecutionContext } from 'cairn/policy';
import { createMockModel, type MockTurn } from 'cairn/testing';
import type { ModelRequest } from 'cairn/models';

const prices = { 'mock:mock-model': { input: 1, output: 2 }, 'mock:backup': { input: 1, output: 2 } };
const estimate = { inputTokens: 1000, outputTokens: 1000 };
const usage = { inputTokens: 1000, outputTokens: 500 };
const noop = { parameters: { type: 'object' }, execute: () => 'ok' };
const sleep = async () => undefined;
const answer = {
  schema: { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'] },
  validate: (value: unknown) => {
    if (typeof (value as { answer?: unknown })?.answer !== 'number') throw new Error('Expected a numeric answer.');
    return value as { answer: number };
  },
};

/** A store that counts its saves. */
function counting() {
  const inner = createInMemoryAgentRunStore();
  let saves = 0;
  const store: AgentRunStore = {
    load: (runId, options) => inner.load(runId, options),
    save: async (envelope, options) => {
      saves++;
      await inner.save(envelope, options);
    },
  };
  return { store, saves: () => saves };
}

/**
 * Turns that, when called, read the run's stored record: what it held at the
 * moment of each attempt is kept (the reserved entries' ids, the record's revision).
 */
function watched(store: AgentRunStore, turns: MockTurn[]) {
  const seen: { reserved: string[]; revision: number }[] = [];
  const responses = turns.map((turn) => async (_request: ModelRequest) => {
    const record = (await store.load('r')) as AgentRunEnvelope;
    seen.push({ reserved: (record.ledger?.entries ?? []).filter((e) => e.status === 'reserved').map((e) => e.id), revision: record.revision });
    return turn;
  });
  return { responses, seen };
}

/** Each attempt found exactly one reservation in the record, its own (a new one each time). */
function expectEachAttemptHeld(seen: { reserved: string[] }[], attempts: number) {
  expect(seen).toHaveLength(attempts);
  for (const s of seen) expect(s.reserved).toHaveLength(1);
  expect(new Set(seen.map((s) => s.reserved[0])).size).toBe(attempts);
}

const context = () => createExecutionContext({ prices, budget: { usd: 1, estimate } });

describe('a reservation is in the record before its call is sent', () => {
  it('the finalization after a turn without calls rides with that turn\'s save: no save of its own', async () => {
    const turns: MockTurn[] = [{ text: 'I know it.', usage }, { text: '{"answer":42}', usage }];
    const plain = counting();
    await runAgent({ model: createMockModel({ responses: turns }), prompt: 'Go.', tools: { noop }, output: answer, session: { store: plain.store, runId: 'r', scope: 's' } });
    const budgeted = counting();
    const w = watched(budgeted.store, turns);
    const result = await runAgent({
      model: createMockModel({ responses: w.responses }), prompt: 'Go.', tools: { noop }, output: answer, execution: context(),
      session: { store: budgeted.store, runId: 'r', scope: 's' },
    });
    expect(result).toMatchObject({ status: 'completed', output: { answer: 42 } });
    expectEachAttemptHeld(w.seen, 2);
    expect(budgeted.saves()).toBe(plain.saves());
  });

  it('a repair call is saved ahead by a save of the last record', async () => {
    const { store } = counting();
    const w = watched(store, [{ text: 'I know it.', usage }, { text: 'not json', usage }, { text: '{"answer":42}', usage }]);
    const result = await runAgent({
      model: createMockModel({ responses: w.responses }), prompt: 'Go.', tools: { noop }, output: answer, maxOutputAttempts: 2, execution: context(),
      session: { store, runId: 'r', scope: 's' },
    });
    expect(result).toMatchObject({ status: 'completed', output: { answer: 42 } });
    expectEachAttemptHeld(w.seen, 3);
  });

  it('a call after a verifier\'s feedback', async () => {
    const { store } = counting();
    const w = watched(store, [{ text: '41', usage }, { text: '42', usage }]);
    const result = await runAgent({
      model: createMockModel({ responses: w.responses }), prompt: 'Go.', execution: context(), session: { store, runId: 'r', scope: 's' },
      verify: ({ text }) => (text === '42' ? { status: 'verified' } : { status: 'rejected', feedback: 'Recount.' }),
    });
    expect(result).toMatchObject({ status: 'completed', output: '42' });
    expectEachAttemptHeld(w.seen, 2);
  });

  it('a retry and a fail-over inside one call, each attempt on its own reservation', async () => {
    const { store } = counting();
    const primary = watched(store, [{ error: { status: 503 } }, { error: { status: 503 } }]);
    const backup = watched(store, [{ text: 'Done.', usage }]);
    const execution = context();
    const result = await runAgent({
      model: createMockModel({ responses: primary.responses }), fallbackModels: [createMockModel({ modelId: 'backup', responses: backup.responses })],
      prompt: 'Go.', maxRetries: 1, deps: { sleep }, execution, session: { store, runId: 'r', scope: 's' },
    });
    expect(result.status).toBe('completed');
    expectEachAttemptHeld([...primary.seen, ...backup.seen], 3);
    // The two failed attempts may have been billed: both stay held.
    expect((await execution.ledger.entries()).map((e) => e.status)).toEqual(['unknown', 'unknown', 'committed']);
  });

  it('the first call of a drained run\'s resume', async () => {
    const { store } = counting();
    let drain = false;
    const provider: LeaseProvider = {
      acquire: async (key, owner, ttlMs) => ({ key, owner, token: 1, expiresAt: Date.now() + ttlMs }),
      renew: async (lease) => ({ lease, drain }),
      release: async () => undefined,
      requestDrain: async () => undefined,
      inspect: async () => null,
    };
    const execution = context();
    const first = await runAgent({
      model: createMockModel({
        responses: [async () => {
          drain = true;
          // Long enough for a renewal (every ttl / 3) to carry the drain request.
          await new Promise((resolve) => setTimeout(resolve, 40));
          return { toolCalls: [{ toolCallId: 'a', toolName: 'noop', args: {} }], usage };
        }],
      }),
      prompt: 'Go.', tools: { noop }, execution, lease: { provider, ttlMs: 30 }, session: { store, runId: 'r', scope: 's' },
    });
    expect(first).toMatchObject({ status: 'stopped', reason: 'drained' });
    const w = watched(store, [{ text: 'Done.', usage }]);
    const resumed = await resumeAgent({ model: createMockModel({ responses: w.responses }), prompt: 'Go.', tools: { noop }, execution, session: { store, runId: 'r', scope: 's' } });
    expect(resumed.status).toBe('completed');
    expectEachAttemptHeld(w.seen, 1);
  });
});

describe('a crash at a call no save precedes', () => {
  it('keeps the hold: the resumed run counts the lost attempt as unknown and reserves its retry anew', async () => {
    const store = createInMemoryAgentRunStore();
    let crashed: AgentRunEnvelope | undefined;
    // The process dies while the repair call is in flight: what survives is the record as it was then.
    const responses: Array<MockTurn | (() => Promise<MockTurn>)> = [
      { text: 'I know it.', usage },
      { text: 'not json', usage },
      async () => {
        crashed = structuredClone(await store.load('r'));
        return { text: '{"answer":42}', usage };
      },
    ];
    await runAgent({
      model: createMockModel({ responses }), prompt: 'Go.', tools: { noop }, output: answer, maxOutputAttempts: 2, execution: context(),
      session: { store, runId: 'r', scope: 's' },
    });
    // A fresh store holding that record (as its first revision) stands for the one the new process opens.
    const survivor = createInMemoryAgentRunStore();
    await survivor.save({ ...crashed!, revision: 1 });
    // A new process, a fresh context of the same scope: the ledger comes back from the record.
    const execution = context();
    const result = await resumeAgent({
      // The restored run validates the stored turn again and asks for the repair once more.
      model: createMockModel({ responses: [{ text: '{"answer":42}', usage }] }), prompt: 'Go.', tools: { noop }, output: answer,
      maxOutputAttempts: 2, execution, session: { store: survivor, runId: 'r', scope: 's' },
    });
    expect(result).toMatchObject({ status: 'completed', output: { answer: 42 } });
    const entries = await execution.ledger.entries();
    // Two calls before the crash, the one lost in it (held), and the resumed leg's repair again.
    expect(entries.map((e) => e.status)).toEqual(['committed', 'committed', 'unknown', 'committed']);
    expect(new Set(entries.map((e) => e.id)).size).toBe(entries.length);
    expect(result.accounting?.unknown.usd).toBeGreaterThan(0);
  });
});

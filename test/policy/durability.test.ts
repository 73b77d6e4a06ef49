/**
 * The ledger and the run's record: the reservation of a step's call rides
 * with the save before it (no save of its own), a root context checkpoints the
 * whole ledger and a child only its slice, a resume needs the same context,
 * and a crash and resume neither counts a call twice nor loses a hold.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunEnvelope } from 'cairn/agent';
import { BudgetError, createExecutionContext, createInMemoryLedger, type BudgetLedger } from 'cairn/policy';
import { createMockModel, type MockResponse } from 'cairn/testing';
import { recordingStore } from '../support/recording-store.js';

const prices = { 'mock:mock-model': { input: 1, output: 2 } };
const estimate = { inputTokens: 1000, outputTokens: 1000 };
const usage = { inputTokens: 1000, outputTokens: 500 };
const noop = { parameters: { type: 'object' }, execute: () => 'ok' };

/** A store that keeps a copy of every envelope it saved. */
const twoSteps = (): MockResponse[] => [{ toolCalls: [{ toolCallId: 'a', toolName: 'noop', args: {} }], usage }, { text: 'Done.', usage }];

describe('reservations in the record', () => {
  it('are saved before the call by the save that precedes it, without a save of their own', async () => {
    const plain = recordingStore();
    await runAgent({ model: createMockModel({ responses: twoSteps() }), prompt: 'Go.', tools: { noop }, session: { store: plain.store, runId: 'r', scope: 's' } });
    const budgeted = recordingStore();
    const execution = createExecutionContext({ prices, budget: { usd: 1, estimate } });
    const result = await runAgent({
      model: createMockModel({ responses: twoSteps() }), prompt: 'Go.', tools: { noop }, execution, session: { store: budgeted.store, runId: 'r', scope: 's' },
    });
    expect(result.status).toBe('completed');
    expect(budgeted.saved).toHaveLength(plain.saved.length);
    // The start's save holds step 0's reservation, the step's checkpoint step 1's, each before its call.
    const [start, step] = [budgeted.saved[0]!, budgeted.saved.find((e) => JSON.stringify(e.snapshot).includes('"checkpointing"'))!];
    expect(start.ledger?.entries.map((e) => [e.id.split(':')[1], e.status])).toEqual([['0', 'reserved']]);
    expect(step.ledger?.entries.map((e) => [e.id.split(':')[1], e.status])).toEqual([['0', 'committed'], ['1', 'reserved']]);
    const last = budgeted.saved.at(-1)!;
    expect(last.ledger).toMatchObject({ name: 'root', scope: 'root', subtree: false });
    expect(last.ledger?.entries.map((e) => e.status)).toEqual(['committed', 'committed']);
  });

  it('hold the whole ledger under a root context, and only the run\'s slice under a child', async () => {
    const root = createExecutionContext({ prices });
    await runAgent({ model: createMockModel({ responses: [{ text: 'A.', usage }] }), prompt: 'Go.', execution: root.child({ name: 'other' }) });
    const underRoot = recordingStore();
    await runAgent({ model: createMockModel({ responses: [{ text: 'B.', usage }] }), prompt: 'Go.', execution: root, session: { store: underRoot.store, runId: 'r', scope: 's' } });
    expect(underRoot.saved.at(-1)!.ledger?.entries.map((e) => e.scope).sort()).toEqual(['root', 'root/other']);
    const underChild = recordingStore();
    await runAgent({
      model: createMockModel({ responses: [{ text: 'C.', usage }] }), prompt: 'Go.', execution: root.child({ name: 'mine' }), session: { store: underChild.store, runId: 'r', scope: 's' },
    });
    expect(underChild.saved.at(-1)!.ledger).toMatchObject({ scope: 'root/mine', subtree: true });
    expect(underChild.saved.at(-1)!.ledger?.entries.map((e) => e.scope)).toEqual(['root/mine']);
  });
});

describe('a resume needs the same context', () => {
  const suspended = async (execution: ReturnType<typeof createExecutionContext>) => {
    const store = createInMemoryAgentRunStore();
    const options = {
      model: createMockModel({ responses: [{ toolCalls: [{ toolCallId: 'a', toolName: 'noop', args: {} }], usage }, { text: 'Done.', usage }] }),
      prompt: 'Go.',
      tools: { noop: { ...noop, needsApproval: true } },
      session: { store, runId: 'r', scope: 's' },
    };
    const first = await runAgent({ ...options, execution });
    if (first.status !== 'suspended') throw new Error('expected a suspension');
    const approvalResponses = first.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true }));
    return { options: { ...options, approvalResponses }, store };
  };

  it('refuses a resume without it, or with a context of another scope, and writes nothing', async () => {
    const { options, store } = await suspended(createExecutionContext({ prices }));
    const before = await store.load('r');
    const without = await resumeAgent(options);
    expect(without.status === 'failed' && without.error).toMatchObject({ name: 'ExecutionPolicyError', code: 'execution_context_mismatch' });
    const other = await resumeAgent({ ...options, execution: createExecutionContext({ name: 'elsewhere' }) });
    expect(other.status === 'failed' && other.error.code).toBe('execution_context_mismatch');
    expect((await store.load('r'))?.revision).toBe(before?.revision);
  });

  it('a slice cannot seed a new ledger; the same context goes on', async () => {
    const root = createExecutionContext({ prices });
    const child = root.child({ name: 'task' });
    const { options } = await suspended(child);
    const fresh = await resumeAgent({ ...options, execution: createExecutionContext({ prices }).child({ name: 'task' }) });
    expect(fresh.status === 'failed' && fresh.error.code).toBe('execution_context_mismatch');
    const same = await resumeAgent({ ...options, execution: child });
    expect(same.status).toBe('completed');
    expect((await root.accounting()).committed.tokens).toBe(3000);
  });

  it('a root context restored after a restart keeps what the ledger held: the budget is not reset', async () => {
    const { options } = await suspended(createExecutionContext({ prices, budget: { usd: 0.004, estimate } }));
    // A new process: a fresh context of the same scope. The first call ($0.002) is restored, so the second ($0.003 asked) no longer fits.
    const restarted = createExecutionContext({ prices, budget: { usd: 0.004, estimate } });
    const result = await resumeAgent({ ...options, execution: restarted });
    expect(result.status === 'stopped' && result.reason).toBe('budget-exceeded');
    expect(result.status === 'stopped' && result.stopDetails).toMatchObject({ spent: { usd: 0.002 }, asked: { usd: 0.003 } });
  });
});

describe('a crash and resume', () => {
  it('keeps the interrupted call held and reserves the retried call on its own', async () => {
    const store = createInMemoryAgentRunStore();
    let crashed: AgentRunEnvelope | undefined;
    // The process "dies" while the model works: what survives is the record saved before the call.
    const model = createMockModel({
      responses: [async () => {
        crashed = structuredClone(await store.load('r'));
        return { text: 'lost', usage };
      }],
    });
    await runAgent({ model, prompt: 'Go.', execution: createExecutionContext({ prices, budget: { usd: 1, estimate } }), session: { store, runId: 'r', scope: 's' } });
    const survivor = createInMemoryAgentRunStore();
    await survivor.save(crashed!);
    const execution = createExecutionContext({ prices, budget: { usd: 1, estimate } });
    const result = await resumeAgent({
      model: createMockModel({ responses: [{ text: 'Again.', usage }] }), prompt: 'Go.', execution, session: { store: survivor, runId: 'r', scope: 's' },
    });
    expect(result.status).toBe('completed');
    const entries = await execution.ledger.entries();
    expect(entries.map((e) => e.status)).toEqual(['unknown', 'committed']);
    expect(new Set(entries.map((e) => e.id)).size).toBe(2);
    expect(result.accounting).toMatchObject({ unknown: { usd: 0.003, tokens: 2000 }, committed: { usd: 0.002, tokens: 1500 }, reserved: { usd: 0, tokens: 0 } });
    // Resuming the ended run again counts nothing more.
    await resumeAgent({ model: createMockModel({ responses: [] }), prompt: 'Go.', execution, session: { store: survivor, runId: 'r', scope: 's' } });
    expect(await execution.ledger.entries()).toHaveLength(2);
  });
});

describe('a ledger that keeps meeting a serialization conflict', () => {
  it('fails the run as transient: retryFailed goes on, and nothing was reserved for the refused attempt', async () => {
    const inner = createInMemoryLedger('shared');
    let conflicting = true;
    const ledger: BudgetLedger = {
      ...inner,
      name: 'shared',
      admit: async (request) => {
        if (conflicting) throw new BudgetError('budget_admission_conflict', 'could not serialize access', { cause: { code: '40001' } });
        return inner.admit(request);
      },
    };
    const execution = createExecutionContext({ ledger, prices, budget: { usd: 1, estimate } });
    const store = createInMemoryAgentRunStore();
    const options = { prompt: 'Go.', execution, session: { store, runId: 'r', scope: 's' } };
    const failed = await runAgent({ ...options, model: createMockModel({ responses: [] }) });
    expect(failed.status).toBe('failed');
    if (failed.status !== 'failed') return;
    expect(failed.error.code).toBe('budget_admission_conflict');
    expect(failed.retry).toEqual({ cause: 'serialization-conflict', phase: 'loop' });
    expect((await store.load('r'))?.retry?.cause).toBe('serialization-conflict');
    conflicting = false;
    const retried = await resumeAgent({ ...options, model: createMockModel({ responses: [{ text: 'Done.', usage }] }), retryFailed: true });
    expect(retried.status).toBe('completed');
    expect((await inner.entries()).map((e) => e.status)).toEqual(['committed']);
  });
});

/**
 * The headless budget on the engine's ledger: the run's record checkpoints
 * it (so every leg counts), a leg without a budget still resumes a run that
 * has one, a budget added on a later leg starts from what the run used, and
 * a refusal reads as it always did (outcome limit, budget_exceeded) with the
 * ledger's details.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, type AgentTools } from 'cairn/agent';
import { exitCodeFor, resumeHeadless, runHeadless } from 'cairn/headless';
import { createMockModel, type MockTurn } from 'cairn/testing';

const byToolResults = (turns: MockTurn[]) => createMockModel({
  strict: false,
  responses: [(request) => turns[Math.min(request.messages.filter((m) => m.role === 'tool').length, turns.length - 1)]!],
});
const gate = (text: string): MockTurn => ({ toolCalls: [{ toolName: 'gate', args: { text } }], usage: { inputTokens: 60, outputTokens: 0 } });
const tools: AgentTools = {
  gate: { parameters: { type: 'object' }, needsApproval: ({ text }: { text: string }) => text === 'a', execute: () => 'ok' },
};
const approvals = (report: Awaited<ReturnType<typeof runHeadless>>) =>
  report.pending.flatMap((a) => (a.kind === 'approval' ? [{ approvalId: a.approvalId, token: a.token, approved: true }] : []));

describe('the headless budget on the ledger', () => {
  it('is checkpointed with the run, and its refusal is outcome limit with what the ledger says was spent', async () => {
    const store = createInMemoryAgentRunStore();
    const model = byToolResults([gate('a'), gate('b'), { text: 'done' }]);
    const first = await runHeadless({ model, prompt: 'x', tools, store, runId: 'r', budget: { tokens: 100 } });
    expect(first.outcome).toBe('pending');
    expect((await store.load('r'))?.ledger).toMatchObject({ scope: 'headless', subtree: false, entries: [{ status: 'committed', tokens: 60 }] });
    const second = await resumeHeadless({ model, tools, store, runId: 'r', approvalResponses: approvals(first), budget: { tokens: 100 } });
    expect(second).toMatchObject({
      outcome: 'limit', reason: 'budget-exceeded', error: { code: 'budget_exceeded' }, stopDetails: { spent: { tokens: 120 }, ceiling: { tokens: 100 } },
    });
    expect(exitCodeFor(second)).toBe(6);
  });

  it('a leg without a budget resumes a run whose record holds a ledger', async () => {
    const store = createInMemoryAgentRunStore();
    const model = byToolResults([gate('a'), { text: 'done' }]);
    const first = await runHeadless({ model, prompt: 'x', tools, store, runId: 'r', budget: { tokens: 1000 } });
    const second = await resumeHeadless({ model, tools, store, runId: 'r', approvalResponses: approvals(first) });
    expect(second.outcome).toBe('completed');
  });

  it('a budget first given on a later leg starts from what the run used before it', async () => {
    const store = createInMemoryAgentRunStore();
    const model = byToolResults([gate('a'), gate('b'), { text: 'done' }]);
    const first = await runHeadless({ model, prompt: 'x', tools, store, runId: 'r' });
    const second = await resumeHeadless({ model, tools, store, runId: 'r', approvalResponses: approvals(first), budget: { tokens: 100 } });
    expect(second).toMatchObject({ outcome: 'limit', error: { code: 'budget_exceeded' } });
  });

  it('refuses budget beside an execution context of your own', async () => {
    const report = await runHeadless({
      model: createMockModel({ responses: [{ text: 'x' }] }), prompt: 'x', store: createInMemoryAgentRunStore(), budget: { usd: 1 },
      execution: (await import('cairn/policy')).createExecutionContext(),
    });
    expect(report).toMatchObject({ outcome: 'failed', error: { code: 'invalid_options' } });
  });
});

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
import type { LanguageModel } from 'cairn/models';
import { createMockModel, type MockTurn } from 'cairn/testing';

/** A scripted model that reports as `provider:modelId`, so the price table sees a provider's model. */
const reportingAs = (provider: string, modelId: string, turns: MockTurn[]): LanguageModel => {
  const inner = createMockModel({ strict: false, responses: turns });
  return { specificationVersion: 'cairn-model-1', provider, modelId, doGenerate: (request) => inner.doGenerate(request) };
};

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

  const noop: AgentTools = { noop: { parameters: { type: 'object' }, execute: () => 'ok' } };
  const callsNoop = (usage: MockTurn['usage']): MockTurn => ({ toolCalls: [{ toolName: 'noop', args: {} }], usage });

  it('prices every model of the run from the bundled table, fallbacks included, as the report does', async () => {
    const store = createInMemoryAgentRunStore();
    const usage = { inputTokens: 10_000, outputTokens: 1000 };
    const report = await runHeadless({
      model: reportingAs('openai', 'gpt-4.1', [callsNoop(usage), { error: { status: 503 } }]),
      fallbackModels: [reportingAs('anthropic', 'claude-haiku-4-5', [{ text: 'done', usage }])],
      tools: noop, maxRetries: 0, prompt: 'x', store, runId: 'f', budget: { usd: 1 },
    });
    expect(report.outcome).toBe('completed');
    // GPT-4.1 at $2 in, $8 out ($0.028), then Haiku 4.5 at $1 in, $5 out ($0.015): before, the ledger held the fallback unpriced.
    expect(report.cost).toEqual({ usd: 0.043, complete: true });
    const entries = (await store.load('f'))!.ledger!.entries;
    expect(entries.filter((e) => e.status === 'committed').map((e) => [e.model, e.usd])).toEqual([
      ['openai:gpt-4.1', 0.028], ['anthropic:claude-haiku-4-5', 0.015],
    ]);
    expect(report.warnings.map((w) => w.code)).toEqual(['fallbackModels']);
  });

  it('a fallback without a price is held uncounted in USD, with the engine\'s warning in the report', async () => {
    const report = await runHeadless({
      model: reportingAs('openai', 'gpt-4.1', [{ error: { status: 503 } }]),
      fallbackModels: [reportingAs('acme', 'rocket-1', [{ text: 'done', usage: { inputTokens: 10, outputTokens: 5 } }])],
      maxRetries: 0, prompt: 'x', store: createInMemoryAgentRunStore(), budget: { usd: 1 },
    });
    expect(report.outcome).toBe('completed');
    expect(report.warnings).toEqual(expect.arrayContaining([expect.objectContaining({ code: 'execution', message: expect.stringContaining('acme:rocket-1') })]));
  });

  it('a leg whose model has no price runs under no USD ceiling: it warns once, and its tokens still count', async () => {
    const model = () => reportingAs('acme', 'rocket-1', [callsNoop({ inputTokens: 60, outputTokens: 0 }), { text: 'done', usage: { inputTokens: 60, outputTokens: 0 } }]);
    const ran = await runHeadless({ model: model(), tools: noop, prompt: 'x', store: createInMemoryAgentRunStore(), budget: { usd: 0.000001 } });
    expect(ran.outcome).toBe('completed');
    expect(ran.warnings.map((w) => w.code)).toEqual(['unpriced-model']);
    // An unpriced call's usage is held as unknown (tokens, no USD): the second call no longer fits 50 tokens.
    const limited = await runHeadless({ model: model(), tools: noop, prompt: 'x', store: createInMemoryAgentRunStore(), budget: { usd: 0.000001, tokens: 50 } });
    expect(limited).toMatchObject({ outcome: 'limit', error: { code: 'budget_exceeded' }, stopDetails: { held: { tokens: 60 }, ceiling: { tokens: 50 } } });
  });
});

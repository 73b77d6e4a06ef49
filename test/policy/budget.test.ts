/**
 * Budget admission through the public entry points: every model attempt is
 * reserved at its estimate before it is sent, known usage settles it, the
 * fail-over rules decide what a failed attempt keeps held, a refused
 * admission stops the run with what was spent, held and asked for, and the
 * result's accounting reports the ledger.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, runAgent } from 'cairn/agent';
import { createInMemoryBreakerStore } from 'cairn/models';
import { createExecutionContext, type LedgerEntry } from 'cairn/policy';
import { createMockModel, type MockTurn } from 'cairn/testing';

const sleep = async () => undefined;
/** $1 per million input tokens, $2 per million output tokens: 1000 in + 500 out is $0.002. */
const prices = { 'mock:mock-model': { input: 1, output: 2 }, 'mock:fallback': { input: 1, output: 2 } };
/** Every attempt is estimated at 1000 in + 1000 out: $0.003, 2000 tokens. */
const estimate = { inputTokens: 1000, outputTokens: 1000 };
const turn = (text: string, extra: Partial<MockTurn> = {}): MockTurn => ({ text, usage: { inputTokens: 1000, outputTokens: 500 }, ...extra });
const statuses = (entries: LedgerEntry[]) => entries.map((e) => `${e.model}:${e.status}`);

describe('admission and settlement', () => {
  it('settles each call at its known usage and reports it on the result', async () => {
    const execution = createExecutionContext({ prices, budget: { usd: 1, estimate } });
    const result = await runAgent({
      model: createMockModel({ responses: [{ toolCalls: [{ toolCallId: 'a', toolName: 'noop', args: {} }], usage: { inputTokens: 1000, outputTokens: 500 } }, turn('Done.')] }),
      prompt: 'Go.',
      tools: { noop: { parameters: { type: 'object' }, execute: () => 'ok' } },
      execution,
    });
    expect(result.status).toBe('completed');
    expect(result.accounting).toEqual({
      spent: { inputTokens: 2000, outputTokens: 1000, usd: 0.004 },
      reserved: { usd: 0, tokens: 0 },
      committed: { usd: 0.004, tokens: 3000 },
      unknown: { usd: 0, tokens: 0 },
    });
    const entries = await execution.ledger.entries();
    expect(statuses(entries)).toEqual(['mock:mock-model:committed', 'mock:mock-model:committed']);
    expect(entries[0]!.estimate).toEqual({ usd: 0.003, tokens: 2000 });
  });

  it('stops the run with budget-exceeded before a call its estimate would take past the ceiling', async () => {
    // Two calls fit ($0.002 spent + $0.003 asked <= $0.006); the third is refused ($0.004 + $0.003 > $0.006).
    const execution = createExecutionContext({ prices, budget: { usd: 0.006, estimate } });
    const call = { toolCalls: [{ toolCallId: 'a', toolName: 'noop', args: {} }], usage: { inputTokens: 1000, outputTokens: 500 } };
    const model = createMockModel({ strict: false, responses: [call, { ...call, toolCalls: [{ toolCallId: 'b', toolName: 'noop', args: {} }] }, turn('never')] });
    const result = await runAgent({
      model, prompt: 'Go.', tools: { noop: { parameters: { type: 'object' }, execute: () => 'ok' } }, execution,
      session: { store: createInMemoryAgentRunStore(), runId: 'over', scope: 's' },
    });
    expect(result.status).toBe('stopped');
    if (result.status !== 'stopped') return;
    expect(result.reason).toBe('budget-exceeded');
    expect(result.stopDetails).toEqual({
      admitted: false, scope: 'root', ceiling: { usd: 0.006 }, model: 'mock:mock-model',
      spent: { usd: 0.004, tokens: 3000 }, held: { usd: 0, tokens: 0 }, asked: { usd: 0.003, tokens: 2000 },
    });
    expect(model.calls).toHaveLength(2);
    expect(result.accounting.committed).toEqual({ usd: 0.004, tokens: 3000 });
  });

  it('enforces a token ceiling the same way', async () => {
    const execution = createExecutionContext({ budget: { tokens: 1999, estimate } });
    const model = createMockModel({ responses: [turn('never')] });
    const result = await runAgent({ model, prompt: 'Go.', execution });
    expect(result.status === 'stopped' && result.reason).toBe('budget-exceeded');
    expect(model.calls).toHaveLength(0);
  });

  // bundledPrices: false leaves the scripted model (which the bundled table prices at 0) without a price.
  it("with unknownPrice: 'hold', keeps a model without a price held as unknown, counted in tokens only, and warns", async () => {
    const execution = createExecutionContext({ bundledPrices: false, budget: { usd: 1, estimate, unknownPrice: 'hold' } });
    const result = await runAgent({ model: createMockModel({ responses: [turn('Hi.')] }), prompt: 'Go.', execution });
    expect(result.status).toBe('completed');
    expect(result.accounting).toMatchObject({ spent: { usd: null }, committed: { usd: 0, tokens: 0 }, unknown: { usd: 0, tokens: 1500 } });
    expect(result.warnings).toEqual([expect.objectContaining({ type: 'warning', setting: 'execution', message: expect.stringContaining('mock:mock-model') })]);
  });

  it('refuses an unpriced model under a USD ceiling by default, before its call', async () => {
    for (const budget of [{ usd: 1 }, { usd: 1, unknownPrice: 'reject' as const }]) {
      const model = createMockModel({ responses: [turn('never')] });
      const result = await runAgent({ model, prompt: 'Go.', execution: createExecutionContext({ bundledPrices: false, budget }) });
      expect(result.status === 'failed' && result.error).toMatchObject({ name: 'BudgetError', code: 'unpriced_model' });
      expect(model.calls).toHaveLength(0);
    }
  });

  it('lets an unpriced model run without a USD ceiling: a token ceiling counts it', async () => {
    const model = createMockModel({ responses: [turn('Hi.')] });
    const result = await runAgent({ model, prompt: 'Go.', execution: createExecutionContext({ bundledPrices: false, budget: { tokens: 5000, estimate } }) });
    expect(result.status).toBe('completed');
    expect(result.warnings).toEqual([]);
    expect(result.accounting.unknown.tokens).toBe(1500);
  });
});

describe('holds under the fail-over rules', () => {
  const failover = async (failure: MockTurn, extra: { breaker?: boolean } = {}) => {
    const execution = createExecutionContext({ prices, budget: { usd: 1, estimate } });
    const breakerStore = createInMemoryBreakerStore();
    if (extra.breaker) await breakerStore.set('mock:mock-model', { failures: 5, cooldownUntil: Date.now() + 60_000 });
    const primary = createMockModel({ strict: false, responses: [failure] });
    const fallback = createMockModel({ modelId: 'fallback', responses: [turn('From the fallback.')] });
    const result = await runAgent({
      model: primary, fallbackModels: [fallback], prompt: 'Go.', maxRetries: 0, deps: { sleep, ...(extra.breaker ? { breakerStore } : {}) }, execution,
    });
    expect(result.status).toBe('completed');
    return { result, entries: await execution.ledger.entries() };
  };

  it.each([
    ['a 503', { error: { status: 503 } }],
    ['a 500', { error: { status: 500 } }],
    ['a 529', { error: { status: 529 } }],
    ['a network error', { error: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) }],
    ['a transport timeout', { error: new DOMException('timed out', 'TimeoutError') }],
  ])('%s keeps the failed attempt held at its estimate', async (_name, failure) => {
    const { result, entries } = await failover(failure as MockTurn);
    expect(statuses(entries)).toEqual(['mock:mock-model:unknown', 'mock:fallback:committed']);
    expect(result.accounting.unknown).toEqual({ usd: 0.003, tokens: 2000 });
    expect(result.accounting.committed).toEqual({ usd: 0.002, tokens: 1500 });
  });

  it('a 429 releases its hold', async () => {
    const { result, entries } = await failover({ error: { status: 429 } });
    expect(statuses(entries)).toEqual(['mock:mock-model:released', 'mock:fallback:committed']);
    expect(result.accounting.unknown).toEqual({ usd: 0, tokens: 0 });
  });

  it('an open breaker reserves nothing', async () => {
    const { entries } = await failover({ text: 'never' }, { breaker: true });
    expect(statuses(entries)).toEqual(['mock:fallback:committed']);
  });

  it('a stream that broke off after its first content keeps its hold', async () => {
    const execution = createExecutionContext({ prices, budget: { usd: 1, estimate } });
    const model = createMockModel({ responses: [{ text: 'Half an answ', streamError: { afterChunks: 1, error: { status: 500 } } }] });
    const result = await runAgent({ model, prompt: 'Go.', execution });
    expect(result.status).toBe('failed');
    expect(result.accounting.unknown).toEqual({ usd: 0.003, tokens: 2000 });
  });
});

describe('a shared context', () => {
  it('counts every run under it, and a child\'s ceiling as well as its parent\'s', async () => {
    const root = createExecutionContext({ prices, budget: { usd: 0.0065, estimate } });
    const first = await runAgent({ model: createMockModel({ responses: [turn('One.')] }), prompt: 'Go.', execution: root.child({ name: 'a' }) });
    const second = await runAgent({ model: createMockModel({ responses: [turn('Two.')] }), prompt: 'Go.', execution: root.child({ name: 'b', budget: { usd: 0.004 } }) });
    expect([first.status, second.status]).toEqual(['completed', 'completed']);
    // The root's ceiling: $0.004 spent + $0.003 asked > $0.0065.
    const third = await runAgent({ model: createMockModel({ responses: [turn('never')] }), prompt: 'Go.', execution: root.child({ name: 'c' }) });
    expect(third.status === 'stopped' && third.stopDetails).toMatchObject({ scope: 'root', spent: { usd: 0.004 } });
    // A child's own ceiling, with room left in its parent's: $0.002 spent under b + $0.003 asked > $0.004.
    const fresh = createExecutionContext({ prices, budget: { usd: 1, estimate } });
    const b = fresh.child({ name: 'b', budget: { usd: 0.004 } });
    await runAgent({ model: createMockModel({ responses: [turn('One.')] }), prompt: 'Go.', execution: b });
    const refused = await runAgent({ model: createMockModel({ responses: [turn('never')] }), prompt: 'Go.', execution: b });
    expect(refused.status === 'stopped' && refused.stopDetails).toMatchObject({ scope: 'root/b', ceiling: { usd: 0.004 } });
    expect(refused.accounting.committed).toEqual({ usd: 0.002, tokens: 1500 });
  });

  it('never admits past the ceiling when runs call at the same time', async () => {
    const root = createExecutionContext({ prices, budget: { usd: 0.01, estimate } });
    const runs = Array.from({ length: 8 }, (_, i) => runAgent({
      model: createMockModel({ strict: false, responses: [turn(`Run ${i}.`, { delayMs: 5 })] }),
      prompt: 'Go.',
      execution: root.child({ name: `r${i}` }),
    }));
    const results = await Promise.all(runs);
    // Each estimate is $0.003: three fit under $0.01 while all are in flight, the rest are refused.
    expect(results.filter((r) => r.status === 'completed')).toHaveLength(3);
    expect(results.filter((r) => r.status === 'stopped' && r.reason === 'budget-exceeded')).toHaveLength(5);
    const totals = await root.accounting();
    expect(totals.committed).toEqual({ usd: 0.006, tokens: 4500 });
    expect(totals.reserved).toEqual({ usd: 0, tokens: 0 });
  });
});

/**
 * A USD ceiling with the providers' own model objects, pointed at a local
 * server: the bundled table prices them as they name themselves, a call its
 * estimate (every byte sent, plus the call's output limit) would take past the
 * ceiling is never sent, an unpriced model is refused before its call unless
 * the budget holds it (which warns on the stream), a context's own price wins
 * over the table, and cairn/headless prices a run as the context does.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, runAgent, streamAgent, type AgentEvent } from 'cairn/agent';
import { createAnthropic } from 'cairn/anthropic';
import { createGoogle } from 'cairn/google';
import { runHeadless } from 'cairn/headless';
import type { LanguageModel } from 'cairn/models';
import { createOpenAI } from 'cairn/openai';
import { BUNDLED_PRICES, PRICES_AS_OF, createExecutionContext } from 'cairn/policy';
import { CANARY_KEY, wireServerForFile } from '../providers/wire-server.js';
import { streamed, textBytesOf } from './openai-wire.js';

const server = await wireServerForFile();

const openai = () => createOpenAI({ apiKey: CANARY_KEY, baseURL: `${server.url}/v1` });
const M = 1_000_000;

describe('the bundled table', () => {
  it('is dated and keyed as the provider factories name their models', () => {
    expect(PRICES_AS_OF).toMatch(/^\d{4}-\d{2}$/);
    const models: LanguageModel[] = [
      openai().chat('gpt-4.1'), openai().responses('gpt-4.1'), openai()('gpt-5'),
      createAnthropic({ apiKey: CANARY_KEY, baseURL: server.url })('claude-sonnet-4-5'),
      createGoogle({ apiKey: CANARY_KEY, baseURL: server.url })('gemini-2.5-flash'),
    ];
    const context = createExecutionContext();
    for (const model of models) {
      expect(BUNDLED_PRICES[`${model.provider}:${model.modelId}`], `${model.provider}:${model.modelId}`).toBeDefined();
      expect(context.priceOf(model)?.maxOutputTokens).toBeGreaterThan(0);
    }
    expect(context.priceOf(openai().chat('gpt-4.1'))).toEqual({ input: 2, output: 8, cacheRead: 0.5, cacheWrite: 2, maxOutputTokens: 32_768 });
  });
});

describe('a USD ceiling with real provider models', () => {
  it.each([
    ['openai chat', () => openai().chat('gpt-4.1'), 'openai:gpt-4.1', 32_768],
    ['openai responses', () => openai().responses('gpt-4.1'), 'openai:gpt-4.1', 32_768],
    ['anthropic', () => createAnthropic({ apiKey: CANARY_KEY, baseURL: server.url })('claude-sonnet-4-5'), 'anthropic:claude-sonnet-4-5', 64_000],
    ['google', () => createGoogle({ apiKey: CANARY_KEY, baseURL: server.url })('gemini-2.5-flash'), 'google:gemini-2.5-flash', 65_536],
  ])('%s: a call past usd 0.000001 is refused before any request', async (_wire, model, key, limit) => {
    const result = await runAgent({ model: model(), prompt: 'Hello there.', execution: createExecutionContext({ budget: { usd: 0.000001 } }) });
    expect(server.requests).toHaveLength(0);
    expect(result.status).toBe('stopped');
    if (result.status !== 'stopped') return;
    expect(result.reason).toBe('budget-exceeded');
    const details = result.stopDetails as { model: string; asked: { usd: number; tokens: number }; ceiling: { usd: number } };
    expect(details).toMatchObject({ model: key, ceiling: { usd: 0.000001 } });
    // The ask is every byte of the request as input plus the model's output limit as output, at the table's prices.
    const price = BUNDLED_PRICES[key]!;
    const input = details.asked.tokens - limit;
    expect(input).toBeGreaterThan('Hello there.'.length);
    expect(details.asked.usd).toBeCloseTo((input * price.inputPerMTok + limit * price.outputPerMTok) / M, 9);
  });

  it('refuses an unpriced model before any request: BudgetError unpriced_model', async () => {
    const result = await runAgent({ model: openai().chat('gpt-9-preview'), prompt: 'Hi.', execution: createExecutionContext({ budget: { usd: 5 } }) });
    expect(server.requests).toHaveLength(0);
    expect(result.status === 'failed' && result.error).toMatchObject({ name: 'BudgetError', code: 'unpriced_model' });
    expect(result.status === 'failed' && result.error.message).toContain('openai:gpt-9-preview');
  });

  it("with unknownPrice: 'hold', runs the unpriced model and warns on the stream before its call", async () => {
    server.reply(streamed({ text: 'Hello!', usage: { prompt: 40, completion: 5 } }));
    const run = streamAgent({
      model: openai().chat('gpt-9-preview'), prompt: 'Hi.', execution: createExecutionContext({ budget: { usd: 5, unknownPrice: 'hold' } }),
    });
    const events: AgentEvent[] = [];
    for await (const event of run.events) events.push(event);
    const result = await run.result;
    expect(result.status).toBe('completed');
    expect(result.text).toBe('Hello!');
    expect(server.requests).toHaveLength(1);
    const warnings = events.filter((e) => e.type === 'warning');
    expect(warnings).toEqual([expect.objectContaining({ setting: 'execution', message: expect.stringContaining('no price for openai:gpt-9-preview') })]);
    expect(events.indexOf(warnings[0]!)).toBeLessThan(events.findIndex((e) => e.type === 'text-delta'));
    expect(result.warnings).toEqual(warnings);
    // Held, not counted in USD: its tokens are all the ledger knows.
    expect(result.accounting).toMatchObject({ spent: { usd: null }, committed: { usd: 0, tokens: 0 }, unknown: { usd: 0, tokens: 45 } });
  });

  it('holds while a provider bills no more input than was sent: a tool loop stops before it passes the ceiling', async () => {
    // The server bills every byte of text it was sent and the call's whole output limit: the most it could bill for it.
    server.handler = (request) => {
      const body = request.body as { max_completion_tokens: number; messages: unknown[] };
      const usage = { prompt: textBytesOf(request), completion: body.max_completion_tokens };
      return streamed({ toolCall: { id: `call_${body.messages.length}`, name: 'note', args: { text: 'more' } }, usage });
    };
    const execution = createExecutionContext({ budget: { usd: 0.006 } });
    const result = await runAgent({
      model: openai().chat('gpt-4.1'), prompt: 'Take notes until you are stopped.', maxOutputTokens: 100, maxSteps: 50,
      tools: { note: { description: 'Writes a note.', parameters: { type: 'object' }, execute: () => 'noted' } },
      execution,
    });
    expect(result.status === 'stopped' && result.reason).toBe('budget-exceeded');
    expect(server.requests.length).toBeGreaterThanOrEqual(3);
    const entries = await execution.ledger.entries();
    expect(entries.filter((e) => e.status === 'committed')).toHaveLength(server.requests.length);
    for (const entry of entries) expect(entry.usd!).toBeLessThanOrEqual(entry.estimate.usd!);
    expect(result.accounting.committed.usd).toBeLessThanOrEqual(0.006);
    // The refused call is the one whose estimate would have passed it.
    const details = (result.status === 'stopped' ? result.stopDetails : null) as { spent: { usd: number }; asked: { usd: number } };
    expect(details.spent.usd).toBe(result.accounting.committed.usd);
    expect(details.spent.usd + details.asked.usd).toBeGreaterThan(0.006);
  });
});

describe('prices of a context', () => {
  it('its own price of a model is used over the table, and keeps the table\'s output limit unless it sets one', async () => {
    server.reply(streamed({ text: 'Done.', usage: { prompt: 1000, completion: 500 } }));
    const execution = createExecutionContext({ prices: { 'openai:gpt-4.1': { input: 10, output: 20, maxOutputTokens: 1000 } }, budget: { usd: 1 } });
    const result = await runAgent({ model: openai().chat('gpt-4.1'), prompt: 'Go.', execution });
    expect(result.status).toBe('completed');
    // $10 and $20 per million: 1000 in, 500 out is $0.02 (the table's $2 and $8 would make it $0.006).
    expect(result.accounting.committed).toEqual({ usd: 0.02, tokens: 1500 });
    const [entry] = await execution.ledger.entries();
    // Reserved at the request's bytes plus the override's output limit of 1000, at the override's prices.
    expect(entry!.estimate.tokens).toBeGreaterThan(1000);
    expect(entry!.estimate.usd).toBeCloseTo(((entry!.estimate.tokens - 1000) * 10 + 1000 * 20) / M, 9);
    // Another model keeps the table's price; an override without a limit keeps the table's limit.
    expect(execution.priceOf({ provider: 'openai', modelId: 'gpt-4o' })).toMatchObject({ input: 2.5, output: 10, maxOutputTokens: 16_384 });
    const bare = createExecutionContext({ prices: { 'gpt-4o': { input: 1, output: 1 } } });
    expect(bare.priceOf({ provider: 'openai', modelId: 'gpt-4o' })).toEqual({ input: 1, output: 1, maxOutputTokens: 16_384 });
  });

  it('bundledPrices: false prices only what the context lists: the rest is unpriced and refused', async () => {
    const execution = createExecutionContext({ bundledPrices: false, prices: { 'openai:gpt-4.1-mini': { input: 1, output: 1 } }, budget: { usd: 1 } });
    expect(execution.priceOf({ provider: 'openai', modelId: 'gpt-4.1' })).toBeNull();
    const result = await runAgent({ model: openai().chat('gpt-4.1'), prompt: 'Go.', execution });
    expect(result.status === 'failed' && result.error.code).toBe('unpriced_model');
    expect(server.requests).toHaveLength(0);
  });
});

describe('headless and a context agree', () => {
  // 2000 input tokens of which 1500 were read from the cache, 300 output: gpt-4.1 at $2, $0.50 cached, $8.
  const usage = { prompt: 2000, cached: 1500, completion: 300 };
  const expected = (500 * 2 + 1500 * 0.5 + 300 * 8) / M;

  it('on the bundled price of a model, cached input included', async () => {
    server.reply(streamed({ text: 'One.', usage }), streamed({ text: 'Two.', usage }));
    const store = createInMemoryAgentRunStore();
    const report = await runHeadless({ model: openai().chat('gpt-4.1'), prompt: 'Go.', store, runId: 'h', budget: { usd: 1 } });
    expect(report.outcome).toBe('completed');
    expect(report.cost).toEqual({ usd: expected, complete: true });
    const ledger = (await store.load('h'))!.ledger!;
    expect(ledger.entries.map((e) => e.usd)).toEqual([expected]);

    const direct = await runAgent({ model: openai().chat('gpt-4.1'), prompt: 'Go.', execution: createExecutionContext({ budget: { usd: 1 } }) });
    expect(direct.accounting.committed.usd).toBe(expected);
    expect(direct.accounting.spent.usd).toBe(expected);
  });

  it('on the price of a price provider of your own, which the bundled table does not override', async () => {
    server.reply(streamed({ text: 'One.', usage }));
    const store = createInMemoryAgentRunStore();
    // One dollar per million tokens of any kind.
    const priceProvider = ({ usage: u }: { usage: { inputTokens: number; outputTokens: number } }) => (u.inputTokens + u.outputTokens) / M;
    const report = await runHeadless({ model: openai().chat('gpt-4.1'), prompt: 'Go.', store, runId: 'p', budget: { usd: 1 }, deps: { priceProvider } });
    expect(report.cost).toEqual({ usd: 2300 / M, complete: true });
    expect((await store.load('p'))!.ledger!.entries.map((e) => e.usd)).toEqual([2300 / M]);
  });
});

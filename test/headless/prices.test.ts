/**
 * The bundled price table: the models the providers name are priced, dated
 * snapshots take their alias's price, and a usage's cached input is charged at
 * the cache prices (it is part of inputTokens, so it is not charged twice),
 * reasoning at the output price (it is part of outputTokens).
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore } from 'cairn/agent';
import { BUNDLED_PRICES, bundledPrice, bundledPriceProvider, runHeadless } from 'cairn/headless';
import { createMockModel } from 'cairn/testing';
import type { LanguageModel, Usage } from 'cairn/models';

const usd = (provider: string, modelId: string, usage: Partial<Usage>) =>
  bundledPriceProvider({ provider, modelId, usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0, ...usage } }) as number;
const M = 1_000_000;

describe('the bundled price table', () => {
  it.each([
    ['openai', 'gpt-5'], ['openai', 'gpt-5-mini'], ['openai', 'gpt-5-nano'], ['openai', 'gpt-5.1'], ['openai', 'gpt-5.2'],
    ['openai', 'gpt-4.1'], ['openai', 'gpt-4.1-mini'], ['openai', 'gpt-4.1-nano'], ['openai', 'gpt-4o'], ['openai', 'gpt-4o-mini'],
    ['openai', 'o3'], ['openai', 'o4-mini'],
    ['anthropic', 'claude-opus-4-7'], ['anthropic', 'claude-opus-4-5'], ['anthropic', 'claude-opus-4-1'], ['anthropic', 'claude-sonnet-4-5'],
    ['anthropic', 'claude-sonnet-4'], ['anthropic', 'claude-haiku-4-5'],
    ['google', 'gemini-2.5-pro'], ['google', 'gemini-2.5-flash'], ['google', 'gemini-2.5-flash-lite'],
  ])('prices %s:%s with cache read and write prices', (provider, modelId) => {
    const price = bundledPrice(provider, modelId);
    expect(price).toBeDefined();
    expect(price!.cacheReadPerMTok).toBeLessThan(price!.inputPerMTok);
    expect(price!.cacheWritePerMTok).toBeGreaterThanOrEqual(price!.inputPerMTok);
    expect(price!.outputPerMTok).toBeGreaterThan(price!.inputPerMTok);
  });

  it('gives a dated snapshot its alias\'s price, and keeps a snapshot that was priced apart', () => {
    expect(bundledPrice('anthropic', 'claude-sonnet-4-5-20250929')).toBe(BUNDLED_PRICES['anthropic:claude-sonnet-4-5']);
    expect(bundledPrice('anthropic', 'claude-opus-4-20250514')).toBe(BUNDLED_PRICES['anthropic:claude-opus-4']);
    expect(bundledPrice('openai', 'gpt-4.1-mini-2025-04-14')).toBe(BUNDLED_PRICES['openai:gpt-4.1-mini']);
    expect(bundledPrice('google', 'models/gemini-2.5-flash')).toBe(BUNDLED_PRICES['google:gemini-2.5-flash']);
    expect(bundledPrice('openai', 'gpt-4o-2024-05-13')).toEqual({ inputPerMTok: 5, outputPerMTok: 15, maxOutputTokens: 4_096 });
  });

  it('does not price by loose prefix: an unknown id has no price', () => {
    expect(bundledPrice('anthropic', 'claude-opus-5-5')).toBeUndefined();
    expect(bundledPrice('anthropic', 'claude-opus-4-9')).toBeUndefined();
    expect(bundledPrice('openai', 'gpt-4o-audio-preview')).toBeUndefined();
    expect(bundledPrice('ollama', 'llama3.2')).toBeUndefined();
    expect(bundledPrice('mock', 'anything')).toEqual({ inputPerMTok: 0, outputPerMTok: 0 });
  });

  it('prices Opus 4.5 and later at the lower Opus price', () => {
    expect(usd('anthropic', 'claude-opus-4-5', { inputTokens: M, outputTokens: M })).toBeCloseTo(5 + 25, 10);
    expect(usd('anthropic', 'claude-opus-4-1', { inputTokens: M, outputTokens: M })).toBeCloseTo(15 + 75, 10);
  });
});

describe('pricing a usage', () => {
  it('charges cache reads and writes at their prices and only the rest of the input at the input price', () => {
    // Sonnet 4.5: input $3, cache read $0.30, 5-minute cache write $3.75, output $15.
    const cost = usd('anthropic', 'claude-sonnet-4-5', { inputTokens: M, cacheReadTokens: 600_000, cacheWriteTokens: 300_000, outputTokens: 100_000 });
    expect(cost).toBeCloseTo(0.1 * 3 + 0.6 * 0.3 + 0.3 * 3.75 + 0.1 * 15, 10);
    // OpenAI writes its cache for free: a cache write costs what input costs.
    expect(usd('openai', 'gpt-4.1', { inputTokens: M, cacheWriteTokens: M })).toBeCloseTo(2, 10);
    expect(usd('openai', 'gpt-4.1', { inputTokens: M, cacheReadTokens: M })).toBeCloseTo(0.5, 10);
  });

  it('charges reasoning tokens as the output they are part of, once', () => {
    const withReasoning = usd('openai', 'o3', { inputTokens: 0, outputTokens: M, reasoningTokens: 900_000 });
    expect(withReasoning).toBeCloseTo(8, 10);
    expect(withReasoning).toBe(usd('openai', 'o3', { outputTokens: M }));
  });

  it('never charges less than nothing for a provider that reports more cached tokens than input', () => {
    expect(usd('google', 'gemini-2.5-flash', { inputTokens: 100, cacheReadTokens: 1_000_000 })).toBeCloseTo(0.03, 10);
  });

  it('a run with a provider usage is priced with its cache counts (the report uses the bundled table)', async () => {
    const usage: Usage = { inputTokens: 2 * M, outputTokens: 10_000, totalTokens: 2 * M + 10_000, cacheReadTokens: 1_500_000 };
    const inner = createMockModel({ responses: [{ text: 'done' }] });
    // A model that reports as claude-haiku-4-5 and answers with a cached prompt.
    const model: LanguageModel = {
      specificationVersion: 'cairn-model-1',
      provider: 'anthropic',
      modelId: 'claude-haiku-4-5',
      doGenerate: async (request) => ({ ...(await inner.doGenerate(request)), usage }),
    };
    const report = await runHeadless({ model, prompt: 'x', store: createInMemoryAgentRunStore() });
    expect(report.usage).toMatchObject({ inputTokens: 2 * M, cacheReadTokens: 1_500_000 });
    // Haiku 4.5: input $1, cache read $0.10, output $5.
    expect(report.cost).toEqual({ usd: expect.closeTo(0.5 * 1 + 1.5 * 0.1 + 0.01 * 5, 10), complete: true });
  });
});

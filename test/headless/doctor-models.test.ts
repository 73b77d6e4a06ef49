/**
 * The doctor and the run's models: provider models (their keyStatus), Vercel
 * AI SDK models, fallbackModels (each checked as the model is, findings at
 * `fallbackModels[i]`), the options that go with every call, and the spec's
 * example with an id no profile knows.
 */
import { createOpenAI as createAISDKOpenAI } from '@ai-sdk/openai';
import { describe, expect, it } from 'vitest';
import { createAnthropic } from 'cairn/anthropic';
import { doctor, exitCodeFor, type DoctorFinding, type DoctorReport } from 'cairn/headless';
import { createOpenAI } from 'cairn/openai';
import { createOpenAICompatible } from 'cairn/openai-compatible';
import { createMockModel } from 'cairn/testing';

const doGenerate = async () => ({ text: '', toolCalls: [], finishReason: 'stop' as const, usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } });
const fakeModel = (provider: string, modelId: string, extra: Record<string, unknown> = {}) => ({
  specificationVersion: 'cairn-model-1' as const, provider, modelId, doGenerate, ...extra,
});
const keys = { ANTHROPIC_API_KEY: 'sk-ant-test', OPENAI_API_KEY: 'sk-test', GEMINI_API_KEY: 'g-test' };
const codes = (r: DoctorReport) => r.findings.map((f) => f.code);
const brief = (r: DoctorReport) => r.findings.map((f) => [f.severity, f.code, f.path]);
const find = (r: DoctorReport, code: string): DoctorFinding => {
  const f = r.findings.find((x) => x.code === code);
  expect(f, `expected ${code} in ${JSON.stringify(r.findings, null, 1)}`).toBeDefined();
  return f!;
};

describe('doctor: where a model says its key comes from (keyStatus)', () => {
  it("follows the model's keyStatus: present and optional keys are fine, a missing one names its variables", async () => {
    const present = fakeModel('acme', 'rocket-1', { keyStatus: () => ({ present: true, envVars: ['ACME_KEY'] }) });
    expect(codes(await doctor({ model: present, env: {} }))).not.toContain('api-key-missing');
    const optional = fakeModel('acme', 'rocket-1', { keyStatus: () => ({ present: false, envVars: [], required: false }) });
    expect(codes(await doctor({ model: optional, env: {} }))).not.toContain('api-key-missing');
    expect(codes(await doctor({ model: optional, env: {} }))).not.toContain('api-key-unchecked');
    const missing = fakeModel('acme', 'rocket-1', { keyStatus: () => ({ present: false, envVars: ['ACME_KEY', 'ACME_TOKEN'] }) });
    const r = await doctor({ model: missing, env: {} });
    expect(find(r, 'api-key-missing')).toMatchObject({ severity: 'error', path: 'env' });
    expect(find(r, 'api-key-missing').message).toContain('one of ACME_KEY, ACME_TOKEN');
    expect(exitCodeFor(r)).toBe(8);
  });

  it('asks keyStatus about the env it checks, and falls back to the table when keyStatus throws', async () => {
    const seen: unknown[] = [];
    const model = fakeModel('openai', 'gpt-4o', { keyStatus: (env: Record<string, string | undefined>) => (seen.push(env), { present: 'OPENAI_API_KEY' in env, envVars: ['OPENAI_API_KEY'] }) });
    expect(codes(await doctor({ model, env: { OPENAI_API_KEY: 'k' } }))).toEqual([]);
    expect(seen).toEqual([{ OPENAI_API_KEY: 'k' }]);
    const throwing = fakeModel('openai', 'gpt-4o', { keyStatus: () => { throw new Error('boom'); } });
    expect(find(await doctor({ model: throwing, env: {} }), 'api-key-missing').message).toContain('OPENAI_API_KEY');
    expect(codes(await doctor({ model: throwing, env: keys }))).toEqual([]);
  });

  it("reads Cairn's providers: a key passed to the factory counts, a keyless compatible server needs none", async () => {
    expect(codes(await doctor({ model: createOpenAI({ apiKey: 'sk-passed' })('gpt-5'), env: {} }))).toEqual([]);
    expect(find(await doctor({ model: createOpenAI()('gpt-5'), env: {} }), 'api-key-missing').message).toContain('OPENAI_API_KEY');
    const local = createOpenAICompatible({ name: 'ollama', baseURL: 'http://127.0.0.1:11434/v1' })('llama3.2');
    expect(codes(await doctor({ model: local, env: {} }))).toEqual(['unpriced-model', 'model-unknown']);
  });

  it("apiKeyEnv names the model's variable and is checked even when the model has keyStatus", async () => {
    const local = createOpenAICompatible({ name: 'ollama', baseURL: 'http://127.0.0.1:11434/v1', apiKeyEnv: 'OLLAMA_KEY' })('llama3.2');
    const r = await doctor({ model: local, env: {}, apiKeyEnv: 'OLLAMA_KEY' });
    expect(find(r, 'api-key-missing')).toMatchObject({ path: 'apiKeyEnv' });
    expect(codes(await doctor({ model: local, env: { OLLAMA_KEY: 'k' }, apiKeyEnv: 'OLLAMA_KEY' }))).not.toContain('api-key-missing');
  });
});

describe('doctor: Vercel AI SDK models', () => {
  it('takes an AI SDK model as the run does, under its provider and id', async () => {
    const model = createAISDKOpenAI({ apiKey: 'sk-aisdk' }).chat('gpt-4o');
    const r = await doctor({ model, env: keys, temperature: 0.5 });
    expect(r.findings).toEqual([]);
    // Its profile is the provider's: reasoning models refuse temperature there too.
    expect(find(await doctor({ model: createAISDKOpenAI({ apiKey: 'k' }).chat('o3'), env: keys, temperature: 0.5 }), 'sampling-unsupported').path).toBe('temperature');
  });

  it('reports a broken AI SDK-like object as model-invalid', async () => {
    const r = await doctor({ model: { specificationVersion: 'v3', provider: 'openai', modelId: 'gpt-4o', doGenerate }, env: keys });
    expect(find(r, 'model-invalid').message).toMatch(/Vercel AI SDK/);
  });
});

describe('doctor: fallbackModels', () => {
  const primary = fakeModel('anthropic', 'claude-sonnet-4-5');

  it('checks each fallback as the model is checked, each finding at fallbackModels[i]', async () => {
    const r = await doctor({
      model: primary,
      fallbackModels: [
        'gpt-4o',
        fakeModel('openai', 'o3'),
        fakeModel('acme', 'rocket-1', { keyStatus: () => ({ present: false, envVars: ['ACME_KEY'] }) }),
      ],
      temperature: 0.3,
      env: { ANTHROPIC_API_KEY: 'k' }, // no OPENAI_API_KEY
    } as never);
    expect(brief(r)).toEqual([
      ['error', 'model-invalid', 'fallbackModels[0]'],
      ['error', 'api-key-missing', 'fallbackModels[1]'],
      ['error', 'api-key-missing', 'fallbackModels[2]'],
      ['error', 'sampling-unsupported', 'fallbackModels[1]'],
      ['info', 'unpriced-model', 'fallbackModels[2]'],
      ['info', 'model-unknown', 'fallbackModels[2]'],
    ]);
    expect(find(r, 'sampling-unsupported').message).toMatch(/^fallbackModels\[1\]: .*o3.* refuses temperature/);
    expect(r.findings.find((f) => f.path === 'fallbackModels[2]' && f.code === 'api-key-missing')!.message).toContain('ACME_KEY');
  });

  it('reports a list that is not an array, and a fallback that repeats a model', async () => {
    expect(find(await doctor({ model: primary, fallbackModels: primary, env: keys } as never), 'option-invalid').path).toBe('fallbackModels');
    const r = await doctor({ model: primary, fallbackModels: [fakeModel('openai', 'gpt-4o'), fakeModel('anthropic', 'claude-sonnet-4-5')], env: keys });
    expect(find(r, 'fallback-duplicate')).toMatchObject({ severity: 'warning', path: 'fallbackModels[1]' });
    expect(r.ok).toBe(true);
  });

  it('does not apply capabilities (the model\'s own correction) to a fallback', async () => {
    const r = await doctor({ model: fakeModel('acme', 'rocket-1'), apiKeyEnv: 'K', env: { ...keys, K: 'k' }, capabilities: { temperature: null }, temperature: 0.2, fallbackModels: [fakeModel('openai', 'gpt-4.1')] });
    expect(brief(r).filter(([, code]) => code === 'sampling-unsupported')).toEqual([['error', 'sampling-unsupported', 'temperature']]);
  });

  it('calls a price provider once per model, and reports its failure once', async () => {
    const asked: string[] = [];
    await doctor({ model: primary, fallbackModels: [fakeModel('openai', 'gpt-4o')], env: keys, deps: { priceProvider: ({ modelId }) => (asked.push(modelId), 1) } });
    expect(asked).toEqual(['claude-sonnet-4-5', 'gpt-4o']);
    const r = await doctor({ model: primary, fallbackModels: [fakeModel('openai', 'gpt-4o')], env: keys, deps: { priceProvider: () => { throw new Error('down'); } } });
    expect(codes(r).filter((c) => c === 'price-provider-failed')).toHaveLength(1);
  });
});

describe('doctor: the options of every model call', () => {
  const model = createMockModel({ responses: [{ text: 'ok' }] });

  it.each([
    ['maxRetries', -1], ['maxRetries', 1.5], ['maxRetries', '2'], ['modelTimeoutMs', 0], ['modelTimeoutMs', 2.5],
    ['maxOutputTokens', 0], ['maxOutputTokens', 'many'], ['providerOptions', 'x'], ['providerOptions', []],
  ])('reports %s = %j as option-invalid', async (key, value) => {
    const r = await doctor({ model, [key]: value } as never);
    expect(find(r, 'option-invalid').path).toBe(key);
  });

  it('accepts sound values, without an option-unknown', async () => {
    const r = await doctor({ model, maxRetries: 0, modelTimeoutMs: 30_000, maxOutputTokens: 512, providerOptions: { mock: { seed: 1 } } } as never);
    expect(r.findings).toEqual([]);
  });

  it("reports a provider's entry that is not an object, and one no model of the run reads", async () => {
    const claude = fakeModel('anthropic', 'claude-sonnet-4-5');
    const bad = await doctor({ model: claude, env: keys, providerOptions: { anthropic: 1 } } as never);
    expect(find(bad, 'option-invalid').path).toBe('providerOptions.anthropic');
    const r = await doctor({ model: claude, fallbackModels: [fakeModel('openai', 'gpt-4o')], env: keys, providerOptions: { anthropic: {}, openai: {}, opneai: {} } } as never);
    expect(brief(r)).toEqual([['info', 'provider-options-unused', 'providerOptions.opneai']]);
  });
});

describe("doctor: the spec's example (an id no profile knows)", () => {
  it('reports the missing key (exit 8), the missing price, and what no Claude model takes, as warnings', async () => {
    const report = await doctor({
      model: createAnthropic({})('claude-opus-5-5'),
      effort: 'none',
      temperature: 0.2,
      budget: { usd: 2 },
      env: {},
    });
    expect(brief(report)).toEqual([
      ['error', 'api-key-missing', 'env'],
      ['warning', 'unpriced-model', 'budget.usd'],
      ['warning', 'effort-unsupported', 'effort'],
      ['info', 'model-unknown', 'model'],
    ]);
    expect(find(report, 'api-key-missing').message).toContain('ANTHROPIC_API_KEY');
    expect(find(report, 'effort-unsupported').message).toContain('low, medium, high, xhigh, max');
    expect(exitCodeFor(report)).toBe(8);
  });
});

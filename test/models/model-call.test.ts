/**
 * One model call of a run: the options check of model objects, retries with
 * backoff and retry-after, the transport timeout, the circuit breaker, and what
 * a run makes of a model that breaks the spec.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, runAgent, streamAgent, type AgentEvent, type AgentOptions, type LanguageModel,
} from 'cairn/agent';
import { createInMemoryBreakerStore, type ModelRequest, type ModelStreamPart } from 'cairn/models';
import { createMockModel } from 'cairn/testing';

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeAll(() => process.on('unhandledRejection', onUnhandled));
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
  expect(unhandled).toEqual([]);
});

/** A sleep seam that records each wait and returns at once. */
function recordingSleep() {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

const down = (message = 'unavailable') => ({ error: { status: 503, message } });

describe('the options check of a model', () => {
  const bad: Array<[string, unknown]> = [
    ['nothing', undefined],
    ['a string', 'gpt-5'],
    ['an object without the spec', { provider: 'x', modelId: 'y' }],
    ['another spec version', { specificationVersion: 'v1', provider: 'x', modelId: 'y', doGenerate: async () => ({}) }],
    ['a model with an empty id', { specificationVersion: 'cairn-model-1', provider: 'x', modelId: '', doGenerate: async () => ({}) }],
    ['doStream that is not a function', { specificationVersion: 'cairn-model-1', provider: 'x', modelId: 'y', doGenerate: async () => ({}), doStream: 1 }],
    ['a getter that throws', { specificationVersion: 'cairn-model-1', provider: 'x', get modelId(): string { throw new Error('boom'); }, doGenerate: async () => ({}) }],
  ];

  it.each(bad)('refuses %s with invalid_options before anything is written', async (_name, model) => {
    const store = createInMemoryAgentRunStore();
    const result = await runAgent({ model: model as LanguageModel, prompt: 'Hi.', session: { store, runId: 'r', scope: 's' } });
    expect(result.status).toBe('failed');
    if (result.status !== 'failed') return;
    expect(result.error.code).toBe('invalid_options');
    expect(result.error.message).toMatch(/^model is/);
    expect(await store.load('r')).toBeUndefined();
  });

  it('names the bad fallback, and refuses fallbackModels that is not an array', async () => {
    const model = createMockModel({ responses: [{ text: 'x' }] });
    const named = await runAgent({ model, fallbackModels: [model, { nope: true } as never], prompt: 'Hi.' });
    expect(named.status === 'failed' && named.error.message).toMatch(/^fallbackModels\[1\] is not a model/);
    const notArray = await runAgent({ model, fallbackModels: model as never, prompt: 'Hi.' });
    expect(notArray.status === 'failed' && notArray.error.message).toBe('fallbackModels must be an array of models.');
    expect(model.calls).toHaveLength(0);
  });

  it.each([
    ['maxRetries', -1], ['maxRetries', 1.5], ['modelTimeoutMs', 0], ['maxOutputTokens', 'many'], ['providerOptions', { openai: 3 }],
    ['deps', { breakerStore: { get: () => null } }], ['deps', { breaker: { threshold: 0 } }],
  ])('refuses %s = %j', async (key, value) => {
    const model = createMockModel({ responses: [{ text: 'x' }] });
    const result = await runAgent({ model, prompt: 'Hi.', [key]: value } as AgentOptions);
    expect(result.status === 'failed' && result.error.code).toBe('invalid_options');
    expect(model.calls).toHaveLength(0);
  });
});

describe('a model that breaks the spec fails the call, never the process', () => {
  const spec = { specificationVersion: 'cairn-model-1' as const, provider: 'broken', modelId: 'b' };
  const models: Array<[string, LanguageModel]> = [
    ['doGenerate resolving to nothing', { ...spec, doGenerate: async () => undefined as never }],
    ['doGenerate throwing a string', { ...spec, doGenerate: async () => { throw 'nope'; } }],
    ['doGenerate throwing synchronously', { ...spec, doGenerate: () => { throw new Error('sync'); } }],
    ['toolCalls that are not an array', { ...spec, doGenerate: async () => ({ text: '', toolCalls: 'x' }) as never }],
    ['a tool call without an id', { ...spec, doGenerate: async () => ({ text: '', toolCalls: [{ toolName: 't' }], finishReason: 'tool-calls' }) as never }],
    ['doStream returning a number', { ...spec, doGenerate: async () => ({}) as never, doStream: () => 7 as never }],
    ['a stream with no finish part', { ...spec, doGenerate: async () => ({}) as never, async *doStream() { yield { type: 'text-delta', delta: 'hi' } as ModelStreamPart; } }],
    ['a stream part that is null', { ...spec, doGenerate: async () => ({}) as never, async *doStream() { yield null as never; } }],
    ['a stream ending in an error part', { ...spec, doGenerate: async () => ({}) as never, async *doStream() { yield { type: 'error', error: new Error('wire broke') } as ModelStreamPart; } }],
  ];

  it.each(models)('%s', async (_name, model) => {
    const result = await runAgent({ model, prompt: 'Hi.', maxRetries: 0 });
    expect(result.status).toBe('failed');
  });

  it('turns an unknown finish reason into other and missing usage into zeros', async () => {
    const model: LanguageModel = { ...spec, doGenerate: async () => ({ text: 'ok', finishReason: 'weird' }) as never };
    const result = await runAgent({ model, prompt: 'Hi.' });
    expect(result.status).toBe('completed');
    expect(result.usage).toEqual({ inputTokens: 0, outputTokens: 0, totalTokens: 0 });
  });
});

describe('retries of one model call', () => {
  it('retries a 503 up to maxRetries times (default 2) with growing, jittered waits, then answers', async () => {
    const { waits, sleep } = recordingSleep();
    const model = createMockModel({ responses: [down(), down(), { text: 'Back.' }] });
    const result = await runAgent({ model, prompt: 'Hi.', deps: { sleep } });
    expect(result.status === 'completed' && result.output).toBe('Back.');
    expect(model.calls).toHaveLength(3);
    expect(result.steps).toBe(1); // retries are one model step
    expect(waits).toHaveLength(2);
    expect(waits[0]).toBeGreaterThanOrEqual(250);
    expect(waits[0]).toBeLessThanOrEqual(500);
    expect(waits[1]).toBeGreaterThanOrEqual(500);
    expect(waits[1]).toBeLessThanOrEqual(1000);
  });

  it('fails with retry once the retries are spent', async () => {
    const { sleep } = recordingSleep();
    const model = createMockModel({ responses: [down(), down()] });
    const result = await runAgent({ model, prompt: 'Hi.', maxRetries: 1, deps: { sleep } });
    expect(model.calls).toHaveLength(2);
    expect(result.status === 'failed' && result.retry).toEqual({ cause: 'provider-error', phase: 'loop' });
  });

  it('honours retry-after, and does not retry when the provider asks for more than a minute', async () => {
    const { waits, sleep } = recordingSleep();
    const model = createMockModel({ responses: [{ error: { status: 429, retryAfterMs: 1234 } }, { text: 'ok' }] });
    expect((await runAgent({ model, prompt: 'Hi.', deps: { sleep } })).status).toBe('completed');
    expect(waits).toEqual([1234]);

    const patient = createMockModel({ responses: [{ error: { status: 429, retryAfterMs: 120_000 } }, { text: 'never' }] });
    const result = await runAgent({ model: patient, prompt: 'Hi.', deps: { sleep } });
    expect(patient.calls).toHaveLength(1);
    expect(result.status === 'failed' && result.retry?.cause).toBe('rate-limited');
  });

  it('never retries what a retry cannot cure (400, an invalid answer)', async () => {
    const { waits, sleep } = recordingSleep();
    const model = createMockModel({ responses: [{ error: { status: 400, message: 'bad request' } }, { text: 'never' }] });
    const result = await runAgent({ model, prompt: 'Hi.', deps: { sleep } });
    expect(model.calls).toHaveLength(1);
    expect(waits).toEqual([]);
    expect(result.status === 'failed' && result.retry).toBeUndefined();
  });

  it('an abort during the wait stops the run at once', async () => {
    const controller = new AbortController();
    const model = createMockModel({ responses: [down(), { text: 'never' }] });
    const started = Date.now();
    setTimeout(() => controller.abort(), 50);
    // The real wait: 250-500 ms for the first retry; the abort ends it.
    const result = await runAgent({ model, prompt: 'Hi.', abortSignal: controller.signal, maxRetries: 5 });
    expect(result.status === 'stopped' && result.reason).toBe('aborted');
    expect(model.calls).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(250);
  });

  it('modelTimeoutMs bounds each attempt: a hang is a transport timeout, retried, then a transient failure', async () => {
    const { sleep } = recordingSleep();
    const model = createMockModel({ strict: false, responses: [{ text: 'late', delayMs: 10_000 }] });
    const started = Date.now();
    const result = await runAgent({ model, prompt: 'Hi.', modelTimeoutMs: 40, maxRetries: 1, deps: { sleep } });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(model.calls).toHaveLength(2);
    expect(result.status === 'failed' && result.retry).toEqual({ cause: 'timeout', phase: 'loop' });
  });

  it('a stream that broke off after its first text is not retried', async () => {
    const { sleep } = recordingSleep();
    const model = createMockModel({ responses: [{ text: 'abcdefgh12345678', streamError: { afterChunks: 1, error: { status: 502 } } }, { text: 'never' }] });
    const result = await streamAgent({ model, prompt: 'Hi.', deps: { sleep } }).result;
    expect(model.calls).toHaveLength(1);
    expect(result.status === 'failed' && result.retry?.cause).toBeDefined();
  });
});

describe('the circuit breaker', () => {
  it('opens after the threshold of transient failures in a row, fails calls at once while it cools down, and closes on a success', async () => {
    const breakerStore = createInMemoryBreakerStore();
    let now = 10_000;
    const clock = { now: () => now };
    const { sleep } = recordingSleep();
    const deps = { breakerStore, breaker: { threshold: 2, cooldownMs: 5_000 }, clock, sleep };
    const model = createMockModel({ responses: [down(), down(), { text: 'ok' }] });
    const first = await runAgent({ model, prompt: 'Hi.', deps });
    // Two attempts failed and opened it; the third attempt found it open and was not sent.
    expect(model.calls).toHaveLength(2);
    expect(first.status === 'failed' && first.error.code).toBe('breaker_open');
    expect(first.status === 'failed' && first.retry?.cause).toBe('breaker-open');
    expect(breakerStore.states.get('mock:mock-model')).toEqual({ failures: 2, cooldownUntil: 15_000 });

    const blocked = await runAgent({ model, prompt: 'Hi.', deps });
    expect(blocked.status === 'failed' && blocked.error.code).toBe('breaker_open');
    expect(model.calls).toHaveLength(2);

    now = 15_001;
    // The cooldown is over: the next call goes out; its answer closes the breaker.
    const after = await runAgent({ model, prompt: 'Hi.', deps });
    expect(after.status).toBe('completed');
    expect(model.calls).toHaveLength(3);
    expect(breakerStore.states.get('mock:mock-model')).toEqual({ failures: 0 });
  });

  it('a healthy model writes nothing to the breaker store', async () => {
    const writes: string[] = [];
    const breakerStore = { get: () => null, set: (key: string) => void writes.push(key) };
    await runAgent({ model: createMockModel({ responses: [{ text: 'ok' }] }), prompt: 'Hi.', deps: { breakerStore } });
    expect(writes).toEqual([]);
  });

  it('a breaker store that throws on write does not fail the run', async () => {
    const breakerStore = { get: () => ({ failures: 1 }), set: () => { throw new Error('store down'); } };
    const result = await runAgent({ model: createMockModel({ responses: [{ text: 'ok' }] }), prompt: 'Hi.', deps: { breakerStore } });
    expect(result.status).toBe('completed');
  });
});

describe('what a call sends and keeps', () => {
  it('sends maxOutputTokens and providerOptions, keeps cache and reasoning token counts, and reports the model\'s warnings', async () => {
    const seen: ModelRequest[] = [];
    const model: LanguageModel = {
      specificationVersion: 'cairn-model-1', provider: 'p', modelId: 'm',
      doGenerate: async (request) => {
        seen.push(request);
        return {
          text: 'ok', toolCalls: [], finishReason: 'stop',
          usage: { inputTokens: 100, outputTokens: 20, totalTokens: 120, cacheReadTokens: 80, reasoningTokens: 5 },
          warnings: [{ type: 'unsupported-setting', setting: 'topP' }],
        };
      },
    };
    const events: AgentEvent[] = [];
    const stream = streamAgent({ model, prompt: 'Hi.', topP: 0.5, maxOutputTokens: 256, providerOptions: { p: { seed: 7 } } });
    for await (const event of stream.events) events.push(event);
    const result = await stream.result;
    expect(seen[0]!.settings).toEqual({ topP: 0.5, maxOutputTokens: 256 });
    expect(seen[0]!.providerOptions).toEqual({ p: { seed: 7 } });
    expect(result.usage).toEqual({ inputTokens: 100, outputTokens: 20, totalTokens: 120, cacheReadTokens: 80, reasoningTokens: 5 });
    expect(events).toContainEqual(expect.objectContaining({ type: 'warning', setting: 'topP' }));
    expect(result.warnings).toContainEqual(expect.objectContaining({ setting: 'topP' }));
  });

  it('a refusal stops the run with reason refusal', async () => {
    const model = createMockModel({ responses: [{ text: "I can't help with that.", finishReason: 'refusal' }] });
    const result = await runAgent({ model, prompt: 'Hi.' });
    expect(result.status === 'stopped' && result.reason).toBe('refusal');
  });
});

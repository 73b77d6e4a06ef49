/** cairn/anthropic: error answers, malformed bodies, timeouts and API keys, for doGenerate and doStream alike. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { anthropic, createAnthropic } from 'cairn/anthropic';
import { APICallError, MissingAPIKeyError } from '../../src/errors/index.js';
import type { LanguageModel, ModelRequest } from '../../src/models/types.js';
import { CANARY_KEY, wireServerForFile, visibleText, type WireReply } from './wire-server.js';
import { ask, collect, expectRequest, json, modelOf, sse } from './fixtures/anthropic/harness.js';

const server = await wireServerForFile();

type Mode = 'generate' | 'stream';
const MODES: Mode[] = ['generate', 'stream'];

function call(model: LanguageModel, mode: Mode, request: ModelRequest): Promise<unknown> {
  return mode === 'generate' ? model.doGenerate(request) : collect(model.doStream!(request));
}

const bodyFor = (mode: Mode, modelId = 'claude-sonnet-4-5') => ({
  model: modelId, max_tokens: 8192, messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }], ...(mode === 'stream' ? { stream: true } : {}),
});

const statusCases: Array<{
  name: string; reply: WireReply; statusCode: number; isRetryable: boolean; message: string | RegExp; modelId?: string;
  retryAfterMs?: number; requestId?: string;
}> = [
  {
    name: '401 with the key echoed in the body: redacted everywhere',
    reply: {
      status: 401, headers: { 'request-id': 'req_011Auth' },
      json: { type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key ${CANARY_KEY}` } },
    },
    statusCode: 401, isRetryable: false, message: 'anthropic answered 401 Unauthorized: authentication_error: invalid x-api-key [redacted]', requestId: 'req_011Auth',
  },
  {
    name: '404 for an unknown model',
    reply: { ...json('error-404'), status: 404, headers: { 'request-id': 'req_011NotFound' } },
    modelId: 'claude-nonexistent-1',
    statusCode: 404, isRetryable: false, message: 'anthropic answered 404 Not Found: not_found_error: model: claude-nonexistent-1', requestId: 'req_011NotFound',
  },
  {
    name: '429 with retry-after',
    reply: { ...json('error-429'), status: 429, headers: { 'retry-after': '7', 'request-id': 'req_011Rate' } },
    statusCode: 429, isRetryable: true, retryAfterMs: 7000, requestId: 'req_011Rate',
    message: 'anthropic answered 429 Too Many Requests: rate_limit_error: Number of request tokens has exceeded your per-minute rate limit',
  },
  {
    name: '500 api_error',
    reply: { ...json('error-500'), status: 500, headers: { 'request-id': 'req_011Api' } },
    statusCode: 500, isRetryable: true, message: 'anthropic answered 500 Internal Server Error: api_error: Internal server error', requestId: 'req_011Api',
  },
  {
    name: '503 from a proxy, with a body that is not JSON',
    reply: { status: 503, body: 'upstream connect error or disconnect/reset before headers' },
    statusCode: 503, isRetryable: true, message: 'anthropic answered 503 Service Unavailable.',
  },
  {
    name: '529 overloaded',
    reply: { ...json('error-529'), status: 529, headers: { 'request-id': 'req_011Overloaded' } },
    statusCode: 529, isRetryable: true, message: /^anthropic answered 529( [A-Za-z ]+)?: overloaded_error: Overloaded$/, requestId: 'req_011Overloaded',
  },
];

describe('error answers', () => {
  for (const mode of MODES) {
    for (const c of statusCases) {
      it(`${mode}: ${c.name}`, async () => {
        server.reply(c.reply);
        const model = modelOf(server, c.modelId ?? 'claude-sonnet-4-5');
        const error = await call(model, mode, ask('Hi')).catch((e: unknown) => e);
        expectRequest(server.requests[0], bodyFor(mode, c.modelId));
        expect(APICallError.isInstance(error)).toBe(true);
        const apiError = error as APICallError;
        expect(apiError).toMatchObject({
          name: 'APICallError', code: 'api_call_failed', provider: 'anthropic', url: `${server.url}/v1/messages`,
          statusCode: c.statusCode, isRetryable: c.isRetryable, retryAfterMs: c.retryAfterMs, requestId: c.requestId,
        });
        expect(apiError.message).toMatch(c.message);
        expect(apiError.responseBody).toBeTruthy();
        expect(visibleText(error)).not.toContain(CANARY_KEY);
      });
    }
  }
});

describe('malformed answers', () => {
  it('generate: a 200 body that is not JSON is invalid_response, not retryable', async () => {
    server.reply({ body: '{"id": "msg_01", "content": [', headers: { 'request-id': 'req_011Bad' } });
    const error = await modelOf(server).doGenerate(ask('Hi')).catch((e: unknown) => e);
    expectRequest(server.requests[0], bodyFor('generate'));
    expect(error).toMatchObject({ name: 'APICallError', code: 'invalid_response', isRetryable: false, statusCode: 200, requestId: 'req_011Bad' });
    expect(visibleText(error)).not.toContain(CANARY_KEY);
  });

  it('generate: JSON without a content array is invalid_response', async () => {
    server.reply({ json: { id: 'msg_01', type: 'message' } });
    const error = await modelOf(server).doGenerate(ask('Hi')).catch((e: unknown) => e);
    expectRequest(server.requests[0], bodyFor('generate'));
    expect(error).toMatchObject({ name: 'APICallError', code: 'invalid_response', isRetryable: false });
    expect(visibleText(error)).not.toContain(CANARY_KEY);
  });

  it('stream: events that are not JSON are invalid_response', async () => {
    server.reply({ chunks: ['event: message_start\ndata: not json at all\n\n'] });
    const error = await collect(modelOf(server).doStream!(ask('Hi'))).catch((e: unknown) => e);
    expectRequest(server.requests[0], bodyFor('stream'));
    expect(error).toMatchObject({ name: 'APICallError', code: 'invalid_response', isRetryable: false });
    expect(visibleText(error)).not.toContain(CANARY_KEY);
  });
});

describe('timeouts', () => {
  for (const mode of MODES) {
    it(`${mode}: a hang past the transport timeout rejects with the TimeoutError itself`, async () => {
      server.reply({ hang: true });
      const started = Date.now();
      const error = await call(modelOf(server), mode, ask('Hi', { signal: AbortSignal.timeout(200) })).catch((e: unknown) => e);
      expectRequest(server.requests[0], bodyFor(mode));
      expect(error).toBeInstanceOf(DOMException);
      expect((error as DOMException).name).toBe('TimeoutError');
      expect(Date.now() - started).toBeLessThan(5000);
      expect(visibleText(error)).not.toContain(CANARY_KEY);
    });
  }

  it('stream: a timeout while the body streams rejects with the TimeoutError too', async () => {
    server.reply(sse('stream-text'));
    // After the first two events the connection stalls: the body waits until the signal aborts it, as fetch's body does.
    const stalling: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      const reader = response.body!.getReader();
      const signal = init!.signal!;
      let events = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { done, value } = events < 2 ? await reader.read() : { done: true, value: undefined };
          if (done) {
            await new Promise<void>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
            return;
          }
          events += 1;
          controller.enqueue(value);
        },
      });
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const parts: unknown[] = [];
    const error = await (async () => {
      const model = modelOf(server, 'claude-sonnet-4-5', { fetch: stalling });
      for await (const part of model.doStream!(ask('Hi', { signal: AbortSignal.timeout(300) }))) parts.push(part);
    })().catch((e: unknown) => e);
    expectRequest(server.requests[0], bodyFor('stream'));
    expect(parts).toEqual([{ type: 'response-metadata', id: 'msg_01StR34mT3xt', modelId: 'claude-sonnet-4-5-20250929' }]);
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe('TimeoutError');
  });
});

describe('API keys', () => {
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_API_KEY;
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.ANTHROPIC_API_KEY;
    else process.env.ANTHROPIC_API_KEY = saved;
  });

  for (const mode of MODES) {
    it(`${mode}: no key and no ANTHROPIC_API_KEY fails the first call with MissingAPIKeyError, not the factory`, async () => {
      const provider = createAnthropic({ baseURL: `${server.url}/v1` });
      const model = provider('claude-sonnet-4-5');
      const error = await call(model, mode, ask('Hi')).catch((e: unknown) => e);
      expect(MissingAPIKeyError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ code: 'api_key_missing', provider: 'anthropic', envVar: 'ANTHROPIC_API_KEY' });
      expect(server.requests).toHaveLength(0);
    });
  }

  it('keyStatus says whether a key is at hand without calling out', () => {
    type WithKeyStatus = LanguageModel & { keyStatus(env: Record<string, string | undefined>): unknown };
    const withoutKey = createAnthropic({ baseURL: `${server.url}/v1` })('claude-sonnet-4-5') as WithKeyStatus;
    const withKey = createAnthropic({ apiKey: CANARY_KEY })('claude-sonnet-4-5') as WithKeyStatus;
    expect(withoutKey.keyStatus({})).toEqual({ present: false, envVars: ['ANTHROPIC_API_KEY'], required: true });
    expect(withoutKey.keyStatus({ ANTHROPIC_API_KEY: 'sk-ant-from-env' })).toEqual({ present: true, envVars: ['ANTHROPIC_API_KEY'], required: true });
    expect(withKey.keyStatus({})).toMatchObject({ present: true });
    expect(visibleText(withKey.keyStatus({}))).not.toContain(CANARY_KEY);
    expect(server.requests).toHaveLength(0);
  });

  it('the default instance reads ANTHROPIC_API_KEY at the call (and fails before any request without it)', async () => {
    const error = await anthropic('claude-sonnet-4-5').doGenerate(ask('Hi')).catch((e: unknown) => e);
    expect(MissingAPIKeyError.isInstance(error)).toBe(true);
  });

  for (const mode of MODES) {
    it(`${mode}: the key comes from ANTHROPIC_API_KEY when none is passed`, async () => {
      const model = createAnthropic({ baseURL: `${server.url}/v1` })('claude-sonnet-4-5');
      process.env.ANTHROPIC_API_KEY = CANARY_KEY;
      server.reply(mode === 'generate' ? json('text') : sse('stream-text'));
      await call(model, mode, ask('Hi'));
      expectRequest(server.requests[0], bodyFor(mode));
    });
  }
});

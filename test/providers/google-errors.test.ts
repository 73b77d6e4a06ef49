/**
 * cairn/google's failures: Google's error answers, a 429's wait, malformed
 * answers, a stream that ends early, breaks off or carries an error, a hang
 * past the caller's timeout, and the API key (missing, from the environment,
 * never visible).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { createGoogle } from 'cairn/google';
import { APICallError, MissingAPIKeyError } from 'cairn/models';
import { CANARY_KEY, startWireServer, visibleText, wireServerForFile } from './wire-server.js';
import {
  ask, collect, expectSent, failure, fixture, generatePath, modelOn, sse, streamPath, USER_HI,
} from './fixtures/google/harness.js';

const server = await wireServerForFile();

const generate = (modelId?: string) => () => modelOn(server, modelId).doGenerate(ask());
const stream = (modelId?: string) => () => collect(modelOn(server, modelId).doStream!(ask()));
const ways = [
  { name: 'generate', call: generate, path: generatePath, url: (m = 'gemini-2.5-flash') => `${server.url}/models/${m}:generateContent` },
  { name: 'stream', call: stream, path: streamPath, url: (m = 'gemini-2.5-flash') => `${server.url}/models/${m}:streamGenerateContent` },
];

describe.each(ways)('google $name: error answers', ({ call, path, url }) => {
  const answers = [
    { status: 400, file: 'error-400', retryable: false, says: 'INVALID_ARGUMENT: Invalid JSON payload received.' },
    { status: 401, file: 'error-401', retryable: false, says: 'UNAUTHENTICATED: Request had invalid authentication credentials.' },
    { status: 403, file: 'error-403', retryable: false, says: 'PERMISSION_DENIED: Method doesn\'t allow unregistered callers' },
    { status: 500, file: 'error-500', retryable: true, says: 'INTERNAL: An internal error has occurred.' },
    { status: 503, file: 'error-503', retryable: true, says: 'UNAVAILABLE: The model is overloaded.' },
  ];
  it.each(answers)('$status: an APICallError with Google\'s message, retryable as the status says', async ({ status, file, retryable, says }) => {
    server.reply({ status, json: fixture(file), headers: { 'x-goog-request-id': 'req-77' } });
    const error = await failure(call());
    expectSent(server.requests[0], path(), USER_HI);
    expect(error).toBeInstanceOf(APICallError);
    expect(error).toMatchObject({ statusCode: status, isRetryable: retryable, provider: 'google', url: url(), requestId: 'req-77' });
    expect(error.message).toContain(`google answered ${status}`);
    expect(error.message).toContain(says);
  });

  it('404 for a model Google does not know', async () => {
    server.reply({ status: 404, json: fixture('error-404') });
    const error = await failure(call('gemini-9-ultra'));
    expectSent(server.requests[0], path('gemini-9-ultra'), USER_HI);
    expect(error).toMatchObject({ name: 'APICallError', statusCode: 404, isRetryable: false, url: url('gemini-9-ultra') });
    expect(error.message).toContain('NOT_FOUND: models/gemini-9-ultra is not found');
  });

  it('429: the retry-after header\'s wait, else the RetryInfo detail\'s', async () => {
    server.reply({ status: 429, json: fixture('error-429'), headers: { 'retry-after': '7' } }, { status: 429, json: fixture('error-429') });
    const withHeader = await failure(call());
    for (const request of server.requests) expectSent(request, path(), USER_HI);
    expect(withHeader).toMatchObject({ statusCode: 429, isRetryable: true, retryAfterMs: 7000 });
    const withDetail = await failure(call());
    expectSent(server.requests[1], path(), USER_HI);
    expect(withDetail).toMatchObject({ name: 'APICallError', statusCode: 429, isRetryable: true, retryAfterMs: 17000 });
    expect(withDetail.message).toContain('RESOURCE_EXHAUSTED');
  });

  it('a key an error body echoes is redacted from everything the error shows', async () => {
    const body = { error: { code: 400, message: `API key not valid: ${CANARY_KEY}`, status: 'INVALID_ARGUMENT' } };
    server.reply({ status: 400, json: body });
    const error = await failure(call());
    expectSent(server.requests[0], path(), USER_HI);
    expect(error).toMatchObject({ statusCode: 400, isRetryable: false });
    expect(visibleText(error)).toContain('API key not valid');
  });

  it('a hang past the caller\'s timeout rejects with the TimeoutError itself', async () => {
    server.reply({ hang: true });
    const model = modelOn(server);
    const signal = AbortSignal.timeout(200);
    const error = await failure(() => (path === generatePath
      ? model.doGenerate(ask({ signal }))
      : collect(model.doStream!(ask({ signal })))));
    expectSent(server.requests[0], path(), USER_HI);
    expect(error.name).toBe('TimeoutError');
    expect(error).not.toBeInstanceOf(APICallError);
  });

  it('an unreachable server is a retryable APICallError', async () => {
    const closed = await startWireServer();
    const baseURL = closed.url;
    await closed.close();
    const model = createGoogle({ apiKey: CANARY_KEY, baseURL })('gemini-2.5-flash');
    const error = await failure(() => (path === generatePath ? model.doGenerate(ask()) : collect(model.doStream!(ask()))));
    expect(error).toMatchObject({ name: 'APICallError', isRetryable: true });
    expect(error.message).toContain('Could not reach google');
  });
});

describe('google: malformed and broken answers', () => {
  it('generate: a 200 body that is not JSON is invalid_response, not retryable', async () => {
    server.reply({ body: '{"candidates": [' });
    const error = await failure(generate());
    expect(error).toMatchObject({ name: 'APICallError', code: 'invalid_response', isRetryable: false, statusCode: 200 });
  });

  it('stream: an event that is not JSON is invalid_response', async () => {
    server.reply({ sse: ['{"candidates": ['] });
    const error = await failure(stream());
    expect(error).toMatchObject({ name: 'APICallError', code: 'invalid_response', isRetryable: false });
  });

  it('stream: a body that ends without a finish reason is a retryable error saying the stream ended early', async () => {
    server.reply({ sse: sse('stream-text').slice(0, 2) });
    const seen: string[] = [];
    const error = await failure(async () => {
      for await (const part of modelOn(server).doStream!(ask())) seen.push(part.type);
    });
    expect(seen).toEqual(['response-metadata', 'text-delta', 'text-delta']);
    expect(error).toMatchObject({ name: 'APICallError', isRetryable: true });
    expect(error.message).toContain('ended early');
  });

  it('stream: a socket cut mid-way is a retryable APICallError naming google and the endpoint, after the parts that arrived', async () => {
    server.reply({ sse: sse('stream-text'), cutAfter: 1 });
    const seen: string[] = [];
    const error = await failure(async () => {
      for await (const part of modelOn(server).doStream!(ask())) seen.push(part.type);
    });
    expect(seen).toEqual(['response-metadata', 'text-delta']);
    expect(error).toMatchObject({ name: 'APICallError', provider: 'google', isRetryable: true, url: `${server.url}/models/gemini-2.5-flash:streamGenerateContent` });
  });

  it('stream: an error event (503 UNAVAILABLE) is an APICallError with its status, retryable', async () => {
    server.reply({ sse: sse('stream-error-event') });
    const error = await failure(stream());
    expect(error).toMatchObject({ name: 'APICallError', statusCode: 503, isRetryable: true, url: `${server.url}/models/gemini-2.5-flash:streamGenerateContent` });
    expect(error.message).toContain('UNAVAILABLE: The model is overloaded.');
  });
});

describe('google: the API key', () => {
  const ENV = ['GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GENERATIVE_AI_API_KEY'] as const;
  const saved: Record<string, string | undefined> = {};
  beforeEach(() => {
    for (const name of ENV) {
      saved[name] = process.env[name];
      delete process.env[name];
    }
    return () => {
      for (const name of ENV) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    };
  });

  it('missing: creating the model works, the first call throws MissingAPIKeyError and sends nothing', async () => {
    const model = createGoogle({ baseURL: server.url })('gemini-2.5-flash');
    for (const call of [() => model.doGenerate(ask()), () => collect(model.doStream!(ask()))]) {
      const error = await failure(call);
      expect(error).toBeInstanceOf(MissingAPIKeyError);
      expect(error).toMatchObject({ code: 'api_key_missing', provider: 'google' });
      expect(error.message).toContain('GEMINI_API_KEY');
    }
    expect(server.requests).toEqual([]);
  });

  it('from the environment at each call: GEMINI_API_KEY first, then GOOGLE_API_KEY, then GOOGLE_GENERATIVE_AI_API_KEY', async () => {
    const model = createGoogle({ baseURL: server.url })('gemini-2.5-flash');
    const sent: string[] = [];
    for (const [name, value] of [['GOOGLE_GENERATIVE_AI_API_KEY', 'key-third-0001'], ['GOOGLE_API_KEY', 'key-second-002'], ['GEMINI_API_KEY', 'key-first-0003']] as const) {
      process.env[name] = value;
      server.reply({ json: fixture('text') });
      await model.doGenerate(ask());
      sent.push(server.requests.at(-1)!.headers['x-goog-api-key']!);
    }
    expect(sent).toEqual(['key-third-0001', 'key-second-002', 'key-first-0003']);
    expect(server.requests.every((r) => !r.path.includes('key'))).toBe(true);
  });
});

/**
 * Every wire reports a broken answer as docs/models.md says:
 *
 * - a 200 whose body, or any stream event, is not JSON (or a streamed 200
 *   that is no event stream at all) is an APICallError `invalid_response`,
 *   not transient, so a run makes exactly one request and fails without a
 *   `retry`;
 * - a connection cut mid-answer is a retryable APICallError that names the
 *   provider and the endpoint (a network failure), never a bare
 *   `TypeError: terminated`; before the first content a run retries it;
 * - keep-alives (comments, events without data) are not broken answers.
 */
import { describe, expect, it } from 'vitest';
import { runAgent } from 'cairn/agent';
import { readSse, transientCause, type ModelStreamPart } from 'cairn/models';
import { ask, collectUntilError as untilError, rejectionOf as rejection } from './fixtures/openai/harness.js';
import { visibleText, wireServerForFile } from './wire-server.js';
import { fullStream, sseText, WIRE_KEY, WIRES } from './wire-table.js';

const server = await wireServerForFile();

const texts = (parts: ModelStreamPart[]) => parts.flatMap((p) => (p.type === 'text-delta' ? [p.delta] : []));
const noRetries = { sleep: async () => undefined };

describe.each(WIRES)('$name', (wire) => {
  const model = () => wire.make(server.url);
  const broken = (error: unknown, url: string) => {
    expect(error).toMatchObject({ name: 'APICallError', code: 'invalid_response', isRetryable: false, provider: wire.provider, url });
    expect(transientCause(error, false)).toBeNull();
    expect((error as Error).message).not.toMatch(/ended early/);
    expect(visibleText(error)).not.toContain(WIRE_KEY);
  };

  it('a 200 whose body is not JSON is invalid_response, after one request', async () => {
    server.reply({ body: '<html><body>502 Bad Gateway</body></html>' });
    broken(await rejection(model().doGenerate(ask('Hi'))), wire.generateUrl(server.url));
    expect(server.requests).toHaveLength(1);
  });

  it.each([
    ['an HTML page', '<html><body>502 Bad Gateway</body></html>'],
    ['a JSON document', '{"error": "the upstream said no"}'],
  ])('a streamed 200 whose body is %s, not an event stream, is invalid_response', async (_what, body) => {
    server.reply({ body });
    const { parts, error } = await untilError(model().doStream!(ask('Hi')));
    expect(parts).toEqual([]);
    broken(error, wire.streamUrl(server.url));
    expect((error as { responseBody?: string }).responseBody).toContain(body.slice(0, 12));
  });

  it('a first stream event that is not JSON is invalid_response, with nothing yielded', async () => {
    server.reply({ chunks: ['data: {"id": oops\n\n', ...fullStream(wire).map((e) => sseText([e]))] });
    const { parts, error } = await untilError(model().doStream!(ask('Hi')));
    expect(parts).toEqual([]);
    broken(error, wire.streamUrl(server.url));
  });

  it('an event that is not JSON after the text is invalid_response, after the parts before it', async () => {
    server.reply({ sse: [...wire.head, ...wire.text, 'not json {', ...wire.finish] });
    const { parts, error } = await untilError(model().doStream!(ask('Hi')));
    expect(texts(parts)).toEqual(['Hi']);
    broken(error, wire.streamUrl(server.url));
  });

  it('an event that is JSON but not an object is invalid_response', async () => {
    server.reply({ sse: [...wire.head, '[1, 2]', ...wire.text, ...wire.finish] });
    broken((await untilError(model().doStream!(ask('Hi')))).error, wire.streamUrl(server.url));
  });

  it('a run is not retried: one request, failed with invalid_response and no retry', async () => {
    server.handler = () => ({ sse: [...wire.head, 'data that is not JSON', ...wire.text, ...wire.finish] });
    const result = await runAgent({ model: model(), prompt: 'Hi', maxRetries: 2, deps: noRetries });
    expect(result.status).toBe('failed');
    if (result.status !== 'failed') return;
    expect(result.error).toMatchObject({ name: 'APICallError', code: 'invalid_response' });
    expect(result.retry).toBeUndefined();
    expect(server.requests).toHaveLength(1);
  });

  it('comments and events without data are keep-alives, not broken answers', async () => {
    const events = fullStream(wire).map((e) => sseText([e]));
    server.reply({ chunks: [': keep-alive\n\n', events[0]!, 'data:\n\n', ...events.slice(1)] });
    const parts: ModelStreamPart[] = [];
    for await (const part of model().doStream!(ask('Hi'))) parts.push(part);
    expect(texts(parts)).toEqual(['Hi']);
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
  });

  it('a connection cut mid-stream is a retryable APICallError naming the provider and the endpoint', async () => {
    server.reply({ sse: fullStream(wire), cutAfter: wire.head.length + wire.text.length });
    const { parts, error } = await untilError(model().doStream!(ask('Hi')));
    expect(texts(parts)).toEqual(['Hi']);
    const url = wire.streamUrl(server.url);
    expect(error).toMatchObject({ name: 'APICallError', code: 'api_call_failed', isRetryable: true, provider: wire.provider, url, statusCode: undefined });
    expect((error as Error).message).toContain(wire.provider);
    expect((error as Error).message).toContain(url);
    expect((error as Error).message).toMatch(/broke off/);
    // A transport failure: the cause keeps the socket's code.
    expect((error as { cause?: { code?: string } }).cause?.code).toBe('UND_ERR_SOCKET');
    expect(transientCause(error, false)).toBe('network');
    expect(visibleText(error)).not.toContain(WIRE_KEY);
    expect(server.requests).toHaveLength(1);
  });

  it('a JSON body cut mid-way is the same retryable APICallError', async () => {
    server.reply({ json: wire.answer, cutBodyAt: 12 });
    const error = await rejection(model().doGenerate(ask('Hi')));
    expect(error).toMatchObject({ name: 'APICallError', isRetryable: true, provider: wire.provider, url: wire.generateUrl(server.url) });
    expect(transientCause(error, false)).toBe('network');
  });

  it('a run retries a cut before the first content, and the second answer completes it', async () => {
    server.reply({ sse: fullStream(wire), cutAfter: wire.head.length }, { sse: fullStream(wire) });
    const result = await runAgent({ model: model(), prompt: 'Hi', maxRetries: 1, deps: noRetries });
    expect(result.status).toBe('completed');
    if (result.status === 'completed') expect(result.text).toBe('Hi');
    expect(server.requests).toHaveLength(2);
  });
});

describe('readSse for an adapter of your own', () => {
  // One event, then the read fails as undici's does when the socket closes.
  const breaking = () => {
    let pulls = 0;
    return new Response(new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulls++ === 0) controller.enqueue(new TextEncoder().encode('data: {"a": 1}\n\n'));
        else controller.error(Object.assign(new TypeError('terminated'), { cause: { code: 'UND_ERR_SOCKET', message: 'other side closed' } }));
      },
    }, { highWaterMark: 0 }));
  };
  const read = async (events: AsyncIterable<unknown>) => {
    const seen: unknown[] = [];
    try {
      for await (const event of events) seen.push(event);
    } catch (error) {
      return { seen, error };
    }
    return { seen, error: undefined };
  };

  it('given the provider and endpoint, a body that breaks is a network APICallError naming them', async () => {
    const { seen, error } = await read(readSse(breaking(), undefined, { provider: 'echo', url: 'https://echo.example/stream?x=1' }));
    expect(seen).toEqual([{ event: undefined, data: '{"a": 1}' }]);
    expect(error).toMatchObject({ name: 'APICallError', provider: 'echo', url: 'https://echo.example/stream', isRetryable: true });
    expect(transientCause(error, false)).toBe('network');
  });

  it('without them, the read error goes through as it is', async () => {
    const { error } = await read(readSse(breaking()));
    expect(error).toBeInstanceOf(TypeError);
  });

  it('given them, a body with no event but other text is invalid_response', async () => {
    const { error } = await read(readSse(new Response('upstream says no\n'), undefined, { provider: 'echo', url: 'https://echo.example/stream' }));
    expect(error).toMatchObject({ name: 'APICallError', code: 'invalid_response', responseBody: 'upstream says no\n' });
  });
});

/**
 * No call hangs forever on a silent server. Every wire has finite transport
 * limits, overridable per provider (`timeouts: { firstByteMs, stallMs }`):
 * a server that accepts and never answers, sends headers only, or stalls
 * after one chunk ends the attempt with an APICallError `transport_timeout`
 * (transient cause `timeout`), which a run retries like a 5xx. The caller's
 * abort still wins, `modelTimeoutMs` keeps its meaning, and no timer is left
 * behind. The limits here are small, set through the option; the defaults
 * are checked on a fake clock.
 */
import { afterEach, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { createInMemoryAgentRunStore, runAgent } from 'cairn/agent';
import { exitCodeFor, runHeadless } from 'cairn/headless';
import { DEFAULT_TRANSPORT_TIMEOUTS, transientCause, type ModelStreamPart } from 'cairn/models';
import { InvalidOptionsError } from 'cairn/policy';
import { ask, collectUntilError as untilError, rejectionOf as rejection } from './fixtures/openai/harness.js';
import { visibleText, wireServerForFile } from './wire-server.js';
import { fullStream, sseText, WIRE_KEY, WIRES, type WireCase } from './wire-table.js';

const server = await wireServerForFile();
beforeAll(async () => {
  // The first fetch of a process loads the HTTP client, which on a loaded machine can outlast a short limit.
  server.reply({ json: {} });
  await (await fetch(server.url)).text();
});
afterEach(() => {
  vi.useRealTimers();
});

// Small enough to keep the file quick, large enough that on a loaded machine a
// request reaches the server, and a live server is not taken for a silent one.
const timeouts = { firstByteMs: 400, stallMs: 200 };
const noWaits = { sleep: async () => undefined };

const drain = async (parts: AsyncIterable<ModelStreamPart>) => {
  for await (const _ of parts) void _;
};
const texts = (parts: ModelStreamPart[]) => parts.flatMap((p) => (p.type === 'text-delta' ? [p.delta] : []));

/**
 * Counts the timers the transport (src/providers/utils/transport.ts) set and
 * that neither fired nor were cleared yet. Other timers (the server's, the
 * HTTP client's own) are not counted: they come and go on their own.
 */
function transportTimers(): { pending: () => number; restore: () => void } {
  const live = new Set<unknown>();
  const realSet = globalThis.setTimeout;
  const realClear = globalThis.clearTimeout;
  const set = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number, ...args: unknown[]) => {
    const ours = /providers[\\/]utils[\\/]transport/.test(new Error().stack ?? '');
    const handle: unknown = realSet(() => {
      live.delete(handle);
      fn(...(args as []));
    }, ms);
    if (ours) live.add(handle);
    return handle;
  }) as typeof setTimeout);
  const clear = vi.spyOn(globalThis, 'clearTimeout').mockImplementation(((handle?: Parameters<typeof clearTimeout>[0]) => {
    live.delete(handle);
    realClear(handle);
  }) as typeof clearTimeout);
  return { pending: () => live.size, restore: () => { set.mockRestore(); clear.mockRestore(); } };
}

function timedOut(wire: WireCase, error: unknown, url: string, limit: 'firstByteMs' | 'stallMs'): void {
  expect(error).toMatchObject({
    name: 'APICallError', code: 'transport_timeout', isRetryable: true, provider: wire.provider, url, statusCode: undefined,
  });
  expect((error as Error).message).toContain(`timeouts.${limit}`);
  expect((error as Error).message).toContain(url);
  expect(transientCause(error, false)).toBe('timeout');
  expect(visibleText(error)).not.toContain(WIRE_KEY);
}

describe.each(WIRES)('$name', (wire) => {
  const model = () => wire.make(server.url, { timeouts });

  it('a server that accepts and never answers ends each call with transport_timeout (first byte)', async () => {
    server.handler = () => ({ hang: true });
    timedOut(wire, await rejection(model().doGenerate(ask('Hi'))), wire.generateUrl(server.url), 'firstByteMs');
    timedOut(wire, (await untilError(model().doStream!(ask('Hi')))).error, wire.streamUrl(server.url), 'firstByteMs');
    expect(server.requests).toHaveLength(2);
  });

  it('a server that sends headers only ends each call with transport_timeout (stall)', async () => {
    server.handler = () => ({ headersOnly: true });
    timedOut(wire, await rejection(model().doGenerate(ask('Hi'))), wire.generateUrl(server.url), 'stallMs');
    const { parts, error } = await untilError(model().doStream!(ask('Hi')));
    expect(parts).toEqual([]);
    timedOut(wire, error, wire.streamUrl(server.url), 'stallMs');
    expect(server.requests).toHaveLength(2);
  });

  it('a stream that stalls after its first content yields that content, then transport_timeout', async () => {
    server.reply({ sse: fullStream(wire), stallAfter: wire.head.length + wire.text.length });
    const { parts, error } = await untilError(model().doStream!(ask('Hi')));
    expect(texts(parts)).toEqual(['Hi']);
    timedOut(wire, error, wire.streamUrl(server.url), 'stallMs');
    expect(server.requests).toHaveLength(1);
  });

  it('a run retries a silent server, and the next answer completes it', async () => {
    server.reply({ hang: true }, { sse: fullStream(wire) });
    const result = await runAgent({ model: model(), prompt: 'Hi', maxRetries: 1, deps: noWaits });
    expect(result.status).toBe('completed');
    if (result.status === 'completed') expect(result.text).toBe('Hi');
    expect(server.requests).toHaveLength(2);
  });

  it('a run whose every attempt meets silence fails with transport_timeout, transient (cause timeout)', async () => {
    server.handler = () => ({ sse: fullStream(wire), stallAfter: wire.head.length });
    const result = await runAgent({ model: model(), prompt: 'Hi', maxRetries: 2, deps: noWaits });
    expect(result.status).toBe('failed');
    if (result.status !== 'failed') return;
    expect(result.error).toMatchObject({ name: 'APICallError', code: 'transport_timeout' });
    expect(result.retry).toMatchObject({ cause: 'timeout' });
    expect(server.requests).toHaveLength(3);
  });

  it('a headless run against a silent server ends with outcome limit (exit 6), resumable with retryFailed', async () => {
    server.handler = () => ({ headersOnly: true });
    const report = await runHeadless({ model: model(), prompt: 'Hi', store: createInMemoryAgentRunStore(), maxRetries: 0 });
    expect(report.outcome).toBe('limit');
    expect(exitCodeFor(report)).toBe(6);
    expect(report.retry).toMatchObject({ resumeWith: 'retryFailed' });
    expect(server.requests).toHaveLength(1);
  });

  it("the caller's abort still ends the call with its own reason, before the headers and mid-stream", async () => {
    const long = wire.make(server.url, { timeouts: { firstByteMs: 60_000, stallMs: 60_000 } });
    server.reply({ hang: true }, { sse: fullStream(wire), stallAfter: wire.head.length + wire.text.length });
    const reason = new Error('stopped by the caller');
    const before = new AbortController();
    const waiting = rejection(long.doGenerate(ask('Hi', { signal: before.signal })));
    while (server.requests.length < 1) await new Promise((resolve) => setImmediate(resolve));
    before.abort(reason);
    expect(await waiting).toBe(reason);

    const during = new AbortController();
    const parts: ModelStreamPart[] = [];
    const streaming = rejection((async () => {
      for await (const part of long.doStream!(ask('Hi', { signal: during.signal }))) {
        parts.push(part);
        if (part.type === 'text-delta') during.abort(reason);
      }
    })());
    expect(await streaming).toBe(reason);
    expect(texts(parts)).toEqual(['Hi']);
  });

  it('leaves no timer behind: after a whole answer, a stream, one stopped early, a timeout and an abort', async () => {
    const timers = transportTimers();
    onTestFinished(timers.restore);
    server.reply({ json: wire.answer });
    expect((await model().doGenerate(ask('Hi'))).text).toBe('Hi');
    expect(timers.pending()).toBe(0);
    server.reply({ body: sseText(fullStream(wire)) });
    await drain(model().doStream!(ask('Hi')));
    expect(timers.pending()).toBe(0);
    // A consumer that stops reading after the first text, while the server has more to say.
    server.reply({ sse: fullStream(wire), stallAfter: wire.head.length + wire.text.length });
    for await (const part of model().doStream!(ask('Hi'))) if (part.type === 'text-delta') break;
    expect(timers.pending()).toBe(0);

    server.reply({ headersOnly: true });
    await rejection(model().doGenerate(ask('Hi')));
    expect(timers.pending()).toBe(0);

    server.reply({ hang: true });
    const abort = new AbortController();
    const long = wire.make(server.url, { timeouts: { firstByteMs: 60_000, stallMs: 60_000 } });
    const waiting = rejection(long.doGenerate(ask('Hi', { signal: abort.signal })));
    while (server.requests.length < 5) await new Promise((resolve) => setImmediate(resolve));
    expect(timers.pending()).toBe(1);
    abort.abort(new Error('stop'));
    await waiting;
    expect(timers.pending()).toBe(0);
  });

  it.each([
    ['zero', { firstByteMs: 0 }],
    ['a fraction', { stallMs: 1.5 }],
    ['past what a timer takes', { stallMs: 2 ** 31 }],
    ['a string', { firstByteMs: '100' }],
    ['not an object', 5000],
  ])('refuses timeouts that are %s at creation', (_what, value) => {
    expect(() => wire.make(server.url, { timeouts: value as never })).toThrow(InvalidOptionsError);
    expect(server.requests).toHaveLength(0);
  });
});

describe('the defaults', () => {
  it('are 10 minutes to the first byte and 5 minutes of silence', () => {
    expect(DEFAULT_TRANSPORT_TIMEOUTS).toEqual({ firstByteMs: 600_000, stallMs: 300_000 });
  });

  it.each(WIRES)('$name: a fetch that never answers fails at 10 minutes, a body that never comes at 5', async (wire) => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const never = (() => new Promise<Response>(() => undefined)) as typeof fetch;
    const silent = (async () => new Response(new ReadableStream({ start: () => undefined }))) as typeof fetch;

    let settled: unknown = 'pending';
    void wire.make('http://127.0.0.1:9', { fetch: never }).doGenerate(ask('Hi')).catch((error: unknown) => { settled = error; });
    await vi.advanceTimersByTimeAsync(599_999);
    expect(settled).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(settled).toMatchObject({ code: 'transport_timeout' });
    expect((settled as Error).message).toContain('600000 ms');

    settled = 'pending';
    void wire.make('http://127.0.0.1:9', { fetch: silent }).doGenerate(ask('Hi')).catch((error: unknown) => { settled = error; });
    await vi.advanceTimersByTimeAsync(299_999);
    expect(settled).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(settled).toMatchObject({ code: 'transport_timeout' });
    expect((settled as Error).message).toContain('300000 ms');
  });
});

describe('modelTimeoutMs', () => {
  it('keeps its meaning: it aborts the attempt with a TimeoutError, under the provider limits', async () => {
    const wire = WIRES[0]!;
    server.handler = () => ({ hang: true });
    const result = await runAgent({ model: wire.make(server.url), prompt: 'Hi', maxRetries: 1, modelTimeoutMs: 80, deps: noWaits });
    expect(result.status).toBe('failed');
    if (result.status !== 'failed') return;
    expect(result.error.name).toBe('TimeoutError');
    expect(result.error.code).not.toBe('transport_timeout');
    expect(result.retry).toMatchObject({ cause: 'timeout' });
    expect(server.requests).toHaveLength(2);
  });
});

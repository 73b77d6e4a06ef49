import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// The barrel that `cairn/testing` maps to: Vite does not resolve a package's imports of itself by name.
import { createMockModel } from 'cairn/testing';
import { CairnError, ModelCallError } from '../../src/errors/index.js';
import type { ModelRequest, ModelStreamPart } from '../../src/models/types.js';

const ask = (content: string, extra: Partial<ModelRequest> = {}): ModelRequest => ({
  messages: [{ role: 'user', content }],
  tools: [],
  toolChoice: 'auto',
  ...extra,
});

async function collect(stream: AsyncIterable<ModelStreamPart>): Promise<ModelStreamPart[]> {
  const parts: ModelStreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

/** Collects parts until the stream throws; returns both. */
async function collectUntilError(stream: AsyncIterable<ModelStreamPart>) {
  const parts: ModelStreamPart[] = [];
  try {
    for await (const part of stream) parts.push(part);
  } catch (error) {
    return { parts, error };
  }
  return { parts, error: undefined };
}

describe('createMockModel: identity and defaults', () => {
  it('implements the model spec with provider "mock"', () => {
    const model = createMockModel({ responses: [] });
    expect(model.specificationVersion).toBe('cairn-model-1');
    expect(model.provider).toBe('mock');
    expect(model.modelId).toBe('mock-model');
    expect(createMockModel({ responses: [], modelId: 'scripted-1' }).modelId).toBe('scripted-1');
  });

  it('answers a text turn with finishReason "stop"', async () => {
    const model = createMockModel({ responses: [{ text: 'Hello.' }] });
    const response = await model.doGenerate(ask('hi'));
    expect(response).toMatchObject({ text: 'Hello.', toolCalls: [], finishReason: 'stop' });
  });

  it('treats an empty turn as empty text', async () => {
    const model = createMockModel({ responses: [{}] });
    expect(await model.doGenerate(ask('hi'))).toMatchObject({ text: '', toolCalls: [], finishReason: 'stop' });
  });

  it('defaults finishReason to "tool-calls" with tool calls, and args to {}', async () => {
    const model = createMockModel({ responses: [{ text: 'Looking.', toolCalls: [{ toolName: 'now' }] }] });
    const response = await model.doGenerate(ask('time?'));
    expect(response.finishReason).toBe('tool-calls');
    expect(response.toolCalls).toEqual([{ toolCallId: 'tool_0', toolName: 'now', args: {} }]);
  });

  it('keeps a scripted finishReason', async () => {
    const model = createMockModel({ responses: [{ text: 'cut', finishReason: 'length' }] });
    expect((await model.doGenerate(ask('x'))).finishReason).toBe('length');
  });
});

describe('createMockModel: the script', () => {
  it('strict: a call after the script rejects with mock_model_unexpected_call naming the call', async () => {
    const model = createMockModel({ responses: [{ text: 'one' }] });
    await model.doGenerate(ask('a'));
    const error = await model.doGenerate(ask('b')).catch((e: unknown) => e);
    expect(CairnError.isInstance(error)).toBe(true);
    expect((error as CairnError).code).toBe('mock_model_unexpected_call');
    expect((error as CairnError).message).toContain('#2');
    expect((error as CairnError).fault).toBe('user');
  });

  it('strict: an unexpected doStream call fails when iterated', async () => {
    const model = createMockModel({ responses: [] });
    const { parts, error } = await collectUntilError(model.doStream(ask('a')));
    expect(parts).toEqual([]);
    expect((error as CairnError).code).toBe('mock_model_unexpected_call');
    expect((error as CairnError).message).toContain('#1');
  });

  it('non-strict: repeats the last response', async () => {
    const model = createMockModel({ strict: false, responses: [{ text: 'first' }, { text: 'again' }] });
    const texts = [];
    for (let i = 0; i < 4; i++) texts.push((await model.doGenerate(ask(String(i)))).text);
    expect(texts).toEqual(['first', 'again', 'again', 'again']);
    expect(model.remaining()).toBe(0);
  });

  it('non-strict with no response is refused at creation', () => {
    expect(() => createMockModel({ strict: false, responses: [] })).toThrow(/at least one response/);
  });

  it('shares one cursor across calls and methods, as a run and its resume would', async () => {
    const model = createMockModel({ responses: [{ text: 'a' }, { text: 'b' }, { text: 'c' }] });
    expect((await model.doGenerate(ask('1'))).text).toBe('a');
    const streamed = await collect(model.doStream(ask('2')));
    expect(streamed[0]).toEqual({ type: 'text-delta', delta: 'b' });
    // A second consumer holding the same object (the resume) continues the script.
    const resumed = model;
    expect((await resumed.doGenerate(ask('3'))).text).toBe('c');
  });

  it('claims responses in call order, even when streams are iterated later', async () => {
    const model = createMockModel({ responses: [{ text: 'first' }, { text: 'second' }] });
    const streamA = model.doStream(ask('a'));
    const generated = await model.doGenerate(ask('b'));
    expect(generated.text).toBe('second');
    expect((await collect(streamA))[0]).toEqual({ type: 'text-delta', delta: 'first' });
  });

  it('remaining() counts down and assertAllUsed() lists the unused responses', async () => {
    const model = createMockModel({
      responses: [{ text: 'used' }, { toolCalls: [{ toolName: 'search' }] }, () => ({ text: 'x' })],
    });
    expect(model.remaining()).toBe(3);
    await model.doGenerate(ask('a'));
    expect(model.remaining()).toBe(2);
    let error: unknown;
    try {
      model.assertAllUsed();
    } catch (e) {
      error = e;
    }
    expect(CairnError.isInstance(error)).toBe(true);
    expect((error as CairnError).code).toBe('invalid_options');
    expect((error as CairnError).message).toContain('2 scripted response(s)');
    expect((error as CairnError).message).toContain('#2 (tool calls search)');
    expect((error as CairnError).message).toContain('#3 (computed from the request)');
    await model.doGenerate(ask('b'));
    await model.doGenerate(ask('c'));
    expect(() => model.assertAllUsed()).not.toThrow();
  });

  it('computes a response from the request', async () => {
    const model = createMockModel({
      responses: [
        (request) => ({ text: `You said: ${request.messages.at(-1)?.content as string}` }),
        async (request) => ({ toolCalls: [{ toolName: 'echo', args: { n: request.messages.length } }] }),
      ],
    });
    expect((await model.doGenerate(ask('hello'))).text).toBe('You said: hello');
    const second = await model.doGenerate(ask('x'));
    expect(second.toolCalls[0]?.args).toEqual({ n: 1 });
  });

  it('checks a computed response when it is called', async () => {
    const model = createMockModel({ responses: [() => ({ toolCalls: [{ toolName: '' }] })] });
    await expect(model.doGenerate(ask('a'))).rejects.toMatchObject({ code: 'invalid_options' });
  });

  it('checks written responses at creation', () => {
    expect(() => createMockModel({ responses: [{ text: 'abc', chunks: ['ab', 'x'] }] })).toThrow(/#1.*join/);
    expect(() => createMockModel({ responses: [{}, { toolCalls: [{ toolName: '' }] }] })).toThrow(/#2.*toolName/);
    expect(() => createMockModel({ responses: [{ delayMs: -1 }] })).toThrow(/delayMs/);
    expect(() => createMockModel({ responses: [{ streamError: { afterChunks: 1.5, error: 'x' } }] })).toThrow(/afterChunks/);
    expect(() => createMockModel({ responses: [null as never] })).toThrow(/object or a function/);
  });

  it('refuses a field a turn does not take, naming it: a typo fails where it is written', () => {
    expect(() => createMockModel({ responses: [{ text: 'ok' }, { toolcalls: [{ toolName: 'x' }] } as never] }))
      .toThrow(/response #2 has an unknown field `toolcalls`/);
    expect(() => createMockModel({ responses: [{ txt: 'a', finish: 'stop' } as never] })).toThrow(/unknown fields `txt`, `finish`/);
    // The same check for a computed turn, when it is called.
    const model = createMockModel({ responses: [() => ({ delay: 5 }) as never] });
    return expect(model.doGenerate(ask('a'))).rejects.toThrow(/unknown field `delay`/);
  });
});

describe('createMockModel: tool call ids', () => {
  it('numbers calls within the turn, so ids recur across turns', async () => {
    const turn = { toolCalls: [{ toolName: 'a' }, { toolName: 'b' }] };
    const model = createMockModel({ responses: [turn, turn] });
    const ids1 = (await model.doGenerate(ask('1'))).toolCalls.map((c) => c.toolCallId);
    const ids2 = (await model.doGenerate(ask('2'))).toolCalls.map((c) => c.toolCallId);
    expect(ids1).toEqual(['tool_0', 'tool_1']);
    expect(ids2).toEqual(['tool_0', 'tool_1']);
  });

  it('keeps scripted ids and uses generateToolCallId for the rest', async () => {
    const model = createMockModel({
      generateToolCallId: (step, index) => `call_${step}_${index}`,
      responses: [{ text: 'x' }, { toolCalls: [{ toolName: 'a', toolCallId: 'fixed' }, { toolName: 'b' }] }],
    });
    await model.doGenerate(ask('1'));
    const ids = (await model.doGenerate(ask('2'))).toolCalls.map((c) => c.toolCallId);
    expect(ids).toEqual(['fixed', 'call_1_1']);
  });

  it('hands out copies of args, so a consumer cannot change the script', async () => {
    const args = { list: [1, 2] };
    const model = createMockModel({ strict: false, responses: [{ toolCalls: [{ toolName: 'a', args }] }] });
    const first = await model.doGenerate(ask('1'));
    (first.toolCalls[0]?.args as { list: number[] }).list.push(3);
    expect((await model.doGenerate(ask('2'))).toolCalls[0]?.args).toEqual({ list: [1, 2] });
  });
});

describe('createMockModel: usage', () => {
  it('estimates usage at four characters a token', async () => {
    const model = createMockModel({ responses: [{ text: 'abcdefghij', toolCalls: [{ toolName: 't', args: { q: 1 } }] }] });
    const request = ask('hello');
    const response = await model.doGenerate(request);
    const inputChars = JSON.stringify(request.messages[0]).length; // 33
    const outputChars = 'abcdefghij'.length + JSON.stringify({ toolName: 't', args: { q: 1 } }).length;
    expect(response.usage).toEqual({
      inputTokens: Math.ceil(inputChars / 4),
      outputTokens: Math.ceil(outputChars / 4),
      totalTokens: Math.ceil(inputChars / 4) + Math.ceil(outputChars / 4),
    });
    expect(response.usage.inputTokens).toBe(9);
  });

  it('lets the script override part of the usage; the total follows', async () => {
    const model = createMockModel({
      responses: [{ text: 'abcd', usage: { inputTokens: 100 } }, { usage: { inputTokens: 1, outputTokens: 2, totalTokens: 10 } }],
    });
    expect((await model.doGenerate(ask('x'))).usage).toEqual({ inputTokens: 100, outputTokens: 1, totalTokens: 101 });
    expect((await model.doGenerate(ask('x'))).usage).toEqual({ inputTokens: 1, outputTokens: 2, totalTokens: 10 });
  });
});

describe('createMockModel: errors', () => {
  it.each([408, 409, 429, 500, 503, 529])('status %i is a retryable ModelCallError', async (status) => {
    const model = createMockModel({ responses: [{ error: { status, message: 'busy' } }] });
    const error = await model.doGenerate(ask('x')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error).toMatchObject({ statusCode: status, isRetryable: true, message: 'busy', code: 'model_call_failed' });
  });

  it.each([400, 401, 403, 404, 422])('status %i is not retryable', async (status) => {
    const model = createMockModel({ responses: [{ error: { status } }] });
    const error = await model.doGenerate(ask('x')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error).toMatchObject({ statusCode: status, isRetryable: false });
    expect((error as Error).message).toContain(String(status));
  });

  it('throws an Error instance as it is', async () => {
    const boom = new TypeError('socket closed');
    const model = createMockModel({ responses: [{ error: boom }] });
    await expect(model.doGenerate(ask('x'))).rejects.toBe(boom);
  });

  it('an error turn uses up its response, and a stream fails before any part', async () => {
    const model = createMockModel({ responses: [{ error: { status: 500 } }, { text: 'recovered' }] });
    const { parts, error } = await collectUntilError(model.doStream(ask('x')));
    expect(parts).toEqual([]);
    expect(error).toMatchObject({ statusCode: 500, isRetryable: true });
    expect((await model.doGenerate(ask('again'))).text).toBe('recovered');
  });

  it('a repeated (non-strict) status error is a fresh error each time', async () => {
    const model = createMockModel({ strict: false, responses: [{ error: { status: 503 } }] });
    const a = await model.doGenerate(ask('1')).catch((e: unknown) => e);
    const b = await model.doGenerate(ask('2')).catch((e: unknown) => e);
    expect(a).toBeInstanceOf(ModelCallError);
    expect(a).not.toBe(b);
  });
});

describe('createMockModel: delay and abort', () => {
  it('waits delayMs before answering', async () => {
    const model = createMockModel({ responses: [{ text: 'late', delayMs: 40 }] });
    const started = Date.now();
    expect((await model.doGenerate(ask('x'))).text).toBe('late');
    expect(Date.now() - started).toBeGreaterThanOrEqual(35);
  });

  it('rejects with the signal reason when aborted during the delay', async () => {
    const model = createMockModel({ responses: [{ text: 'never', delayMs: 10_000 }] });
    const controller = new AbortController();
    const reason = new Error('user cancelled');
    const pending = model.doGenerate(ask('x', { signal: controller.signal }));
    setTimeout(() => controller.abort(reason), 10);
    const started = Date.now();
    await expect(pending).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('rejects with an AbortError for a plain abort()', async () => {
    const model = createMockModel({ responses: [{ text: 'never', delayMs: 10_000 }] });
    const controller = new AbortController();
    const pending = collectUntilError(model.doStream(ask('x', { signal: controller.signal })));
    controller.abort();
    const { parts, error } = await pending;
    expect(parts).toEqual([]);
    expect((error as Error).name).toBe('AbortError');
  });

  it('rejects at once on an already-aborted signal, using up the response', async () => {
    const model = createMockModel({ responses: [{ text: 'a' }, { text: 'b' }] });
    await expect(model.doGenerate(ask('x', { signal: AbortSignal.abort() }))).rejects.toMatchObject({ name: 'AbortError' });
    expect(model.remaining()).toBe(1);
  });

  it('stops a stream between parts when aborted', async () => {
    const model = createMockModel({ responses: [{ chunks: ['a', 'b', 'c'] }] });
    const controller = new AbortController();
    const parts: ModelStreamPart[] = [];
    const error = await (async () => {
      for await (const part of model.doStream(ask('x', { signal: controller.signal }))) {
        parts.push(part);
        controller.abort();
      }
    })().catch((e: unknown) => e);
    expect(parts).toEqual([{ type: 'text-delta', delta: 'a' }]);
    expect((error as Error).name).toBe('AbortError');
  });
});

describe('createMockModel: streaming', () => {
  it('yields text deltas, tool calls, then finish', async () => {
    const model = createMockModel({
      responses: [{ text: 'Let me check.', toolCalls: [{ toolName: 'look', args: { at: 'x' } }], usage: { inputTokens: 3, outputTokens: 4 } }],
    });
    expect(await collect(model.doStream(ask('x')))).toEqual([
      { type: 'text-delta', delta: 'Let me c' },
      { type: 'text-delta', delta: 'heck.' },
      { type: 'tool-call', toolCall: { toolCallId: 'tool_0', toolName: 'look', args: { at: 'x' } } },
      { type: 'finish', finishReason: 'tool-calls', usage: { inputTokens: 3, outputTokens: 4, totalTokens: 7 } },
    ]);
  });

  it('sends short text as one part and empty text as none', async () => {
    const model = createMockModel({ responses: [{ text: 'Short.' }, { toolCalls: [{ toolName: 'a' }] }] });
    const short = await collect(model.doStream(ask('x')));
    expect(short.filter((p) => p.type === 'text-delta')).toEqual([{ type: 'text-delta', delta: 'Short.' }]);
    const empty = await collect(model.doStream(ask('x')));
    expect(empty.map((p) => p.type)).toEqual(['tool-call', 'finish']);
  });

  it('never splits an emoji across deltas', async () => {
    const text = '1234567😀89';
    const model = createMockModel({ responses: [{ text }] });
    const deltas = (await collect(model.doStream(ask('x')))).flatMap((p) => (p.type === 'text-delta' ? [p.delta] : []));
    expect(deltas).toEqual(['1234567😀', '89']);
  });

  it('uses the scripted chunks, and their join as the text', async () => {
    const model = createMockModel({ responses: [{ chunks: ['He', 'llo', ' world'] }, { chunks: ['He', 'llo'] }] });
    const deltas = (await collect(model.doStream(ask('x')))).flatMap((p) => (p.type === 'text-delta' ? [p.delta] : []));
    expect(deltas).toEqual(['He', 'llo', ' world']);
    expect((await model.doGenerate(ask('x'))).text).toBe('Hello');
  });

  it('gives the same turn whether generated or streamed', async () => {
    const turn = { text: 'The answer is 42, as computed.', toolCalls: [{ toolName: 'log', args: [1] }] };
    const model = createMockModel({ strict: false, responses: [turn] });
    const generated = await model.doGenerate(ask('q'));
    const parts = await collect(model.doStream(ask('q')));
    const text = parts.flatMap((p) => (p.type === 'text-delta' ? [p.delta] : [])).join('');
    const toolCalls = parts.flatMap((p) => (p.type === 'tool-call' ? [p.toolCall] : []));
    const finish = parts.at(-1);
    expect({ text, toolCalls }).toEqual({ text: generated.text, toolCalls: generated.toolCalls });
    expect(finish).toEqual({ type: 'finish', finishReason: generated.finishReason, usage: generated.usage });
  });

  it('breaks off a stream after the scripted number of chunks', async () => {
    const model = createMockModel({
      responses: [{ chunks: ['a', 'b', 'c'], toolCalls: [{ toolName: 't' }], streamError: { afterChunks: 2, error: { status: 502 } } }],
    });
    const { parts, error } = await collectUntilError(model.doStream(ask('x')));
    expect(parts).toEqual([{ type: 'text-delta', delta: 'a' }, { type: 'text-delta', delta: 'b' }]);
    expect(error).toBeInstanceOf(ModelCallError);
    expect(error).toMatchObject({ statusCode: 502, isRetryable: true });
  });

  it('a break after more chunks than exist comes after all the text, before tool calls and finish', async () => {
    const boom = new Error('reset');
    const model = createMockModel({
      responses: [{ text: 'hi', toolCalls: [{ toolName: 't' }], streamError: { afterChunks: 9, error: boom } }],
    });
    const { parts, error } = await collectUntilError(model.doStream(ask('x')));
    expect(parts).toEqual([{ type: 'text-delta', delta: 'hi' }]);
    expect(error).toBe(boom);
  });

  it('doGenerate rejects on a turn scripted to break mid-stream', async () => {
    const boom = new Error('reset');
    const model = createMockModel({ responses: [{ text: 'partial', streamError: { afterChunks: 0, error: boom } }] });
    await expect(model.doGenerate(ask('x'))).rejects.toBe(boom);
  });
});

describe('createMockModel: recorded calls', () => {
  it('records JSON copies of each request, without the signal', async () => {
    const model = createMockModel({ responses: [{ text: 'a' }, { text: 'b' }] });
    const request: ModelRequest = {
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }],
      tools: [{ name: 'now', description: 'Current time', parameters: { type: 'object' } }],
      toolChoice: { toolName: 'now' },
      responseFormat: { type: 'json', name: 'Answer' },
      signal: new AbortController().signal,
    };
    await model.doGenerate(request);
    await collect(model.doStream(ask('second')));
    expect(model.calls).toHaveLength(2);
    expect(model.calls[0]).toEqual({
      messages: request.messages,
      tools: request.tools,
      toolChoice: { toolName: 'now' },
      responseFormat: { type: 'json', name: 'Answer' },
    });
    expect('signal' in model.calls[0]!).toBe(false);
    expect(model.calls[0]!.messages).not.toBe(request.messages);
    // Later changes to the caller's objects do not rewrite history.
    request.messages.push({ role: 'user', content: 'added later' });
    expect(model.calls[0]!.messages).toHaveLength(2);
    expect(JSON.parse(JSON.stringify(model.calls))).toEqual(model.calls);
  });

  it('records each request of a conversation as it was, and counts its usage, however the next one changes the history', async () => {
    const model = createMockModel({ strict: false, responses: [{ text: 'ok' }] });
    const user = { role: 'user' as const, content: 'Plan a trip.' };
    const turn = { role: 'assistant' as const, content: 'Where to?' };
    const answer = { role: 'user' as const, content: 'Oslo, in May.' };
    const sent: ModelRequest['messages'][] = [
      [user],
      [user, turn, answer], // extends the last one
      [user, { role: 'assistant', content: 'Which city?' }, answer], // rewrites a message in the middle
      [{ role: 'user', content: 'Start over.' }], // shares nothing
    ];
    const reused = [user, turn];
    const usages = [];
    for (const messages of sent) usages.push((await model.doGenerate({ ...ask(''), messages })).usage);
    // The caller's own array, sent, extended in place and sent again.
    usages.push((await model.doGenerate({ ...ask(''), messages: reused })).usage);
    reused.push(answer);
    usages.push((await model.doGenerate({ ...ask(''), messages: reused })).usage);
    const expected = [...sent, [user, turn], [user, turn, answer]];
    expect(model.calls.map((call) => call.messages)).toEqual(expected);
    const tokens = (messages: unknown[]) => Math.ceil(messages.reduce<number>((n, m) => n + JSON.stringify(m).length, 0) / 4);
    expect(usages.map((u) => u.inputTokens)).toEqual(expected.map(tokens));
  });

  it('records unexpected calls too', async () => {
    const model = createMockModel({ responses: [] });
    await model.doGenerate(ask('surprise')).catch(() => undefined);
    expect(model.calls).toEqual([ask('surprise')]);
  });
});

describe('docs/testing.md', () => {
  it('runs the example', async () => {
    // docs-example:start
    const model = createMockModel({
      responses: [
        { toolCalls: [{ toolName: 'weather', args: { city: 'Oslo' } }] },
        { text: 'It is sunny in Oslo.' },
      ],
    });
    const request = {
      messages: [{ role: 'user' as const, content: 'Weather in Oslo?' }],
      tools: [],
      toolChoice: 'auto' as const,
    };

    const first = await model.doGenerate(request);
    expect(first.toolCalls).toEqual([{ toolCallId: 'tool_0', toolName: 'weather', args: { city: 'Oslo' } }]);
    expect(first.finishReason).toBe('tool-calls');

    const second = await model.doGenerate(request);
    expect(second.text).toBe('It is sunny in Oslo.');

    expect(model.calls).toHaveLength(2);
    model.assertAllUsed();
    // docs-example:end
  });

  it('shows the same example this file runs', () => {
    const doc = readFileSync(new URL('../../docs/testing.md', import.meta.url), 'utf8');
    const block = /```ts\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';
    const documented = block.split('\n').filter((line) => !line.startsWith('import ')).join('\n').trim();

    const source = readFileSync(new URL(import.meta.url), 'utf8');
    const [, region = ''] = /\/\/ docs-example:start\n([\s\S]*?)\n\s*\/\/ docs-example:end/.exec(source) ?? [];
    const lines = region.split('\n');
    const indent = Math.min(...lines.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length));
    const tested = lines.map((l) => l.slice(indent)).join('\n').trim();

    expect(tested).not.toBe('');
    expect(documented).toBe(tested);
  });
});

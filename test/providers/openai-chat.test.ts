/**
 * cairn/openai on the Chat Completions wire (`openai.chat`), against recorded
 * wire shapes replayed by a local server: the exact request, what the adapter
 * made of the answer (whole and streamed), and every failure as a typed error
 * that never shows the key.
 */
import { describe, expect, it } from 'vitest';
import { createOpenAI } from 'cairn/openai';
import { APICallError, MissingAPIKeyError } from '../../src/errors/index.js';
import type { LanguageModel, ModelMessage, ModelRequest } from '../../src/models/types.js';
import { CANARY_KEY, wireServerForFile } from './wire-server.js';
import {
  ask, collect, collectUntilError, expectNoKey, expectRequest, HTTP_FAILURES, partsResult, json, rejectionOf, sse, weather, WEATHER_TOOL,
} from './fixtures/openai/harness.js';

const server = await wireServerForFile();

const HEADERS = { 'openai-organization': 'org-cairn', 'openai-project': undefined };
const modelOf = (modelId = 'gpt-4.1-mini', extra: Parameters<typeof createOpenAI>[0] = {}): LanguageModel =>
  createOpenAI({ apiKey: CANARY_KEY, baseURL: `${server.url}/v1`, organization: 'org-cairn', ...extra }).chat(modelId);
const sent = (body: unknown, index = 0) => expectRequest(server.requests[index], { path: '/v1/chat/completions', body, headers: HEADERS });
const STREAM = { stream: true, stream_options: { include_usage: true } };

const MESSAGES = (text: string, role = 'system') => [{ role, content: 'Be brief.' }, { role: 'user', content: text }];
const WIRE_TOOL = { type: 'function', function: { ...WEATHER_TOOL } };
const META = { id: 'chatcmpl-C5xYz1Ab2Cd3Ef4Gh5Ij6Kl7Mn8', modelId: 'gpt-4.1-mini-2025-04-14' };
const usage = (input: number, output: number, extra: object = {}) => ({ inputTokens: input, outputTokens: output, totalTokens: input + output, cacheReadTokens: 0, reasoningTokens: 0, ...extra });

describe('answers', () => {
  const TEXT_REQUEST = ask('Hi', { settings: { temperature: 0.2, topP: 0.9, maxOutputTokens: 200, promptCaching: true } });
  const TEXT_BODY = { model: 'gpt-4.1-mini', messages: MESSAGES('Hi'), temperature: 0.2, top_p: 0.9, max_completion_tokens: 200 };
  const TEXT_USAGE = usage(2006, 10, { cacheReadTokens: 1920 });

  it('plain text, with the settings and the cached prompt tokens', async () => {
    server.reply(json('openai/chat/text'));
    const result = await modelOf().doGenerate(TEXT_REQUEST);
    sent(TEXT_BODY);
    expect(result).toEqual({ text: 'Hello! How can I help you today?', toolCalls: [], finishReason: 'stop', usage: TEXT_USAGE, response: META });
  });

  it('plain text, streamed with the usage chunk', async () => {
    server.reply(sse('openai/chat/text-stream'));
    const parts = await collect(modelOf().doStream!(TEXT_REQUEST));
    sent({ ...TEXT_BODY, ...STREAM });
    expect(parts).toEqual([
      { type: 'response-metadata', ...META },
      { type: 'text-delta', delta: 'Hello!' },
      { type: 'text-delta', delta: ' How can I' },
      { type: 'text-delta', delta: ' help you today?' },
      { type: 'finish', finishReason: 'stop', usage: TEXT_USAGE },
    ]);
  });

  const TOOL_BODY = { model: 'gpt-4.1-mini', messages: MESSAGES('Weather in Paris?'), tools: [WIRE_TOOL], tool_choice: 'auto' };
  const CALL = { toolCallId: 'call_Kq3mX9vB2nT7pL4wR8sY1zA6', toolName: 'get_weather', args: { city: 'Paris', unit: 'celsius' } };

  it('a tool call', async () => {
    server.reply(json('openai/chat/tool-call'));
    const result = await modelOf().doGenerate(weather());
    sent(TOOL_BODY);
    expect(result).toEqual({ text: '', toolCalls: [CALL], finishReason: 'tool-calls', usage: usage(84, 22), response: META });
  });

  it('a tool call whose arguments arrive in several deltas, streamed', async () => {
    server.reply(sse('openai/chat/tool-call-stream'));
    const parts = await collect(modelOf().doStream!(weather()));
    sent({ ...TOOL_BODY, ...STREAM });
    const id = CALL.toolCallId;
    expect(parts).toEqual([
      { type: 'response-metadata', ...META },
      { type: 'tool-call-start', toolCallId: id, toolName: 'get_weather' },
      { type: 'tool-call-delta', toolCallId: id, argsTextDelta: '{"ci' },
      { type: 'tool-call-delta', toolCallId: id, argsTextDelta: 'ty":"Par' },
      { type: 'tool-call-delta', toolCallId: id, argsTextDelta: 'is","unit":' },
      { type: 'tool-call-delta', toolCallId: id, argsTextDelta: '"celsius"}' },
      { type: 'tool-call', toolCall: CALL },
      { type: 'finish', finishReason: 'tool-calls', usage: usage(84, 22) },
    ]);
  });

  const PARIS = { toolCallId: 'call_P1aB2cD3eF4gH5iJ6kL7mN8o', toolName: 'get_weather', args: { city: 'Paris' } };
  const OSLO = { toolCallId: 'call_Q9rS8tU7vW6xY5zA4bC3dE2f', toolName: 'get_weather', args: { city: 'Oslo' } };

  it('parallel tool calls', async () => {
    server.reply(json('openai/chat/parallel'));
    const result = await modelOf().doGenerate(weather());
    sent(TOOL_BODY);
    expect(result.toolCalls).toEqual([PARIS, OSLO]);
    expect(result.finishReason).toBe('tool-calls');
  });

  it('parallel tool calls whose deltas interleave by index, streamed', async () => {
    server.reply(sse('openai/chat/parallel-stream'));
    const parts = await collect(modelOf().doStream!(weather()));
    sent({ ...TOOL_BODY, ...STREAM });
    expect(parts.slice(1)).toEqual([
      { type: 'tool-call-start', toolCallId: PARIS.toolCallId, toolName: 'get_weather' },
      { type: 'tool-call-delta', toolCallId: PARIS.toolCallId, argsTextDelta: '{"city":' },
      { type: 'tool-call-start', toolCallId: OSLO.toolCallId, toolName: 'get_weather' },
      { type: 'tool-call-delta', toolCallId: OSLO.toolCallId, argsTextDelta: '{"city":' },
      { type: 'tool-call-delta', toolCallId: PARIS.toolCallId, argsTextDelta: '"Paris"}' },
      { type: 'tool-call-delta', toolCallId: OSLO.toolCallId, argsTextDelta: '"Oslo"}' },
      { type: 'tool-call', toolCall: PARIS },
      { type: 'tool-call', toolCall: OSLO },
      { type: 'finish', finishReason: 'tool-calls', usage: usage(90, 40) },
    ]);
  });

  it.each([
    ['refusal', 'refusal', "I can't help with that.", usage(30, 7)],
    ['content-filter', 'content-filter', 'Here is the', usage(30, 3)],
    ['length', 'length', 'The history of Paris begins', usage(25, 5)],
  ] as const)('%s, whole and streamed', async (name, finishReason, text, expectedUsage) => {
    server.reply(json(`openai/chat/${name}`), sse(`openai/chat/${name}-stream`));
    const result = await modelOf().doGenerate(ask('Tell me.'));
    expect(result).toMatchObject({ text, finishReason, usage: expectedUsage, toolCalls: [] });
    const parts = await collect(modelOf().doStream!(ask('Tell me.')));
    const body = { model: 'gpt-4.1-mini', messages: MESSAGES('Tell me.') };
    sent(body, 0);
    sent({ ...body, ...STREAM }, 1);
    expect(parts.filter((p) => p.type === 'text-delta').map((p) => (p as { delta: string }).delta).join('')).toBe(text);
    expect(parts.at(-1)).toEqual({ type: 'finish', finishReason, usage: expectedUsage });
  });

  it('a reasoning model: developer messages, reasoning_effort, reasoning tokens; its reasoning never goes back on this wire', async () => {
    server.reply(json('openai/chat/reasoning'));
    const history: ModelMessage[] = [
      ...ask('Weather?').messages,
      {
        role: 'assistant', content: 'Checking.', toolCalls: [{ toolCallId: 'call_9', toolName: 'get_weather', args: { city: 'Paris' } }],
        reasoning: [{ type: 'reasoning', text: 'thought', providerMetadata: { openai: { itemId: 'rs_1', encryptedContent: 'enc', summary: [] } } }],
      },
      { role: 'tool', toolCallId: 'call_9', toolName: 'get_weather', content: { tempC: 18 } },
    ];
    const result = await modelOf('o4-mini').doGenerate({ messages: history, tools: [WEATHER_TOOL], toolChoice: 'auto', settings: { effort: 'low', maxOutputTokens: 1000 } });
    sent({
      model: 'o4-mini',
      messages: [
        ...MESSAGES('Weather?', 'developer'),
        { role: 'assistant', content: 'Checking.', tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_9', content: '{"tempC":18}' },
      ],
      tools: [WIRE_TOOL],
      tool_choice: 'auto',
      reasoning_effort: 'low',
      max_completion_tokens: 1000,
    });
    expect(result).toEqual({
      text: 'It is 18°C in Paris.', toolCalls: [], finishReason: 'stop', usage: usage(60, 400, { reasoningTokens: 384 }),
      response: { id: META.id, modelId: 'o4-mini-2025-04-16' },
    });
  });
});

describe('requests', () => {
  it('maps every kind of message part, tool result and tool choice, and warns about what the wire cannot take', async () => {
    server.reply(json('openai/chat/text'), sse('openai/chat/text-stream'));
    const messages: ModelMessage[] = [
      { role: 'user', content: [
        { type: 'text', text: 'Look:' },
        { type: 'image', url: 'https://example.com/cat.png' },
        { type: 'image', data: 'iVBORw0KGgo=', mediaType: 'image/png' },
        { type: 'file', data: 'JVBERi0xLjc=', mediaType: 'application/pdf', filename: 'report.pdf' },
        { type: 'file', url: 'https://example.com/spec.pdf', mediaType: 'application/pdf' },
      ] },
      { role: 'assistant', content: '', toolCalls: [{ toolCallId: 'call_1', toolName: 'get_weather', args: '{"city": Oslo' }] },
      { role: 'tool', toolCallId: 'call_1', toolName: 'get_weather', content: partsResult([{ type: 'text', text: 'map:' }, { type: 'image', data: 'R0lGOD==', mediaType: 'image/gif' }, { type: 'text', text: 'sunny' }]) },
      { role: 'assistant', content: 'Sunny.' },
    ];
    const request: ModelRequest = { messages, tools: [WEATHER_TOOL], toolChoice: { toolName: 'get_weather' } };
    const result = await modelOf().doGenerate(request);
    const parts = await collect(modelOf().doStream!(request));
    const body = {
      model: 'gpt-4.1-mini',
      messages: [
        { role: 'user', content: [
          { type: 'text', text: 'Look:' },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'file', file: { filename: 'report.pdf', file_data: 'data:application/pdf;base64,JVBERi0xLjc=' } },
        ] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": Oslo' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'map:\nsunny' },
        { role: 'assistant', content: 'Sunny.' },
      ],
      tools: [WIRE_TOOL],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    };
    sent(body, 0);
    sent({ ...body, ...STREAM }, 1);
    const warnings = [
      { type: 'other', message: 'Chat Completions takes no file by URL; the file https://example.com/spec.pdf was left out.' },
      { type: 'other', message: 'Chat Completions takes only text in a tool result; the images and files of call_1 were left out.' },
    ];
    expect(result.warnings).toEqual(warnings);
    expect(parts.slice(0, 2)).toEqual([{ type: 'response-metadata', ...META }, { type: 'warnings', warnings }]);
  });

  it('sends structured output as response_format beside the unchanged tools, with tool_choice none; provider options go last', async () => {
    server.reply(json('openai/chat/text'), json('openai/chat/text'));
    const schema = { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'] };
    const request: ModelRequest = weather({
      toolChoice: 'none',
      responseFormat: { type: 'json', schema },
      providerOptions: { openai: { parallel_tool_calls: false, tool_choice: 'none', user: 'u-1' } },
    });
    await modelOf().doGenerate(request);
    await modelOf('gpt-4.1-mini', { strictJsonSchema: true }).doGenerate({ ...request, responseFormat: { type: 'json', schema, name: 'answer' }, providerOptions: {} });
    sent({
      model: 'gpt-4.1-mini', messages: MESSAGES('Weather in Paris?'), tools: [WIRE_TOOL], tool_choice: 'none',
      response_format: { type: 'json_schema', json_schema: { name: 'response', schema, strict: false } },
      parallel_tool_calls: false, user: 'u-1',
    }, 0);
    sent({
      model: 'gpt-4.1-mini', messages: MESSAGES('Weather in Paris?'),
      tools: [{ type: 'function', function: { ...WEATHER_TOOL, strict: true } }], tool_choice: 'none',
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } },
    }, 1);
  });
});

describe('failures', () => {
  describe.each(['generate', 'stream'] as const)('%s', (mode) => {
    const call = (request: ModelRequest) => mode === 'generate'
      ? modelOf().doGenerate(request)
      : collectUntilError(modelOf().doStream!(request)).then(({ parts, error }) => {
        expect(parts).toEqual([]);
        throw error;
      });
    const BODY = { model: 'gpt-4.1-mini', messages: MESSAGES('Hi'), ...(mode === 'stream' ? STREAM : {}) };

    it.each(HTTP_FAILURES)('$name', async ({ reply, status, retryable, message, retryAfterMs }) => {
      server.reply(reply);
      const error = await rejectionOf(call(ask('Hi')));
      sent(BODY);
      expect(APICallError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ statusCode: status, isRetryable: retryable, provider: 'openai', url: `${server.url}/v1/chat/completions` });
      expect((error as Error).message).toContain(message);
      if (retryAfterMs !== undefined) expect(error).toMatchObject({ retryAfterMs, requestId: 'req_4f1c2d3e' });
      expectNoKey(error);
    });

    it('a hang past the transport timeout rejects with the TimeoutError', async () => {
      server.reply({ hang: true });
      const error = await rejectionOf(call(ask('Hi', { signal: AbortSignal.timeout(200) })));
      expect((error as Error).name).toBe('TimeoutError');
      expectNoKey(error);
    });
  });

  it('a missing key is a MissingAPIKeyError at the first call', async () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      const model = createOpenAI({ baseURL: `${server.url}/v1` }).chat('gpt-4.1-mini');
      expect(MissingAPIKeyError.isInstance(await rejectionOf(model.doGenerate(ask('Hi'))))).toBe(true);
      expect(server.requests).toHaveLength(0);
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    }
  });

  it('malformed JSON with status 200 is an invalid_response that no retry cures', async () => {
    server.reply({ body: '{"id":"chatcmpl-1","choices":[' });
    const error = await rejectionOf(modelOf().doGenerate(ask('Hi')));
    expect(error).toMatchObject({ name: 'APICallError', code: 'invalid_response', isRetryable: false, statusCode: 200 });
    expectNoKey(error);
  });

  it('a stream cut mid-way is a retryable APICallError naming the provider and the endpoint, after the parts it gave', async () => {
    server.reply(sse('openai/chat/text-stream', { cutAfter: 2 }));
    const { parts, error } = await collectUntilError(modelOf().doStream!(ask('Hi')));
    expect(parts).toEqual([{ type: 'response-metadata', ...META }, { type: 'text-delta', delta: 'Hello!' }]);
    expect(error).toMatchObject({ name: 'APICallError', provider: 'openai', isRetryable: true, url: `${server.url}/v1/chat/completions` });
    expectNoKey(error);
  });

  it('a stream that ends cleanly without [DONE] or a finish reason is a retryable APICallError', async () => {
    server.reply(sse('openai/chat/unfinished-stream'));
    const { parts, error } = await collectUntilError(modelOf().doStream!(ask('Hi')));
    expect(parts.filter((p) => p.type === 'text-delta')).toHaveLength(2);
    expect(error).toMatchObject({ name: 'APICallError', isRetryable: true });
    expect((error as Error).message).toContain('ended early');
  });

  it('an error chunk inside the stream is an APICallError with the status its type stands for', async () => {
    server.reply(sse('openai/chat/error-stream'));
    const { parts, error } = await collectUntilError(modelOf().doStream!(ask('Hi')));
    expect(parts).toEqual([]);
    expect(error).toMatchObject({ name: 'APICallError', statusCode: 500, isRetryable: true });
    expect((error as Error).message).toContain('The server had an error');
  });

  it('a completion without choices is an invalid_response', async () => {
    server.reply({ json: { id: 'chatcmpl-1', object: 'chat.completion', choices: [] } });
    const error = await rejectionOf(modelOf().doGenerate(ask('Hi')));
    expect(error).toMatchObject({ name: 'APICallError', code: 'invalid_response', isRetryable: false });
  });
});

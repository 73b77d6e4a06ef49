/**
 * cairn/openai on the Responses wire, against recorded wire shapes replayed by
 * a local server: the exact request, what the adapter made of the answer
 * (whole and streamed), reasoning that round-trips byte for byte, and every
 * failure as a typed error that never shows the key.
 */
import { describe, expect, it } from 'vitest';
import { createOpenAI, openai } from 'cairn/openai';
import { APICallError, MissingAPIKeyError } from '../../src/errors/index.js';
import type { LanguageModel, ModelMessage, ModelRequest, ReasoningPart } from '../../src/models/types.js';
import { CANARY_KEY, wireServerForFile } from './wire-server.js';
import {
  ask, collect, collectUntilError, errorBody, expectNoKey, expectRequest, fixture, HTTP_FAILURES, partsResult, json, rejectionOf, sse,
  weather, WEATHER_TOOL,
} from './fixtures/openai/harness.js';

const server = await wireServerForFile();

const HEADERS = { 'openai-organization': 'org-cairn', 'openai-project': 'proj_tests', 'x-trace': 't-1' };
const modelOf = (modelId = 'gpt-4.1', extra: Parameters<typeof createOpenAI>[0] = {}): LanguageModel =>
  createOpenAI({ apiKey: CANARY_KEY, baseURL: `${server.url}/v1`, organization: 'org-cairn', project: 'proj_tests', headers: { 'x-trace': 't-1' }, ...extra })
    .responses(modelId);
const sent = (body: unknown, index = 0) => expectRequest(server.requests[index], { path: '/v1/responses', body, headers: HEADERS });

const SYSTEM_AND_USER = (text: string, role = 'system') => [{ role, content: 'Be brief.' }, { role: 'user', content: text }];
const WIRE_TOOL = { type: 'function', ...WEATHER_TOOL, strict: false };
const RID = 'resp_68a1c2e0f4d88190a3b5c7d9e1f20345';
const META = { id: RID, modelId: 'gpt-4.1-2025-04-14' };
const usage = (input: number, output: number, extra: object = {}) => ({ inputTokens: input, outputTokens: output, totalTokens: input + output, cacheReadTokens: 0, reasoningTokens: 0, ...extra });

describe('the provider', () => {
  it('gives Responses models by default and by .responses, Chat models by .chat', () => {
    const provider = createOpenAI({ apiKey: CANARY_KEY });
    for (const model of [provider('gpt-5.2'), provider.responses('gpt-5.2'), openai('gpt-5.2')]) {
      expect(model).toMatchObject({ specificationVersion: 'cairn-model-1', provider: 'openai', modelId: 'gpt-5.2', protocol: 'responses' });
    }
    expect(provider.chat('gpt-4.1')).toMatchObject({ provider: 'openai', modelId: 'gpt-4.1', protocol: 'chat' });
  });

  it('posts to https://api.openai.com/v1 by default, through the fetch it was given', async () => {
    const urls: string[] = [];
    const model = createOpenAI({
      apiKey: CANARY_KEY,
      fetch: async (url) => {
        urls.push(String(url));
        return new Response(JSON.stringify(fixture('openai/responses/text')), { status: 200 });
      },
    })('gpt-4.1');
    expect((await model.doGenerate(ask('Hi'))).text).toBe('Hello! How can I help you today?');
    expect(urls).toEqual(['https://api.openai.com/v1/responses']);
  });

  it("turns the spec's fail-over example (every request answers 503) into a retryable APICallError", async () => {
    const primary = createOpenAI({
      apiKey: 'demo',
      fetch: async () => new Response('{"error":{"message":"unavailable"}}', { status: 503 }),
    })('gpt-5.2');
    const error = await rejectionOf(primary.doGenerate(ask('Hello?')));
    expect(APICallError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ statusCode: 503, isRetryable: true });
    expect((error as Error).message).toContain('unavailable');
  });

  it('throws MissingAPIKeyError at the first call, not at creation, and sends nothing', async () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      const model = createOpenAI({ baseURL: `${server.url}/v1` })('gpt-4.1');
      const error = await rejectionOf(model.doGenerate(ask('Hi')));
      expect(MissingAPIKeyError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ code: 'api_key_missing' });
      expect((error as Error).message).toContain('OPENAI_API_KEY');
      expect(await collectUntilError(model.doStream!(ask('Hi')))).toMatchObject({ parts: [], error: { code: 'api_key_missing' } });
      expect(server.requests).toHaveLength(0);
    } finally {
      if (saved === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = saved;
    }
  });

  it('reads the key from OPENAI_API_KEY at the call when none is passed', async () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      const model = createOpenAI({ baseURL: `${server.url}/v1` })('gpt-4.1');
      process.env.OPENAI_API_KEY = CANARY_KEY;
      server.reply(json('openai/responses/text'));
      await model.doGenerate(ask('Hi'));
      expectRequest(server.requests[0], { path: '/v1/responses', body: { model: 'gpt-4.1', input: SYSTEM_AND_USER('Hi'), store: false } });
    } finally {
      if (saved === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = saved;
    }
  });
});

describe('answers', () => {
  const TEXT_REQUEST = ask('Hi', { settings: { temperature: 0.2, topP: 0.9, maxOutputTokens: 200, promptCaching: true } });
  const TEXT_BODY = { model: 'gpt-4.1', input: SYSTEM_AND_USER('Hi'), store: false, temperature: 0.2, top_p: 0.9, max_output_tokens: 200 };
  const TEXT_USAGE = usage(2006, 10, { cacheReadTokens: 1920 });

  it('plain text, with the settings and the cached input tokens', async () => {
    server.reply(json('openai/responses/text'));
    const result = await modelOf().doGenerate(TEXT_REQUEST);
    sent(TEXT_BODY);
    expect(result).toEqual({ text: 'Hello! How can I help you today?', toolCalls: [], finishReason: 'stop', usage: TEXT_USAGE, response: META });
  });

  it('plain text, streamed', async () => {
    server.reply(sse('openai/responses/text-stream'));
    const parts = await collect(modelOf().doStream!(TEXT_REQUEST));
    sent({ ...TEXT_BODY, stream: true });
    expect(parts).toEqual([
      { type: 'response-metadata', ...META },
      { type: 'text-delta', delta: 'Hello!' },
      { type: 'text-delta', delta: ' How can I' },
      { type: 'text-delta', delta: ' help you today?' },
      { type: 'finish', finishReason: 'stop', usage: TEXT_USAGE },
    ]);
  });

  const TOOL_BODY = { model: 'gpt-4.1', input: SYSTEM_AND_USER('Weather in Paris?'), store: false, tools: [WIRE_TOOL], tool_choice: 'auto' };
  const CALL = { toolCallId: 'call_Kq3mX9vB2nT7pL4wR8sY1zA6', toolName: 'get_weather', args: { city: 'Paris', unit: 'celsius' } };

  it('a tool call', async () => {
    server.reply(json('openai/responses/tool-call'));
    const result = await modelOf().doGenerate(weather());
    sent(TOOL_BODY);
    expect(result).toEqual({ text: '', toolCalls: [CALL], finishReason: 'tool-calls', usage: usage(84, 22), response: META });
  });

  it('a tool call whose arguments arrive in several deltas, streamed', async () => {
    server.reply(sse('openai/responses/tool-call-stream'));
    const parts = await collect(modelOf().doStream!(weather()));
    sent({ ...TOOL_BODY, stream: true });
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
    server.reply(json('openai/responses/parallel'));
    const result = await modelOf().doGenerate(weather());
    sent(TOOL_BODY);
    expect(result.toolCalls).toEqual([PARIS, OSLO]);
    expect(result.finishReason).toBe('tool-calls');
  });

  it('parallel tool calls whose argument deltas interleave, streamed', async () => {
    server.reply(sse('openai/responses/parallel-stream'));
    const parts = await collect(modelOf().doStream!(weather()));
    sent({ ...TOOL_BODY, stream: true });
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
    server.reply(json(`openai/responses/${name}`), sse(`openai/responses/${name}-stream`));
    const result = await modelOf().doGenerate(ask('Tell me.'));
    expect(result).toMatchObject({ text, finishReason, usage: expectedUsage, toolCalls: [] });
    const parts = await collect(modelOf().doStream!(ask('Tell me.')));
    const body = { model: 'gpt-4.1', input: SYSTEM_AND_USER('Tell me.'), store: false };
    sent(body, 0);
    sent({ ...body, stream: true }, 1);
    expect(parts.filter((p) => p.type === 'text-delta').map((p) => (p as { delta: string }).delta).join('')).toBe(text);
    expect(parts.at(-1)).toEqual({ type: 'finish', finishReason, usage: expectedUsage });
  });
});

describe('reasoning', () => {
  const reasoningFixture = fixture<{ output: Array<Record<string, unknown>> }>('openai/responses/reasoning');
  const ITEM = reasoningFixture.output[0]!;
  const PART: ReasoningPart = {
    type: 'reasoning',
    text: '**Checking the weather**\n\nThe user wants Paris.\n\nI should call get_weather.',
    providerMetadata: { openai: { itemId: ITEM.id as string, summary: ITEM.summary as never, encryptedContent: ITEM.encrypted_content as string } },
  };
  const CALL = { toolCallId: 'call_R3aS4bT5cU6dV7eW8fX9gY0h', toolName: 'get_weather', args: { city: 'Paris' } };
  const model = () => modelOf('o4-mini', { reasoningSummary: 'auto' });
  const request = weather({ settings: { effort: 'high' } });
  const BODY = {
    model: 'o4-mini',
    input: SYSTEM_AND_USER('Weather in Paris?', 'developer'),
    store: false,
    include: ['reasoning.encrypted_content'],
    tools: [WIRE_TOOL],
    tool_choice: 'auto',
    reasoning: { effort: 'high', summary: 'auto' },
  };
  const USAGE = usage(120, 310, { reasoningTokens: 256 });

  it('asks a reasoning model for its encrypted reasoning and returns it as a reasoning part', async () => {
    server.reply(json('openai/responses/reasoning'));
    const result = await model().doGenerate(request);
    sent(BODY);
    expect(result).toEqual({
      text: '', toolCalls: [CALL], finishReason: 'tool-calls', usage: USAGE, reasoning: [PART],
      response: { id: 'resp_68a1c2e4aa008190ffeeddccbbaa9988', modelId: 'o4-mini-2025-04-16' },
    });
  });

  it('streams the summary as reasoning deltas and ends the item with the complete part', async () => {
    server.reply(sse('openai/responses/reasoning-stream'));
    const parts = await collect(model().doStream!(request));
    sent({ ...BODY, stream: true });
    const deltas = parts.filter((p) => p.type === 'reasoning-delta').map((p) => (p as { delta: string }).delta);
    expect(deltas.join('')).toBe(PART.text);
    expect(parts.map((p) => p.type)).toEqual([
      'response-metadata', 'reasoning-delta', 'reasoning-delta', 'reasoning-delta', 'reasoning-delta', 'reasoning-delta', 'reasoning',
      'tool-call-start', 'tool-call-delta', 'tool-call-delta', 'tool-call', 'finish',
    ]);
    expect(parts[6]).toEqual({ type: 'reasoning', reasoning: PART });
    expect(parts.at(-1)).toEqual({ type: 'finish', finishReason: 'tool-calls', usage: USAGE });
  });

  it('sends the reasoning item back byte for byte (after a JSON checkpoint) before the call, and drops reasoning of other providers', async () => {
    server.reply(json('openai/responses/reasoning'), json('openai/responses/text'));
    const first = await model().doGenerate(request);
    // What the run stores and restores.
    const turn = JSON.parse(JSON.stringify(first)) as typeof first;
    const foreign: ReasoningPart = { type: 'reasoning', text: 'Claude thought.', providerMetadata: { anthropic: { signature: 'sig-1' } } };
    const history: ModelMessage[] = [
      ...request.messages,
      { role: 'assistant', content: turn.text, toolCalls: turn.toolCalls, reasoning: [foreign, ...turn.reasoning!, { type: 'reasoning', text: 'no metadata' }] },
      { role: 'tool', toolCallId: CALL.toolCallId, toolName: 'get_weather', content: { tempC: 18 } },
    ];
    await model().doGenerate({ ...request, messages: history });
    const input = (server.requests[1]!.body as { input: unknown[] }).input;
    expect(input[2]).toEqual(ITEM);
    expect(JSON.stringify(input[2])).toContain(JSON.stringify(ITEM.encrypted_content));
    sent({
      ...BODY,
      input: [
        ...SYSTEM_AND_USER('Weather in Paris?', 'developer'),
        ITEM,
        { type: 'function_call', call_id: CALL.toolCallId, name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: CALL.toolCallId, output: '{"tempC":18}' },
      ],
    }, 1);
  });
});

describe('requests', () => {
  it('maps every kind of message part, tool result and tool choice', async () => {
    server.reply(json('openai/responses/text'));
    const messages: ModelMessage[] = [
      { role: 'user', content: [
        { type: 'text', text: 'Look:' },
        { type: 'image', url: 'https://example.com/cat.png' },
        { type: 'image', data: 'iVBORw0KGgo=', mediaType: 'image/png' },
        { type: 'file', data: 'JVBERi0xLjc=', mediaType: 'application/pdf', filename: 'report.pdf' },
        { type: 'file', url: 'https://example.com/spec.pdf', mediaType: 'application/pdf' },
      ] },
      { role: 'assistant', content: 'Checking.', toolCalls: [
        { toolCallId: 'call_1', toolName: 'get_weather', args: { city: 'Paris' } },
        { toolCallId: 'call_2', toolName: 'get_weather', args: '{"city": Oslo' },
      ] },
      { role: 'tool', toolCallId: 'call_1', toolName: 'get_weather', content: 'sunny' },
      { role: 'tool', toolCallId: 'call_2', toolName: 'get_weather', content: partsResult([{ type: 'text', text: 'map:' }, { type: 'image', data: 'R0lGOD==', mediaType: 'image/gif' }]), isError: false },
      { role: 'assistant', content: 'Sunny in Paris.' },
      { role: 'user', content: 'Thanks.' },
    ];
    await modelOf().doGenerate({ messages, tools: [WEATHER_TOOL], toolChoice: { toolName: 'get_weather' } });
    sent({
      model: 'gpt-4.1',
      input: [
        { role: 'user', content: [
          { type: 'input_text', text: 'Look:' },
          { type: 'input_image', image_url: 'https://example.com/cat.png', detail: 'auto' },
          { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' },
          { type: 'input_file', filename: 'report.pdf', file_data: 'data:application/pdf;base64,JVBERi0xLjc=' },
          { type: 'input_file', file_url: 'https://example.com/spec.pdf' },
        ] },
        { role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        // Arguments that were not JSON go back as the text the model wrote.
        { type: 'function_call', call_id: 'call_2', name: 'get_weather', arguments: '{"city": Oslo' },
        { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
        { type: 'function_call_output', call_id: 'call_2', output: [
          { type: 'input_text', text: 'map:' },
          { type: 'input_image', image_url: 'data:image/gif;base64,R0lGOD==', detail: 'auto' },
        ] },
        { role: 'assistant', content: [{ type: 'output_text', text: 'Sunny in Paris.' }] },
        { role: 'user', content: 'Thanks.' },
      ],
      store: false,
      tools: [WIRE_TOOL],
      tool_choice: { type: 'function', name: 'get_weather' },
    });
  });

  it('sends structured output as text.format beside the unchanged tools, with tool_choice none; provider options go last', async () => {
    server.reply(json('openai/responses/text'), json('openai/responses/text'));
    const schema = { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'] };
    const request: ModelRequest = weather({
      toolChoice: 'none',
      responseFormat: { type: 'json', schema, name: 'answer' },
      providerOptions: { openai: { service_tier: 'flex', store: true }, anthropic: { ignored: true } },
    });
    await modelOf().doGenerate(request);
    await modelOf('gpt-4.1', { strictJsonSchema: true }).doGenerate({ ...request, responseFormat: { type: 'json' }, providerOptions: {} });
    sent({
      ...{ model: 'gpt-4.1', input: SYSTEM_AND_USER('Weather in Paris?') },
      store: true,
      tools: [WIRE_TOOL],
      tool_choice: 'none',
      text: { format: { type: 'json_schema', name: 'answer', schema, strict: false } },
      service_tier: 'flex',
    }, 0);
    sent({
      model: 'gpt-4.1', input: SYSTEM_AND_USER('Weather in Paris?'), store: false,
      tools: [{ ...WIRE_TOOL, strict: true }], tool_choice: 'none', text: { format: { type: 'json_object' } },
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
    const BODY = { model: 'gpt-4.1', input: SYSTEM_AND_USER('Hi'), store: false, ...(mode === 'stream' ? { stream: true } : {}) };

    it.each(HTTP_FAILURES)('$name', async ({ reply, status, retryable, message, retryAfterMs }) => {
      server.reply(reply);
      const error = await rejectionOf(call(ask('Hi')));
      sent(BODY);
      expect(APICallError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ statusCode: status, isRetryable: retryable, provider: 'openai', url: `${server.url}/v1/responses` });
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

  it('malformed JSON with status 200 is an invalid_response that no retry cures', async () => {
    server.reply({ body: '{"id":"resp_1","output":[' });
    const error = await rejectionOf(modelOf().doGenerate(ask('Hi')));
    expect(error).toMatchObject({ name: 'APICallError', code: 'invalid_response', isRetryable: false, statusCode: 200 });
    expectNoKey(error);
  });

  it('a stream cut mid-way is a retryable APICallError naming the provider and the endpoint, after the parts it gave', async () => {
    server.reply(sse('openai/responses/unfinished-stream', { cutAfter: 5 }));
    const { parts, error } = await collectUntilError(modelOf().doStream!(ask('Hi')));
    expect(parts).toEqual([{ type: 'response-metadata', id: RID, modelId: 'gpt-4.1-2025-04-14' }, { type: 'text-delta', delta: 'Hello!' }]);
    expect(error).toMatchObject({ name: 'APICallError', provider: 'openai', isRetryable: true, url: `${server.url}/v1/responses` });
    expectNoKey(error);
  });

  it('a stream that ends cleanly without response.completed is a retryable APICallError', async () => {
    server.reply(sse('openai/responses/unfinished-stream'));
    const { parts, error } = await collectUntilError(modelOf().doStream!(ask('Hi')));
    expect(parts.filter((p) => p.type === 'text-delta')).toHaveLength(3);
    expect(error).toMatchObject({ name: 'APICallError', isRetryable: true });
    expect((error as Error).message).toContain('ended early');
  });

  it('an error event is an APICallError with the status its code stands for, before any part', async () => {
    server.reply(sse('openai/responses/error-stream'));
    const { parts, error } = await collectUntilError(modelOf().doStream!(ask('Hi')));
    expect(parts).toEqual([]);
    expect(error).toMatchObject({ name: 'APICallError', statusCode: 429, isRetryable: true });
    expect((error as Error).message).toContain('Rate limit reached');
  });

  it('response.failed, streamed or whole, is an APICallError with the status of its error code', async () => {
    const failed = fixture<Array<{ data: { response: unknown } }>>('openai/responses/failed-stream');
    server.reply(sse('openai/responses/failed-stream'), { json: failed.at(-1)!.data.response });
    const streamed = await collectUntilError(modelOf().doStream!(ask('Hi')));
    const whole = await rejectionOf(modelOf().doGenerate(ask('Hi')));
    for (const error of [streamed.error, whole]) {
      expect(error).toMatchObject({ name: 'APICallError', statusCode: 500, isRetryable: true });
      expect((error as Error).message).toContain('server_error');
    }
  });

  it('a setting the model refuses goes through, and its 400 names it', async () => {
    server.reply({ status: 400, json: errorBody("Unsupported parameter: 'temperature' is not supported with this model.", 'invalid_request_error', 'unsupported_parameter') });
    const error = await rejectionOf(modelOf('o4-mini').doGenerate(ask('Hi', { settings: { temperature: 0.5 } })));
    // Sampling settings go through unchanged: the model profiles (doctor) say beforehand which a model refuses.
    sent({ model: 'o4-mini', input: SYSTEM_AND_USER('Hi', 'developer'), store: false, include: ['reasoning.encrypted_content'], temperature: 0.5 });
    expect(error).toMatchObject({ statusCode: 400, isRetryable: false });
    expect((error as Error).message).toContain("Unsupported parameter: 'temperature'");
  });
});

/**
 * Real AI SDK provider packages (@ai-sdk/openai 2, 3 and 4: spec versions v2,
 * v3 and v4) pointed at the local wire server, adapted with fromAISDK: what
 * reached the server, what Cairn made of the answers and of the failures, and
 * a tool loop through runAgent and streamAgent. Fixtures follow OpenAI's
 * documented Chat Completions and Responses formats.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createOpenAI as createOpenAIv2 } from '@ai-sdk/openai-v2';
import { createOpenAI as createOpenAIv3 } from '@ai-sdk/openai';
import { createOpenAI as createOpenAIv4 } from '@ai-sdk/openai-v4';
import { runAgent, streamAgent } from 'cairn/agent';
import { fromAISDK, isAISDKModel } from '../../src/models/ai-sdk/index.js';
import type { LanguageModel, ModelRequest } from '../../src/models/types.js';
import { APICallError, MissingAPIKeyError } from '../../src/errors/index.js';
import { collect } from '../providers/stream-parts.js';
import { CANARY_KEY, visibleText, wireServerForFile, type RecordedRequest } from '../providers/wire-server.js';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/ai-sdk/${name}.json`, import.meta.url), 'utf8'));


const weatherTool = { name: 'get_weather', description: 'Current weather in a city.', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };
const ask: ModelRequest = { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Weather in Paris?' }], tools: [], toolChoice: 'auto' };
const askWithTool: ModelRequest = { ...ask, tools: [weatherTool] };

const server = await wireServerForFile();

/** The request reached `path` with the key in its auth header and nowhere else. */
function expectSent(request: RecordedRequest | undefined, path: string): Record<string, unknown> {
  expect(request).toBeDefined();
  expect(request!.method).toBe('POST');
  expect(request!.path).toBe(path);
  expect(request!.headers.authorization).toBe(`Bearer ${CANARY_KEY}`);
  const { authorization: _auth, ...others } = request!.headers;
  expect(JSON.stringify(others) + request!.path + JSON.stringify(request!.body)).not.toContain(CANARY_KEY);
  return request!.body as Record<string, unknown>;
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => {
    throw new Error('the call succeeded');
  }, (error: unknown) => error);
}

const versions = [
  ['v2', createOpenAIv2],
  ['v3', createOpenAIv3],
  ['v4', createOpenAIv4],
] as const;

describe.each(versions)('fromAISDK with @ai-sdk/openai (spec %s)', (version, createOpenAI) => {
  const provider = () => createOpenAI({ apiKey: CANARY_KEY, baseURL: server.url });
  const chat = () => fromAISDK(provider().chat('gpt-4o'));
  const responses = () => fromAISDK(provider().responses('gpt-4o'));

  it('adapts the chat and responses models and names them', () => {
    const raw = provider().chat('gpt-4o');
    expect(raw.specificationVersion).toBe(version);
    expect(isAISDKModel(raw)).toBe(true);
    expect(isAISDKModel(provider().responses('gpt-4o'))).toBe(true);
    expect(chat()).toMatchObject({ specificationVersion: 'cairn-model-1', provider: 'openai', protocol: 'chat', modelId: 'gpt-4o' });
    expect(responses()).toMatchObject({ provider: 'openai', protocol: 'responses', modelId: 'gpt-4o' });
  });

  describe('Chat Completions', () => {
    it('generates text, with usage including cached tokens', async () => {
      server.reply({ json: fixture('chat-text') });
      const response = await chat().doGenerate(ask);
      const body = expectSent(server.requests[0], '/chat/completions');
      expect(body).toMatchObject({ model: 'gpt-4o', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Weather in Paris?' }] });
      expect(body.stream).toBeUndefined();
      expect(body.tools).toBeUndefined();
      expect(response).toMatchObject({
        text: 'It is sunny in Paris.',
        toolCalls: [],
        finishReason: 'stop',
        usage: { inputTokens: 120, outputTokens: 9, totalTokens: 129, cacheReadTokens: 64, reasoningTokens: 0 },
        response: { id: 'chatcmpl-aisdk-text-1', modelId: 'gpt-4o-2024-08-06' },
      });
    });

    it('streams text: metadata first, the deltas, finish with usage last', async () => {
      server.reply({ sse: fixture('chat-text-stream') });
      const parts = await collect(chat().doStream!(ask));
      expect(expectSent(server.requests[0], '/chat/completions')).toMatchObject({ model: 'gpt-4o', stream: true });
      expect(parts[0]).toEqual({ type: 'response-metadata', id: 'chatcmpl-aisdk-stream-1', modelId: 'gpt-4o-2024-08-06' });
      expect(parts.filter((p) => p.type === 'text-delta')).toEqual([
        { type: 'text-delta', delta: 'It is ' }, { type: 'text-delta', delta: 'sunny ' }, { type: 'text-delta', delta: 'in Paris.' },
      ]);
      expect(parts.at(-1)).toMatchObject({
        type: 'finish', finishReason: 'stop', usage: { inputTokens: 120, outputTokens: 9, totalTokens: 129, cacheReadTokens: 64 },
      });
    });

    it('sends the tools and returns the call; the next request carries the call and its result', async () => {
      server.reply({ json: fixture('chat-tool-call') }, { json: fixture('chat-text') });
      const model = chat();
      const first = await model.doGenerate(askWithTool);
      expect(expectSent(server.requests[0], '/chat/completions')).toMatchObject({
        tools: [{ type: 'function', function: { name: 'get_weather', description: 'Current weather in a city.', parameters: weatherTool.parameters } }],
        tool_choice: 'auto',
      });
      expect(first).toMatchObject({ finishReason: 'tool-calls', toolCalls: [{ toolCallId: 'call_weather_1', toolName: 'get_weather', args: { city: 'Paris' } }] });

      await model.doGenerate({
        ...askWithTool,
        messages: [
          ...ask.messages,
          { role: 'assistant', content: first.text, toolCalls: first.toolCalls },
          { role: 'tool', toolCallId: 'call_weather_1', toolName: 'get_weather', content: { tempC: 21 } },
        ],
      });
      expect(expectSent(server.requests[1], '/chat/completions').messages).toEqual([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_weather_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_weather_1', content: '{"tempC":21}' },
      ]);
    });

    it('streams a call whose arguments arrive in pieces', async () => {
      server.reply({ sse: fixture('chat-tool-call-stream') });
      const parts = await collect(chat().doStream!(askWithTool));
      expect(parts.filter((p) => p.type.startsWith('tool-call'))).toEqual([
        { type: 'tool-call-start', toolCallId: 'call_weather_1', toolName: 'get_weather' },
        { type: 'tool-call-delta', toolCallId: 'call_weather_1', argsTextDelta: '{"ci' },
        { type: 'tool-call-delta', toolCallId: 'call_weather_1', argsTextDelta: 'ty": "Pa' },
        { type: 'tool-call-delta', toolCallId: 'call_weather_1', argsTextDelta: 'ris"}' },
        { type: 'tool-call', toolCall: { toolCallId: 'call_weather_1', toolName: 'get_weather', args: { city: 'Paris' } } },
      ]);
      expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool-calls', usage: { inputTokens: 80, outputTokens: 17, totalTokens: 97 } });
    });
  });

  describe('Responses', () => {
    it('generates text and keeps the message item id, which the next request sends back', async () => {
      server.reply({ json: fixture('responses-text') }, { json: fixture('responses-text') });
      const model = responses();
      const first = await model.doGenerate(ask);
      expect(expectSent(server.requests[0], '/responses')).toMatchObject({
        model: 'gpt-4o', input: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] }],
      });
      expect(first).toMatchObject({
        text: 'It is sunny in Paris.',
        finishReason: 'stop',
        usage: { inputTokens: 150, outputTokens: 12, totalTokens: 162, cacheReadTokens: 100, reasoningTokens: 0 },
        response: { id: 'resp_aisdk_text_1', modelId: 'gpt-4o-2024-08-06' },
        providerMetadata: { openai: { responseId: 'resp_aisdk_text_1', cairnTextPart: { itemId: 'msg_aisdk_1' } } },
      });
      await model.doGenerate({
        ...ask,
        messages: [...ask.messages, { role: 'assistant', content: first.text, providerMetadata: first.providerMetadata! }, { role: 'user', content: 'And tomorrow?' }],
      });
      // The AI SDK refers to the stored item instead of sending the text again (store is its default).
      expect((expectSent(server.requests[1], '/responses').input as unknown[])[2]).toEqual({ type: 'item_reference', id: 'msg_aisdk_1' });
    });

    it('streams a call whose arguments arrive in pieces', async () => {
      server.reply({ sse: fixture('responses-tool-call-stream') });
      const parts = await collect(responses().doStream!(askWithTool));
      expect(expectSent(server.requests[0], '/responses')).toMatchObject({ stream: true, tools: [{ type: 'function', name: 'get_weather' }] });
      expect(parts.filter((p) => p.type.startsWith('tool-call'))).toEqual([
        { type: 'tool-call-start', toolCallId: 'call_weather_2', toolName: 'get_weather' },
        { type: 'tool-call-delta', toolCallId: 'call_weather_2', argsTextDelta: '{"ci' },
        { type: 'tool-call-delta', toolCallId: 'call_weather_2', argsTextDelta: 'ty": "Pa' },
        { type: 'tool-call-delta', toolCallId: 'call_weather_2', argsTextDelta: 'ris"}' },
        {
          type: 'tool-call',
          toolCall: { toolCallId: 'call_weather_2', toolName: 'get_weather', args: { city: 'Paris' }, providerMetadata: { openai: { itemId: 'fc_aisdk_2' } } },
        },
      ]);
      expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool-calls', usage: { inputTokens: 90, outputTokens: 18, totalTokens: 108 } });
    });

    it('returns reasoning with its encrypted content and sends it back byte for byte; another provider\'s is dropped', async () => {
      server.reply({ json: fixture('responses-reasoning-tool-call') }, { json: fixture('responses-text') });
      const model = fromAISDK(provider().responses('o4-mini'));
      const request: ModelRequest = {
        ...askWithTool,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        settings: { effort: 'low' },
        providerOptions: { openai: { store: false, include: ['reasoning.encrypted_content'] } },
      };
      const first = await model.doGenerate(request);
      const encrypted = fixture('responses-reasoning-tool-call').output[0].encrypted_content;
      expect(first.reasoning).toEqual([{
        type: 'reasoning', text: 'The user wants the weather; call the tool.',
        providerMetadata: { openai: { itemId: 'rs_aisdk_1', reasoningEncryptedContent: encrypted } },
      }]);
      expect(first.usage).toEqual({ inputTokens: 90, outputTokens: 40, totalTokens: 130, cacheReadTokens: 0, reasoningTokens: 24 });
      // The run's effort reaches the wire (v4 as its reasoning option, v2 and v3 as providerOptions.openai.reasoningEffort).
      expect(expectSent(server.requests[0], '/responses')).toMatchObject({ store: false, reasoning: { effort: 'low' } });

      await model.doGenerate({
        ...request,
        messages: [
          ...request.messages,
          {
            role: 'assistant', content: '', toolCalls: first.toolCalls,
            reasoning: [...first.reasoning!, { type: 'reasoning', text: 'Claude thought this.', providerMetadata: { anthropic: { signature: 'sig' } } }],
          },
          { role: 'tool', toolCallId: 'call_weather_1', toolName: 'get_weather', content: { tempC: 21 } },
        ],
      });
      const input = expectSent(server.requests[1], '/responses').input as Array<Record<string, unknown>>;
      expect(input.slice(1)).toEqual([
        { type: 'reasoning', id: 'rs_aisdk_1', encrypted_content: encrypted, summary: [{ type: 'summary_text', text: 'The user wants the weather; call the tool.' }] },
        expect.objectContaining({ type: 'function_call', call_id: 'call_weather_1', name: 'get_weather', arguments: '{"city":"Paris"}' }),
        { type: 'function_call_output', call_id: 'call_weather_1', output: '{"tempC":21}' },
      ]);
    });
  });

  describe('failures', () => {
    it('a 503 is a retryable Cairn APICallError, and the AI SDK model did not retry it itself', async () => {
      server.reply({ status: 503, headers: { 'x-request-id': 'req_503' }, json: fixture('error-503') });
      const error = await failure(chat().doGenerate(ask));
      expect(error).toBeInstanceOf(APICallError);
      expect(error).toMatchObject({
        code: 'api_call_failed', provider: 'openai', statusCode: 503, isRetryable: true, requestId: 'req_503',
        url: `${server.url}/chat/completions`, message: expect.stringContaining('overloaded'), responseBody: expect.stringContaining('server_error'),
      });
      expect(server.requests).toHaveLength(1);
      expect(visibleText(error)).not.toContain(CANARY_KEY);
    });

    it('a 429 carries the wait the provider asked for (retry-after in a generate call, retry-after-ms in a stream)', async () => {
      server.reply({ status: 429, headers: { 'retry-after': '20' }, json: fixture('error-429') });
      const generated = await failure(chat().doGenerate(ask));
      expect(generated).toBeInstanceOf(APICallError);
      expect(generated).toMatchObject({ statusCode: 429, isRetryable: true, retryAfterMs: 20_000 });

      server.reply({ status: 429, headers: { 'retry-after-ms': '1500' }, json: fixture('error-429') });
      const streamed = await failure(collect(responses().doStream!(ask)));
      expect(streamed).toBeInstanceOf(APICallError);
      expect(streamed).toMatchObject({ statusCode: 429, isRetryable: true, retryAfterMs: 1500, url: `${server.url}/responses` });
      expect(server.requests).toHaveLength(2);
      expect(visibleText(generated, streamed)).not.toContain(CANARY_KEY);
    });

    it('a 401 whose body repeats the key shows it nowhere', async () => {
      server.reply({ status: 401, json: { error: { message: `Incorrect API key provided: ${CANARY_KEY}.`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } } });
      const error = await failure(chat().doGenerate(ask));
      expect(error).toMatchObject({ statusCode: 401, isRetryable: false, message: expect.stringContaining('Incorrect API key provided') });
      expect(visibleText(error)).not.toContain(CANARY_KEY);
    });

    it('a 2xx body that is not JSON is an invalid response no retry cures', async () => {
      server.reply({ body: '{"id": "chatcmpl-broken", "choices": [' });
      const error = await failure(chat().doGenerate(ask));
      expect(error).toBeInstanceOf(APICallError);
      expect(error).toMatchObject({ code: 'invalid_response', statusCode: 200, isRetryable: false });
    });

    it('an error event in the stream is a retryable APICallError', async () => {
      const event = { data: { error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } } };
      const [roleChunk, firstText] = fixture('chat-text-stream');
      for (const sse of [[event, '[DONE]'], [roleChunk, firstText, event, '[DONE]']]) {
        server.reply({ sse });
        const error = await failure(collect(chat().doStream!(ask)));
        expect(error).toBeInstanceOf(APICallError);
        expect(error).toMatchObject({ statusCode: 500, isRetryable: true, message: expect.stringContaining('The server had an error') });
      }
    });

    it('a stream cut mid-way fails with the read error; one that ends cleanly too early is a retryable APICallError', async () => {
      server.reply({ sse: fixture('chat-text-stream'), cutAfter: 3 });
      const cut = await failure(collect(chat().doStream!(ask)));
      expect(cut).toBeInstanceOf(TypeError);
      expect((cut as { cause?: { code?: string } }).cause?.code).toBe('UND_ERR_SOCKET');

      server.reply({ sse: fixture('chat-text-stream').slice(0, 3) });
      const early = await failure(collect(chat().doStream!(ask)));
      expect(early).toBeInstanceOf(APICallError);
      expect(early).toMatchObject({ isRetryable: true, message: expect.stringContaining('ended early') });
    });

    it('a hang past the transport timeout rejects with the TimeoutError, in a call and in a stream', async () => {
      server.reply({ hang: true }, { hang: true });
      expect(await failure(chat().doGenerate({ ...ask, signal: AbortSignal.timeout(200) }))).toMatchObject({ name: 'TimeoutError' });
      expect(await failure(collect(responses().doStream!({ ...ask, signal: AbortSignal.timeout(200) })))).toMatchObject({ name: 'TimeoutError' });
    });

    it('no key anywhere is a MissingAPIKeyError at the first call, not at creation', async () => {
      const saved = process.env.OPENAI_API_KEY;
      delete process.env.OPENAI_API_KEY;
      try {
        const model = fromAISDK(createOpenAI({ baseURL: server.url }).chat('gpt-4o'));
        const error = await failure(model.doGenerate(ask));
        expect(error).toBeInstanceOf(MissingAPIKeyError);
        expect(error).toMatchObject({ code: 'api_key_missing', provider: 'openai', envVar: 'OPENAI_API_KEY' });
        expect(server.requests).toHaveLength(0);
      } finally {
        if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
      }
    });
  });

  describe('in a Cairn run', () => {
    const tools = (calls: unknown[]) => ({
      get_weather: {
        description: weatherTool.description,
        parameters: weatherTool.parameters,
        execute: async (args: { city: string }) => {
          calls.push(args);
          return { city: args.city, tempC: 21 };
        },
      },
    });

    it('runAgent drives a two-step tool loop through the adapted chat model', async () => {
      server.reply({ sse: fixture('chat-tool-call-stream') }, { sse: fixture('chat-text-stream') });
      const calls: unknown[] = [];
      const model: LanguageModel = chat();
      const result = await runAgent({ model, prompt: 'Weather in Paris?', tools: tools(calls) });
      expect(result.status).toBe('completed');
      expect(result.text).toBe('It is sunny in Paris.');
      expect(calls).toEqual([{ city: 'Paris' }]);
      expect(result.usage).toMatchObject({ inputTokens: 200, outputTokens: 26, totalTokens: 226 });
      expect(server.requests).toHaveLength(2);
      const second = expectSent(server.requests[1], '/chat/completions');
      expect(second.messages).toEqual([
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_weather_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_weather_1', content: '{"city":"Paris","tempC":21}' },
      ]);
      expect(second.tools).toEqual([{ type: 'function', function: expect.objectContaining({ name: 'get_weather', parameters: weatherTool.parameters }) }]);
    });

    it('Cairn retries a 429 after the wait it asked for, and fails a 503 over to an AI SDK model passed as it is', async () => {
      server.reply(
        { status: 429, headers: { 'retry-after-ms': '10' }, json: fixture('error-429') },
        { sse: fixture('chat-text-stream') },
      );
      const retried = await runAgent({ model: chat(), prompt: 'Weather in Paris?', maxRetries: 1 });
      expect(retried).toMatchObject({ status: 'completed', text: 'It is sunny in Paris.' });
      expect(server.requests.map((r) => (r.body as { model: string }).model)).toEqual(['gpt-4o', 'gpt-4o']);

      server.requests.length = 0;
      server.reply({ status: 503, json: fixture('error-503') }, { sse: fixture('chat-text-stream') });
      const failedOver = await runAgent({
        model: chat(), fallbackModels: [provider().chat('gpt-4o-mini')], prompt: 'Weather in Paris?', maxRetries: 0,
      });
      expect(failedOver).toMatchObject({ status: 'completed', text: 'It is sunny in Paris.' });
      expect(server.requests.map((r) => (r.body as { model: string }).model)).toEqual(['gpt-4o', 'gpt-4o-mini']);
    });

    it('streamAgent streams the answer of the adapted Responses model after its tool call', async () => {
      server.reply({ sse: fixture('responses-tool-call-stream') }, { sse: fixture('responses-text-stream') });
      const calls: unknown[] = [];
      const stream = streamAgent({ model: responses(), prompt: 'Weather in Paris?', tools: tools(calls) });
      let text = '';
      for await (const delta of stream.textStream) text += delta;
      const result = await stream.result;
      expect(text).toBe('It is sunny in Paris.');
      expect(result).toMatchObject({ status: 'completed', text: 'It is sunny in Paris.' });
      expect(calls).toEqual([{ city: 'Paris' }]);
      const input = expectSent(server.requests[1], '/responses').input as Array<Record<string, unknown>>;
      expect(input.slice(1)).toEqual([
        // The call's item id came back with it: @ai-sdk/openai 2 refers to the stored item, 3 and 4 send the call again.
        version === 'v2'
          ? { type: 'item_reference', id: 'fc_aisdk_2' }
          : expect.objectContaining({ type: 'function_call', call_id: 'call_weather_2', name: 'get_weather', arguments: '{"city":"Paris"}' }),
        { type: 'function_call_output', call_id: 'call_weather_2', output: '{"city":"Paris","tempC":21}' },
      ]);
    });
  });
});

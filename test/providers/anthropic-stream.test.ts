/** cairn/anthropic, a streamed turn (doStream): the parts in order, the round trip of thinking, and failures inside the stream. */
import { describe, expect, it } from 'vitest';
import { APICallError } from '../../src/errors/index.js';
import type { ModelStreamPart, ReasoningPart } from '../../src/models/types.js';
import { CANARY_KEY, wireServerForFile, visibleText } from './wire-server.js';
import {
  ask, collect, collectUntilError, expectRequest, fixture, modelOf, sse, WEATHER_TOOL, WIRE_WEATHER_TOOL,
} from './fixtures/anthropic/harness.js';

const server = await wireServerForFile();

const MODEL = 'claude-sonnet-4-5-20250929';
const user = (text: string) => ({ role: 'user', content: [{ type: 'text', text }] });
const plainBody = (text: string) => ({ model: 'claude-sonnet-4-5', max_tokens: 8192, messages: [user(text)], stream: true });

describe('doStream', () => {
  it('plain text: metadata, the text in pieces, then finish with usage', async () => {
    server.reply(sse('stream-text'));
    const parts = await collect(modelOf(server).doStream!(ask('Hi')));
    expectRequest(server.requests[0], plainBody('Hi'));
    expect(parts).toEqual([
      { type: 'response-metadata', id: 'msg_01StR34mT3xt', modelId: MODEL },
      { type: 'text-delta', delta: 'Hello' },
      { type: 'text-delta', delta: '! How can' },
      { type: 'text-delta', delta: ' I help?' },
      { type: 'finish', finishReason: 'stop', usage: { inputTokens: 21, outputTokens: 12, totalTokens: 33, cacheReadTokens: 0, cacheWriteTokens: 0 } },
    ]);
  });

  it('a tool call whose arguments arrive across several deltas', async () => {
    server.reply(sse('stream-tool-split'));
    const parts = await collect(modelOf(server).doStream!(ask('Weather in Paris?', { tools: [WEATHER_TOOL] })));
    expectRequest(server.requests[0], { ...plainBody('Weather in Paris?'), tools: [WIRE_WEATHER_TOOL], tool_choice: { type: 'auto' } });
    expect(parts).toEqual([
      { type: 'response-metadata', id: 'msg_01StR34mT00l', modelId: MODEL },
      { type: 'text-delta', delta: 'Checking.' },
      { type: 'tool-call-start', toolCallId: 'toolu_01Spl1tArgs', toolName: 'get_weather' },
      { type: 'tool-call-delta', toolCallId: 'toolu_01Spl1tArgs', argsTextDelta: '{"city": "Pa' },
      { type: 'tool-call-delta', toolCallId: 'toolu_01Spl1tArgs', argsTextDelta: 'ris", "un' },
      { type: 'tool-call-delta', toolCallId: 'toolu_01Spl1tArgs', argsTextDelta: 'it": "celsius"}' },
      { type: 'tool-call', toolCall: { toolCallId: 'toolu_01Spl1tArgs', toolName: 'get_weather', args: { city: 'Paris', unit: 'celsius' } } },
      { type: 'finish', finishReason: 'tool-calls', usage: { inputTokens: 300, outputTokens: 64, totalTokens: 364, cacheReadTokens: 0, cacheWriteTokens: 0 } },
    ]);
  });

  it('parallel tool calls, each block by its index', async () => {
    server.reply(sse('stream-parallel-tools'));
    const parts = await collect(modelOf(server).doStream!(ask('Paris weather and Oslo time?', { tools: [WEATHER_TOOL] })));
    expectRequest(server.requests[0], { ...plainBody('Paris weather and Oslo time?'), tools: [WIRE_WEATHER_TOOL], tool_choice: { type: 'auto' } });
    expect(parts.slice(1, -1)).toEqual([
      { type: 'tool-call-start', toolCallId: 'toolu_01P4rA', toolName: 'get_weather' },
      { type: 'tool-call-delta', toolCallId: 'toolu_01P4rA', argsTextDelta: '{"city":' },
      { type: 'tool-call-delta', toolCallId: 'toolu_01P4rA', argsTextDelta: ' "Paris"}' },
      { type: 'tool-call', toolCall: { toolCallId: 'toolu_01P4rA', toolName: 'get_weather', args: { city: 'Paris' } } },
      { type: 'tool-call-start', toolCallId: 'toolu_01P4rB', toolName: 'get_time' },
      { type: 'tool-call-delta', toolCallId: 'toolu_01P4rB', argsTextDelta: '{"zone": "Europe/' },
      { type: 'tool-call-delta', toolCallId: 'toolu_01P4rB', argsTextDelta: 'Oslo"}' },
      { type: 'tool-call', toolCall: { toolCallId: 'toolu_01P4rB', toolName: 'get_time', args: { zone: 'Europe/Oslo' } } },
    ]);
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool-calls' });
  });

  it('thinking with its signature: deltas, a complete reasoning part, and the block sent back unchanged before the call', async () => {
    const signature = fixture<Array<{ data: { delta?: { signature?: string } } }>>('stream-thinking-tool')[4]!.data.delta!.signature!;
    const thought = 'The user wants the weather in Paris. I should call get_weather with city Paris.';
    server.reply(sse('stream-thinking-tool'), sse('stream-text'));
    const model = modelOf(server);
    const settings = { effort: 'medium' as const, temperature: 1 };
    const parts = await collect(model.doStream!(ask('Weather in Paris?', { tools: [WEATHER_TOOL], settings })));
    const thinkingRequest = { max_tokens: 8192 + 4096, thinking: { type: 'enabled', budget_tokens: 8192 } };
    expectRequest(server.requests[0], {
      ...plainBody('Weather in Paris?'), tools: [WIRE_WEATHER_TOOL], tool_choice: { type: 'auto' }, ...thinkingRequest,
    });
    const reasoning: ReasoningPart = { type: 'reasoning', text: thought, providerMetadata: { anthropic: { signature } } };
    expect(parts.slice(0, 5)).toEqual([
      { type: 'response-metadata', id: 'msg_01StR34mTh1nk', modelId: MODEL },
      { type: 'warnings', warnings: [{ type: 'unsupported-setting', setting: 'temperature', details: 'The API refuses temperature while thinking is on.' }] },
      { type: 'reasoning-delta', delta: 'The user wants the weather in Paris. ' },
      { type: 'reasoning-delta', delta: 'I should call get_weather with city Paris.' },
      { type: 'reasoning', reasoning },
    ]);
    const call = parts.find((p): p is Extract<ModelStreamPart, { type: 'tool-call' }> => p.type === 'tool-call')!.toolCall;
    expect(call).toEqual({ toolCallId: 'toolu_01Th1nkW3ath3rPar1s', toolName: 'get_weather', args: { city: 'Paris' } });

    await collect(model.doStream!(ask('', {
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: 'Let me look that up.', toolCalls: [call], reasoning: [JSON.parse(JSON.stringify(reasoning))] },
        { role: 'tool', toolCallId: call.toolCallId, toolName: 'get_weather', content: { tempC: 18 } },
      ],
      tools: [WEATHER_TOOL],
      settings,
    })));
    expectRequest(server.requests[1], {
      ...plainBody('Weather in Paris?'),
      messages: [
        user('Weather in Paris?'),
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: thought, signature },
            { type: 'text', text: 'Let me look that up.' },
            { type: 'tool_use', id: 'toolu_01Th1nkW3ath3rPar1s', name: 'get_weather', input: { city: 'Paris' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01Th1nkW3ath3rPar1s', content: '{"tempC":18}' }] },
      ],
      tools: [WIRE_WEATHER_TOOL],
      tool_choice: { type: 'auto' },
      ...thinkingRequest,
    });
  });

  it('redacted thinking arrives whole in its start event and becomes a reasoning part with the data', async () => {
    const data = fixture<Array<{ data: { content_block?: { data?: string } } }>>('stream-redacted')[1]!.data.content_block!.data!;
    server.reply(sse('stream-redacted'));
    const parts = await collect(modelOf(server).doStream!(ask('Hi')));
    expectRequest(server.requests[0], plainBody('Hi'));
    expect(parts.slice(1)).toEqual([
      { type: 'reasoning', reasoning: { type: 'reasoning', text: '', providerMetadata: { anthropic: { redactedData: data } } } },
      { type: 'text-delta', delta: 'Done.' },
      { type: 'finish', finishReason: 'stop', usage: { inputTokens: 402, outputTokens: 30, totalTokens: 432, cacheReadTokens: 0, cacheWriteTokens: 0 } },
    ]);
  });

  it('refusal and length as finish reasons', async () => {
    server.reply(sse('stream-refusal'), sse('stream-length'));
    const refused = await collect(modelOf(server).doStream!(ask('Something harmful.')));
    const cut = await collect(modelOf(server).doStream!(ask('Tell me a story.', { settings: { maxOutputTokens: 16 } })));
    expectRequest(server.requests[0], plainBody('Something harmful.'));
    expectRequest(server.requests[1], { ...plainBody('Tell me a story.'), max_tokens: 16 });
    expect(refused.at(-1)).toMatchObject({ type: 'finish', finishReason: 'refusal' });
    expect(cut.filter((p) => p.type === 'text-delta')).toHaveLength(2);
    expect(cut.at(-1)).toMatchObject({ type: 'finish', finishReason: 'length' });
  });

  it('usage with cache reads and writes from message_start, output from message_delta', async () => {
    server.reply(sse('stream-cached-usage'));
    const parts = await collect(modelOf(server).doStream!(ask('Again?', { settings: { promptCaching: true } })));
    expectRequest(server.requests[0], {
      ...plainBody('Again?'), messages: [{ role: 'user', content: [{ type: 'text', text: 'Again?', cache_control: { type: 'ephemeral' } }] }],
    });
    expect(parts.at(-1)).toEqual({
      type: 'finish', finishReason: 'stop',
      usage: { inputTokens: 2050, outputTokens: 7, totalTokens: 2057, cacheReadTokens: 1800, cacheWriteTokens: 200 },
    });
  });
});

describe('doStream failures inside the stream', () => {
  it('an overloaded_error event is a retryable 529', async () => {
    server.reply(sse('stream-overloaded', { headers: { 'request-id': 'req_011Overloaded' } }));
    const { parts, error } = await collectUntilError(modelOf(server).doStream!(ask('Hi')));
    expectRequest(server.requests[0], plainBody('Hi'));
    expect(parts).toEqual([{ type: 'response-metadata', id: 'msg_01StR34m0v3r', modelId: MODEL }]);
    expect(APICallError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ statusCode: 529, isRetryable: true, requestId: 'req_011Overloaded', provider: 'anthropic' });
    expect((error as Error).message).toContain('overloaded_error: Overloaded');
    expect(visibleText(error)).not.toContain(CANARY_KEY);
  });

  for (const [type, statusCode, isRetryable] of [
    ['api_error', 500, true], ['rate_limit_error', 429, true], ['invalid_request_error', 400, false], ['made_up_error', undefined, false],
  ] as const) {
    it(`an ${type} event is ${statusCode ?? 'no status'}, ${isRetryable ? 'retryable' : 'not retryable'}`, async () => {
      const events = fixture<unknown[]>('stream-text').slice(0, 3);
      server.reply({ sse: [...events as never[], { event: 'error', data: { type: 'error', error: { type, message: 'Something went wrong' } } }] });
      const { parts, error } = await collectUntilError(modelOf(server).doStream!(ask('Hi')));
      expectRequest(server.requests[0], plainBody('Hi'));
      expect(parts).toHaveLength(1);
      expect(APICallError.isInstance(error)).toBe(true);
      expect((error as APICallError).statusCode).toBe(statusCode);
      expect((error as APICallError).isRetryable).toBe(isRetryable);
      expect(visibleText(error)).not.toContain(CANARY_KEY);
    });
  }

  it('a body that ends without message_stop is a retryable error saying the stream ended early', async () => {
    server.reply(sse('stream-early-end'));
    const { parts, error } = await collectUntilError(modelOf(server).doStream!(ask('Hi')));
    expectRequest(server.requests[0], plainBody('Hi'));
    expect(parts.map((p) => p.type)).toEqual(['response-metadata', 'text-delta']);
    expect(APICallError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ isRetryable: true, statusCode: 200 });
    expect((error as Error).message).toMatch(/ended early/);
    expect(visibleText(error)).not.toContain(CANARY_KEY);
  });

  it('a socket cut mid-way is a retryable APICallError naming anthropic and the endpoint, after the parts before it', async () => {
    server.reply(sse('stream-text', { cutAfter: 5 }));
    const { parts, error } = await collectUntilError(modelOf(server).doStream!(ask('Hi')));
    expectRequest(server.requests[0], plainBody('Hi'));
    expect(parts).toEqual([
      { type: 'response-metadata', id: 'msg_01StR34mT3xt', modelId: MODEL },
      { type: 'text-delta', delta: 'Hello' },
      { type: 'text-delta', delta: '! How can' },
    ]);
    expect(error).toMatchObject({ name: 'APICallError', provider: 'anthropic', isRetryable: true, url: `${server.url}/v1/messages` });
    expect(visibleText(error)).not.toContain(CANARY_KEY);
  });

  it('a stream event that is not JSON is an invalid_response error', async () => {
    server.reply({ chunks: ['event: message_start\ndata: {"type": "message_start", "message": {\n\n'] });
    const { error } = await collectUntilError(modelOf(server).doStream!(ask('Hi')));
    expectRequest(server.requests[0], plainBody('Hi'));
    expect(error).toMatchObject({ name: 'APICallError', code: 'invalid_response', isRetryable: false });
    expect(visibleText(error)).not.toContain(CANARY_KEY);
  });
});

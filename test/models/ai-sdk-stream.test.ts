/**
 * fromAISDK's streams and failures against stand-in models: the order of the
 * parts, reasoning completed at its end, calls the provider ran left out,
 * streams that end early or break, error parts, AI SDK errors as Cairn errors,
 * and which objects count as AI SDK models.
 */
import { describe, expect, it } from 'vitest';
import type { LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { APICallError as AISDKAPICallError } from '@ai-sdk/provider';
import { fromAISDK, isAISDKModel } from '../../src/models/ai-sdk/index.js';
import type { ModelRequest } from '../../src/models/types.js';
import { APICallError, InvalidOptionsError } from '../../src/errors/index.js';
import { createMockModel } from '../../src/testing/index.js';
import { CANARY_KEY, visibleText } from '../providers/wire-server.js';
import { collect, recordingModel } from './fixtures/ai-sdk/recording-model.js';

describe('fromAISDK stream mapping', () => {
  const request: ModelRequest = { messages: [{ role: 'user', content: 'hi' }], tools: [], toolChoice: 'auto', settings: { effort: 'high' } };

  it('maps every part in order: warnings first, a complete reasoning part at its end, calls the provider ran left out, finish last', async () => {
    const parts: LanguageModelV3StreamPart[] = [
      { type: 'stream-start', warnings: [{ type: 'unsupported', feature: 'seed' }] },
      { type: 'response-metadata', id: 'msg_1', modelId: 'claude-x-2025', timestamp: new Date(0) },
      { type: 'reasoning-start', id: 'r1', providerMetadata: { anthropic: { redacted: false } } },
      { type: 'reasoning-delta', id: 'r1', delta: 'Think' },
      { type: 'reasoning-delta', id: 'r1', delta: 'ing.' },
      { type: 'reasoning-end', id: 'r1', providerMetadata: { anthropic: { signature: 'sig-1' } } },
      { type: 'text-start', id: 't1' },
      { type: 'text-delta', id: 't1', delta: 'Hi ' },
      { type: 'raw', rawValue: { anything: true } },
      { type: 'text-delta', id: 't1', delta: 'there.' },
      { type: 'text-end', id: 't1' },
      { type: 'tool-input-start', id: 'c1', toolName: 'get_weather' },
      { type: 'tool-input-delta', id: 'c1', delta: '{"city":' },
      { type: 'tool-input-delta', id: 'c1', delta: '"Paris"}' },
      { type: 'tool-input-end', id: 'c1' },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'get_weather', input: '{"city":"Paris"}' },
      { type: 'tool-input-start', id: 'ws1', toolName: 'web_search', providerExecuted: true },
      { type: 'tool-input-delta', id: 'ws1', delta: '{}' },
      { type: 'tool-call', toolCallId: 'ws1', toolName: 'web_search', input: '{}', providerExecuted: true },
      { type: 'tool-call', toolCallId: 'c2', toolName: 'lookup', input: '{"q":"x"}', providerMetadata: { anthropic: { caller: 'direct' } } },
      {
        type: 'finish',
        finishReason: { unified: 'tool-calls', raw: 'tool_use' },
        usage: { inputTokens: { total: 12, noCache: 2, cacheRead: 10, cacheWrite: 0 }, outputTokens: { total: 8, text: 8, reasoning: undefined } },
        providerMetadata: { anthropic: { stopSequence: null } },
      },
    ];
    const { model } = recordingModel('v3', 'anthropic.messages', { parts });
    expect(await collect(fromAISDK(model).doStream!(request))).toEqual([
      {
        type: 'warnings',
        warnings: [
          { type: 'unsupported-setting', setting: 'effort', details: expect.any(String) },
          { type: 'unsupported-setting', setting: 'seed' },
        ],
      },
      { type: 'response-metadata', id: 'msg_1', modelId: 'claude-x-2025' },
      { type: 'reasoning-delta', delta: 'Think' },
      { type: 'reasoning-delta', delta: 'ing.' },
      { type: 'reasoning', reasoning: { type: 'reasoning', text: 'Thinking.', providerMetadata: { anthropic: { redacted: false, signature: 'sig-1' } } } },
      { type: 'text-delta', delta: 'Hi ' },
      { type: 'text-delta', delta: 'there.' },
      { type: 'tool-call-start', toolCallId: 'c1', toolName: 'get_weather' },
      { type: 'tool-call-delta', toolCallId: 'c1', argsTextDelta: '{"city":' },
      { type: 'tool-call-delta', toolCallId: 'c1', argsTextDelta: '"Paris"}' },
      { type: 'tool-call', toolCall: { toolCallId: 'c1', toolName: 'get_weather', args: { city: 'Paris' } } },
      // A call that came whole still gets its start and its arguments.
      { type: 'tool-call-start', toolCallId: 'c2', toolName: 'lookup' },
      { type: 'tool-call-delta', toolCallId: 'c2', argsTextDelta: '{"q":"x"}' },
      { type: 'tool-call', toolCall: { toolCallId: 'c2', toolName: 'lookup', args: { q: 'x' }, providerMetadata: { anthropic: { caller: 'direct' } } } },
      {
        type: 'finish', finishReason: 'tool-calls',
        usage: { inputTokens: 12, outputTokens: 8, totalTokens: 20, cacheReadTokens: 10, cacheWriteTokens: 0 },
        providerMetadata: { anthropic: { stopSequence: null } },
      },
    ]);
  });

  it('v2: the string finish reason and flat usage; no warnings part when there is nothing to say', async () => {
    const { model } = recordingModel('v2', 'openai.chat', {
      parts: [
        { type: 'stream-start', warnings: [] },
        { type: 'text-delta', id: '0', delta: 'Hi' },
        { type: 'finish', finishReason: 'length', usage: { inputTokens: 3, outputTokens: 1, totalTokens: 4 } },
      ],
    });
    expect(await collect(fromAISDK(model).doStream!({ messages: [], tools: [], toolChoice: 'auto' }))).toEqual([
      { type: 'text-delta', delta: 'Hi' },
      { type: 'finish', finishReason: 'length', usage: { inputTokens: 3, outputTokens: 1, totalTokens: 4 } },
    ]);
  });

  it('an error part is thrown as an APICallError with the status its type implies, so it is classified', async () => {
    const { model } = recordingModel('v3', 'anthropic.messages', {
      parts: [
        { type: 'stream-start', warnings: [] },
        { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
        { type: 'finish', finishReason: { unified: 'error', raw: undefined }, usage: { inputTokens: {}, outputTokens: {} } },
      ],
    });
    const error = await collect(fromAISDK(model).doStream!({ messages: [], tools: [], toolChoice: 'auto' })).catch((e: unknown) => e);
    expect(APICallError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ statusCode: 529, isRetryable: true, provider: 'anthropic', message: expect.stringContaining('Overloaded') });
  });

  it('a stream that ends without a finish, or with a finish the provider never sent, ended early', async () => {
    const cases: unknown[][] = [
      [{ type: 'text-delta', id: '0', delta: 'Hi' }],
      [{ type: 'text-delta', id: '0', delta: 'Hi' }, { type: 'finish', finishReason: { unified: 'other', raw: undefined }, usage: { inputTokens: {}, outputTokens: {} } }],
      [{ type: 'text-delta', id: '0', delta: 'Hi' }, { type: 'finish', finishReason: { unified: 'interrupted', raw: undefined }, usage: { inputTokens: { total: 3 }, outputTokens: {} } }],
      [{ type: 'text-delta', id: '0', delta: 'Hi' }, { type: 'finish', finishReason: 'unknown', usage: {} }],
    ];
    for (const parts of cases) {
      const { model } = recordingModel('v4', 'openai.chat', { parts });
      const error = await collect(fromAISDK(model).doStream!({ messages: [], tools: [], toolChoice: 'auto' })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(APICallError);
      expect(error).toMatchObject({ isRetryable: true, message: expect.stringContaining('ended early') });
    }
    // A finish without a raw reason but with usage is a finished turn (some providers send no reason).
    const { model } = recordingModel('v3', 'openai.chat', {
      parts: [{ type: 'finish', finishReason: { unified: 'other', raw: undefined }, usage: { inputTokens: { total: 3 }, outputTokens: { total: 1 } } }],
    });
    expect((await collect(fromAISDK(model).doStream!({ messages: [], tools: [], toolChoice: 'auto' }))).at(-1)).toMatchObject({ type: 'finish', finishReason: 'other' });
  });

  it('a read error passes through as it is, and so does the reason of an aborted signal', async () => {
    const cut = Object.assign(new TypeError('terminated'), { cause: { code: 'UND_ERR_SOCKET' } });
    const { model } = recordingModel('v3', 'openai.chat', { parts: [{ type: 'text-delta', id: '0', delta: 'Hi' }, cut] });
    await expect(collect(fromAISDK(model).doStream!({ messages: [], tools: [], toolChoice: 'auto' }))).rejects.toBe(cut);

    const controller = new AbortController();
    const reason = new Error('stopped by the caller');
    controller.abort(reason);
    const aborted = recordingModel('v3', 'openai.chat', { error: Object.assign(new Error('This operation was aborted'), { name: 'AbortError' }) });
    await expect(fromAISDK(aborted.model).doGenerate({ messages: [], tools: [], toolChoice: 'auto', signal: controller.signal })).rejects.toBe(reason);
  });
});

describe('fromAISDK errors', () => {
  it('an AI SDK APICallError becomes Cairn\'s, with status, retryability, the wait asked for, request id and a redacted body', async () => {
    const thrown = new AISDKAPICallError({
      message: `Rate limited for key ${CANARY_KEY}`,
      url: 'https://api.example.com/v1/messages?beta=true',
      requestBodyValues: { model: 'x', messages: [] },
      statusCode: 429,
      responseHeaders: { 'retry-after-ms': '1500', 'request-id': 'req_42' },
      responseBody: `{"error":{"type":"rate_limit_error","message":"slow down ${CANARY_KEY}"}}`,
    });
    const { model } = recordingModel('v3', 'anthropic.messages', { error: thrown });
    const error = await fromAISDK(model).doGenerate({ messages: [], tools: [], toolChoice: 'auto' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APICallError);
    expect(error).toMatchObject({
      name: 'APICallError', code: 'api_call_failed', provider: 'anthropic', url: 'https://api.example.com/v1/messages',
      statusCode: 429, isRetryable: true, retryAfterMs: 1500, requestId: 'req_42',
      responseBody: expect.stringContaining('rate_limit_error'),
    });
    expect(visibleText(error)).not.toContain(CANARY_KEY);
  });

  it('other AI SDK errors become a ModelCallError that says which one', async () => {
    const thrown = Object.assign(new Error("'file part media type audio/ogg' functionality not supported."), { name: 'AI_UnsupportedFunctionalityError' });
    const { model } = recordingModel('v2', 'openai.chat', { error: thrown });
    const error = await fromAISDK(model).doGenerate({ messages: [], tools: [], toolChoice: 'auto' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'ModelCallError', code: 'model_call_failed', isRetryable: false, message: expect.stringContaining('UnsupportedFunctionalityError') });
  });
});

describe('isAISDKModel and fromAISDK', () => {
  it('recognizes AI SDK models of the supported versions, and nothing else', () => {
    for (const version of ['v2', 'v3', 'v4'] as const) expect(isAISDKModel(recordingModel(version, 'openai.chat').model)).toBe(true);
    const { model } = recordingModel('v3', 'openai.chat');
    expect(isAISDKModel({ ...model, specificationVersion: 'v1' })).toBe(false);
    expect(isAISDKModel({ ...model, doStream: undefined })).toBe(false);
    expect(isAISDKModel({ ...model, modelId: undefined })).toBe(false);
    expect(isAISDKModel(createMockModel({ responses: [] }))).toBe(false);
    expect(isAISDKModel('openai/gpt-4o')).toBe(false);
    expect(isAISDKModel(null)).toBe(false);
    expect(isAISDKModel({ ...model, get provider(): string { throw new Error('not configured'); } })).toBe(false);
  });

  it('returns a Cairn model as it is, refuses other things, and takes names the caller gives', async () => {
    const mock = createMockModel({ responses: [] });
    expect(fromAISDK(mock)).toBe(mock);
    const { model } = recordingModel('v3', 'openai.chat');
    expect(() => fromAISDK({ ...model, specificationVersion: 'v1' } as never)).toThrow(InvalidOptionsError);
    expect(() => fromAISDK({ ...model, specificationVersion: 'v1' } as never)).toThrow(/spec version "v1"/);

    const bedrock = recordingModel('v3', 'amazon-bedrock');
    const adapted = fromAISDK(bedrock.model, { provider: 'aws', protocol: 'converse', providerKey: 'bedrock' });
    expect(adapted).toMatchObject({ provider: 'aws', protocol: 'converse', modelId: 'model-1' });
    await adapted.doGenerate({
      messages: [{
        role: 'assistant', content: '',
        reasoning: [
          { type: 'reasoning', text: 'mine', providerMetadata: { bedrock: { signature: 's' } } },
          { type: 'reasoning', text: 'not mine', providerMetadata: { 'amazon-bedrock': { signature: 's' } } },
        ],
      }],
      tools: [],
      toolChoice: 'auto',
    });
    const prompt = (bedrock.calls[0] as unknown as LanguageModelV3CallOptions).prompt;
    expect(prompt).toEqual([{ role: 'assistant', content: [{ type: 'reasoning', text: 'mine', providerOptions: { bedrock: { signature: 's' } } }] }]);
  });
});

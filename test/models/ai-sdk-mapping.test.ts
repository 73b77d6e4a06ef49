/**
 * fromAISDK's mapping, spec version by spec version, against models that
 * record the call options they get and answer with scripted results: the
 * request (prompt parts, tools, settings, what is sent back), the response
 * (content, finish reasons and usage of both shapes, warnings), the stream and
 * its failures. The real provider packages are exercised in ai-sdk.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import type { LanguageModelV2 } from '@ai-sdk/provider-v2';
import { APICallError as AISDKAPICallError } from '@ai-sdk/provider';
import { fromAISDK, isAISDKModel } from '../../src/models/ai-sdk/index.js';
import {
  toolContent, type ModelMessage, type ModelRequest, type ModelStreamPart,
} from '../../src/models/types.js';
import { APICallError, InvalidOptionsError } from '../../src/errors/index.js';
import { createMockModel } from '../../src/testing/index.js';
import type { JsonValue } from '../../src/agent/json.js';
import { CANARY_KEY, visibleText } from '../providers/wire-server.js';

type Version = 'v2' | 'v3' | 'v4';

/** A model of any spec version that records its call options and answers with what the test gives it. */
function recordingModel(version: Version, provider: string, answer: { result?: unknown; parts?: unknown[]; error?: unknown } = {}) {
  const calls: Record<string, unknown>[] = [];
  const model = {
    specificationVersion: version,
    provider,
    modelId: 'model-1',
    supportedUrls: {},
    async doGenerate(options: Record<string, unknown>) {
      calls.push(options);
      if (answer.error) throw answer.error;
      return answer.result ?? { content: [], finishReason: 'stop', usage: {}, warnings: [] };
    },
    async doStream(options: Record<string, unknown>) {
      calls.push(options);
      if (answer.error) throw answer.error;
      const parts = answer.parts ?? [];
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const part of parts) {
              if (part instanceof Error) controller.error(part);
              else controller.enqueue(part);
            }
            if (!parts.some((p) => p instanceof Error)) controller.close();
          },
        }),
      };
    },
  };
  return { model, calls };
}

async function collect(stream: AsyncIterable<ModelStreamPart>): Promise<ModelStreamPart[]> {
  const out: ModelStreamPart[] = [];
  for await (const part of stream) out.push(part);
  return out;
}

const PNG_B64 = 'iVBORw0KGgo=';
const PNG = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const PDF_B64 = 'JVBERi0xLjQ=';
const PDF = new TextEncoder().encode('%PDF-1.4');
const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

const conversation: ModelMessage[] = [
  { role: 'system', content: 'Be brief.' },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'What is in these?' },
      { type: 'image', data: PNG_B64, mediaType: 'image/png' },
      { type: 'image', url: 'https://example.com/cat.jpg' },
      { type: 'file', data: PDF_B64, mediaType: 'application/pdf', filename: 'report.pdf' },
    ],
  },
  {
    role: 'assistant',
    content: 'Let me check.',
    reasoning: [
      { type: 'reasoning', text: 'own thought', providerMetadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'enc-1' } } },
      { type: 'reasoning', text: 'foreign thought', providerMetadata: { anthropic: { signature: 'sig-1' } } },
    ],
    toolCalls: [
      { toolCallId: 'call_1', toolName: 'get_weather', args: { city: 'Paris' }, providerMetadata: { openai: { itemId: 'fc_1' } } },
      { toolCallId: 'call_2', toolName: 'lookup', args: { q: 'x' }, providerMetadata: { google: { thoughtSignature: 'ts-1' } } },
    ],
    providerMetadata: { openai: { responseId: 'resp_1', cairnTextPart: { itemId: 'msg_1' } } },
  },
  { role: 'tool', toolCallId: 'call_1', toolName: 'get_weather', content: { tempC: 21 } },
  { role: 'tool', toolCallId: 'call_2', toolName: 'lookup', content: 'not found', isError: true },
  { role: 'user', content: 'And a picture?' },
  { role: 'assistant', content: '', toolCalls: [{ toolCallId: 'call_3', toolName: 'snap', args: {} }] },
  {
    role: 'tool', toolCallId: 'call_3', toolName: 'snap',
    content: toolContent([
      { type: 'text', text: 'Here.' },
      { type: 'image', data: PNG_B64, mediaType: 'image/png' },
      { type: 'image', url: 'https://example.com/snap.png' },
      // A ToolContent is plain JSON; its interface type just has no index signature.
    ]) as unknown as JsonValue,
  },
];

/** What each version's prompt holds for `conversation`: only the file data and tool-output media differ. */
function expectedPrompt(version: Version) {
  const data = (bytes: Uint8Array) => (version === 'v4' ? { type: 'data', data: bytes } : bytes);
  const url = (href: string) => (version === 'v4' ? { type: 'url', url: new URL(href) } : new URL(href));
  const media = {
    v2: [{ type: 'media', data: PNG_B64, mediaType: 'image/png' }, { type: 'text', text: 'https://example.com/snap.png' }],
    v3: [{ type: 'image-data', data: PNG_B64, mediaType: 'image/png' }, { type: 'image-url', url: 'https://example.com/snap.png' }],
    v4: [
      { type: 'file', data: { type: 'data', data: PNG }, mediaType: 'image/png' },
      { type: 'file', data: { type: 'url', url: new URL('https://example.com/snap.png') }, mediaType: 'image' },
    ],
  }[version];
  return [
    { role: 'system', content: 'Be brief.' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in these?' },
        { type: 'file', data: data(PNG), mediaType: 'image/png' },
        { type: 'file', data: url('https://example.com/cat.jpg'), mediaType: version === 'v4' ? 'image' : 'image/*' },
        { type: 'file', data: data(PDF), mediaType: 'application/pdf', filename: 'report.pdf' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'own thought', providerOptions: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'enc-1' } } },
        { type: 'text', text: 'Let me check.', providerOptions: { openai: { itemId: 'msg_1' } } },
        { type: 'tool-call', toolCallId: 'call_1', toolName: 'get_weather', input: { city: 'Paris' }, providerOptions: { openai: { itemId: 'fc_1' } } },
        { type: 'tool-call', toolCallId: 'call_2', toolName: 'lookup', input: { q: 'x' } },
      ],
    },
    {
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: 'call_1', toolName: 'get_weather', output: { type: 'json', value: { tempC: 21 } } },
        { type: 'tool-result', toolCallId: 'call_2', toolName: 'lookup', output: { type: 'error-text', value: 'not found' } },
      ],
    },
    { role: 'user', content: [{ type: 'text', text: 'And a picture?' }] },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_3', toolName: 'snap', input: {} }] },
    {
      role: 'tool',
      content: [{
        type: 'tool-result', toolCallId: 'call_3', toolName: 'snap',
        output: { type: 'content', value: [{ type: 'text', text: 'Here.' }, ...media] },
      }],
    },
  ];
}

describe.each(['v2', 'v3', 'v4'] as const)('fromAISDK request mapping (%s)', (version) => {
  it('sends the conversation as the spec version writes it, with only the provider\'s own reasoning and metadata', async () => {
    const { model, calls } = recordingModel(version, 'openai.responses');
    const signal = new AbortController().signal;
    const request: ModelRequest = {
      messages: conversation,
      tools: [{ name: 'get_weather', description: 'Weather by city', parameters: schema }, { name: 'lookup', parameters: { type: 'object' } }],
      toolChoice: { toolName: 'get_weather' },
      settings: { temperature: 0.2, topP: 0.9, maxOutputTokens: 256 },
      responseFormat: { type: 'json', schema, name: 'answer' },
      providerOptions: { openai: { store: false }, anthropic: { sendReasoning: true } },
      signal,
    };
    const response = await fromAISDK(model).doGenerate(request);
    expect(calls).toEqual([{
      prompt: expectedPrompt(version),
      tools: [
        { type: 'function', name: 'get_weather', description: 'Weather by city', inputSchema: schema },
        { type: 'function', name: 'lookup', inputSchema: { type: 'object' } },
      ],
      toolChoice: { type: 'tool', toolName: 'get_weather' },
      temperature: 0.2,
      topP: 0.9,
      maxOutputTokens: 256,
      responseFormat: { type: 'json', schema, name: 'answer' },
      providerOptions: { openai: { store: false }, anthropic: { sendReasoning: true } },
      abortSignal: signal,
    }]);
    expect(calls[0]!.abortSignal).toBe(signal);
    // v2 cannot put a URL in a tool result: the adapter says what it did instead.
    expect(response.warnings ?? []).toEqual(version === 'v2'
      ? [{ type: 'other', message: expect.stringContaining('sent as text') }]
      : []);
  });

  it('maps every tool choice, and sends neither tools nor a choice when there are no tools', async () => {
    const { model, calls } = recordingModel(version, 'openai.chat');
    const adapted = fromAISDK(model);
    const tools = [{ name: 'f', parameters: { type: 'object' } }];
    for (const toolChoice of ['auto', 'none', 'required'] as const) await adapted.doGenerate({ messages: [], tools, toolChoice });
    await adapted.doGenerate({ messages: [{ role: 'user', content: 'hi' }], tools: [], toolChoice: 'auto' });
    expect(calls.map((c) => c.toolChoice)).toEqual([{ type: 'auto' }, { type: 'none' }, { type: 'required' }, undefined]);
    expect(calls[3]).toEqual({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] });
  });
});

describe('fromAISDK settings the spec versions do not share', () => {
  const ask = (settings: ModelRequest['settings'], providerOptions?: ModelRequest['providerOptions']): ModelRequest => ({
    messages: [{ role: 'user', content: 'hi' }], tools: [], toolChoice: 'auto', settings, ...(providerOptions ? { providerOptions } : {}),
  });

  it('v4 takes the effort as its own reasoning option', async () => {
    const { model, calls } = recordingModel('v4', 'anthropic.messages');
    const response = await fromAISDK(model).doGenerate(ask({ effort: 'high' }));
    expect(calls[0]!.reasoning).toBe('high');
    expect(response.warnings).toBeUndefined();
  });

  it('v2 and v3 OpenAI models take it as providerOptions.openai.reasoningEffort, unless the caller set one', async () => {
    for (const version of ['v2', 'v3'] as const) {
      const { model, calls } = recordingModel(version, 'openai.responses');
      const adapted = fromAISDK(model);
      await adapted.doGenerate(ask({ effort: 'minimal' }));
      await adapted.doGenerate(ask({ effort: 'minimal' }, { openai: { reasoningEffort: 'high', store: false } }));
      expect(calls.map((c) => c.providerOptions)).toEqual([
        { openai: { reasoningEffort: 'minimal' } },
        { openai: { reasoningEffort: 'high', store: false } },
      ]);
      expect(calls[0]!.reasoning).toBeUndefined();
    }
  });

  it('other v3 providers leave effort out and say so; prompt caching needs asking everywhere but OpenAI', async () => {
    const anthropic = recordingModel('v3', 'anthropic.messages');
    const response = await fromAISDK(anthropic.model).doGenerate(ask({ effort: 'high', promptCaching: true }));
    expect(anthropic.calls[0]).toEqual({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] });
    expect(response.warnings).toEqual([
      { type: 'unsupported-setting', setting: 'effort', details: expect.stringContaining('providerOptions.anthropic') },
      { type: 'unsupported-setting', setting: 'promptCaching', details: expect.stringContaining('providerOptions.anthropic') },
    ]);
    const openai = recordingModel('v3', 'openai.chat');
    expect((await fromAISDK(openai.model).doGenerate(ask({ promptCaching: true }))).warnings).toBeUndefined();
  });
});

describe('fromAISDK response mapping', () => {
  it('v3: text, reasoning with its metadata, calls it must run, nested usage, the finish reason object, warnings', async () => {
    const model: LanguageModelV3 = {
      specificationVersion: 'v3', provider: 'anthropic.messages', modelId: 'claude-x', supportedUrls: {},
      async doGenerate() {
        return {
          content: [
            { type: 'reasoning', text: 'Thinking.', providerMetadata: { anthropic: { signature: 'sig-1', skipped: undefined } } },
            { type: 'text', text: 'It is ' },
            { type: 'text', text: 'sunny.', providerMetadata: { anthropic: { citations: [] } } },
            { type: 'tool-call', toolCallId: 'toolu_1', toolName: 'get_weather', input: '{"city":"Paris"}' },
            { type: 'tool-call', toolCallId: 'srvtoolu_1', toolName: 'web_search', input: '{}', providerExecuted: true },
            { type: 'tool-result', toolCallId: 'srvtoolu_1', toolName: 'web_search', result: [] },
            { type: 'source', sourceType: 'url', id: 's1', url: 'https://example.com' },
          ],
          finishReason: { unified: 'tool-calls', raw: 'tool_use' },
          usage: {
            inputTokens: { total: 100, noCache: 20, cacheRead: 70, cacheWrite: 10 },
            outputTokens: { total: 30, text: 20, reasoning: 10 },
          },
          providerMetadata: { anthropic: { stopSequence: null } },
          response: { id: 'msg_1', modelId: 'claude-x-2025', timestamp: new Date(0) },
          warnings: [
            { type: 'unsupported', feature: 'topK', details: 'Not with thinking.' },
            { type: 'compatibility', feature: 'tool choice' },
            { type: 'other', message: 'Something else.' },
          ],
        };
      },
      async doStream() {
        throw new Error('not used');
      },
    };
    const adapted = fromAISDK(model);
    expect(adapted).toMatchObject({ specificationVersion: 'cairn-model-1', provider: 'anthropic', protocol: 'messages', modelId: 'claude-x' });
    expect(await adapted.doGenerate({ messages: [], tools: [], toolChoice: 'auto' })).toEqual({
      text: 'It is sunny.',
      toolCalls: [{ toolCallId: 'toolu_1', toolName: 'get_weather', args: { city: 'Paris' } }],
      finishReason: 'tool-calls',
      usage: { inputTokens: 100, outputTokens: 30, totalTokens: 130, cacheReadTokens: 70, cacheWriteTokens: 10, reasoningTokens: 10 },
      reasoning: [{ type: 'reasoning', text: 'Thinking.', providerMetadata: { anthropic: { signature: 'sig-1' } } }],
      response: { id: 'msg_1', modelId: 'claude-x-2025' },
      warnings: [
        { type: 'unsupported-setting', setting: 'topK', details: 'Not with thinking.' },
        { type: 'other', message: 'tool choice runs in a compatibility mode.' },
        { type: 'other', message: 'Something else.' },
      ],
      providerMetadata: { anthropic: { stopSequence: null, cairnTextPart: { citations: [] } } },
    });
  });

  it('v2: the string finish reason, flat usage with cached tokens, its warnings, arguments that are not JSON', async () => {
    const model: LanguageModelV2 = {
      specificationVersion: 'v2', provider: 'mistral', modelId: 'mistral-small', supportedUrls: {},
      async doGenerate() {
        return {
          content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'f', input: '{"city": "Par' }],
          finishReason: 'unknown',
          usage: { inputTokens: 50, outputTokens: 5, totalTokens: 56, cachedInputTokens: 40, reasoningTokens: undefined },
          warnings: [
            { type: 'unsupported-setting', setting: 'topP', details: 'Ignored.' },
            { type: 'unsupported-tool', tool: { type: 'function', name: 'f', inputSchema: {} } },
          ],
        };
      },
      async doStream() {
        throw new Error('not used');
      },
    };
    const adapted = fromAISDK(model);
    expect(adapted.protocol).toBeUndefined();
    expect(adapted.provider).toBe('mistral');
    expect(await adapted.doGenerate({ messages: [], tools: [], toolChoice: 'auto' })).toEqual({
      text: '',
      // Kept as the text itself, so the run can tell the model its arguments were invalid.
      toolCalls: [{ toolCallId: 'c1', toolName: 'f', args: '{"city": "Par' }],
      finishReason: 'other',
      usage: { inputTokens: 50, outputTokens: 5, totalTokens: 56, cacheReadTokens: 40 },
      warnings: [
        { type: 'unsupported-setting', setting: 'topP', details: 'Ignored.' },
        { type: 'other', message: 'Tool f is not supported.' },
      ],
    });
  });

  it('v4: interrupted is other, deprecated is a warning, a missing total is the sum of its parts', async () => {
    const { model } = recordingModel('v4', 'openai.chat', {
      result: {
        content: [{ type: 'text', text: 'Hi' }, { type: 'reasoning-file', mediaType: 'image/png', data: { type: 'data', data: 'x' } }],
        finishReason: { unified: 'interrupted', raw: undefined },
        usage: { inputTokens: { total: undefined, noCache: 7, cacheRead: 3, cacheWrite: undefined }, outputTokens: { total: undefined, text: 2, reasoning: undefined } },
        warnings: [{ type: 'deprecated', setting: 'maxTokens', message: 'Use maxOutputTokens.' }],
      },
    });
    expect(await fromAISDK(model).doGenerate({ messages: [], tools: [], toolChoice: 'auto' })).toEqual({
      text: 'Hi',
      toolCalls: [],
      finishReason: 'other',
      usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12, cacheReadTokens: 3 },
      warnings: [{ type: 'other', message: 'maxTokens is deprecated: Use maxOutputTokens.' }],
    });
  });
});

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

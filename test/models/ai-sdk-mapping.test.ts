/**
 * fromAISDK's request and response mapping, spec version by spec version,
 * against stand-in models that record the call options they get: prompt parts,
 * tools, settings, what is sent back, and content, finish reasons and usage of
 * both shapes, warnings. Streams and failures are in ai-sdk-stream.test.ts; the
 * real provider packages in ai-sdk.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { LanguageModelV2 } from '@ai-sdk/provider-v2';
import { fromAISDK } from '../../src/models/ai-sdk/index.js';
import { toolContent, type ModelMessage, type ModelRequest } from '../../src/models/types.js';
import type { JsonValue } from '../../src/agent/json.js';
import { recordingModel, type Version } from './fixtures/ai-sdk/recording-model.js';

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

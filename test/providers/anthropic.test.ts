/** cairn/anthropic, a complete turn (doGenerate): what it sends and what it makes of the answer. */
import { describe, expect, it } from 'vitest';
import { anthropic, createAnthropic } from 'cairn/anthropic';
import type { ModelMessage, ModelResponse } from '../../src/models/types.js';
import { CANARY_KEY, wireServerForFile } from './wire-server.js';
import {
  ask, expectRequest, fixture, json, modelOf, WEATHER_TOOL, WIRE_WEATHER_TOOL,
} from './fixtures/anthropic/harness.js';

const server = await wireServerForFile();

/** What a checkpoint does to a turn: plain JSON, written and read back. */
const viaCheckpoint = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

const USER = { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] };

describe('the provider', () => {
  it('makes Messages models, callable and by name, and the default instance reads no key at creation', () => {
    const provider = createAnthropic({ apiKey: CANARY_KEY });
    for (const model of [provider('claude-sonnet-4-5'), provider.messages('claude-sonnet-4-5'), anthropic('claude-sonnet-4-5')]) {
      expect(model).toMatchObject({ specificationVersion: 'cairn-model-1', provider: 'anthropic', modelId: 'claude-sonnet-4-5', protocol: 'messages' });
      expect(typeof model.doStream).toBe('function');
    }
  });
});

describe('doGenerate', () => {
  it('plain text: system goes to the top-level system blocks, the answer is text with usage and response metadata', async () => {
    server.reply(json('text', { headers: { 'request-id': 'req_011CText' } }));
    const result = await modelOf(server).doGenerate({
      messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Hi' }],
      tools: [],
      toolChoice: 'auto',
    });
    expectRequest(server.requests[0], {
      model: 'claude-sonnet-4-5',
      max_tokens: 8192,
      system: [{ type: 'text', text: 'You are terse.' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    });
    expect(result).toEqual({
      text: 'Hello! How can I help you today?',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 21, outputTokens: 12, totalTokens: 33, cacheReadTokens: 0, cacheWriteTokens: 0 },
      response: { id: 'msg_01XFDUDYJgAACzvnptvVoYEL', modelId: 'claude-sonnet-4-5-20250929' },
    });
  });

  it('parallel tool calls keep their ids, names and parsed arguments', async () => {
    server.reply(json('tool-calls-parallel'));
    const result = await modelOf(server).doGenerate(ask('Weather in Paris and Oslo?', { tools: [WEATHER_TOOL] }));
    expectRequest(server.requests[0], {
      model: 'claude-sonnet-4-5',
      max_tokens: 8192,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Oslo?' }] }],
      tools: [WIRE_WEATHER_TOOL],
      tool_choice: { type: 'auto' },
    });
    expect(result.text).toBe("I'll check both cities.");
    expect(result.finishReason).toBe('tool-calls');
    expect(result.toolCalls).toEqual([
      { toolCallId: 'toolu_01A09q90qw90lq917835lq9', toolName: 'get_weather', args: { city: 'Paris', unit: 'celsius' } },
      { toolCallId: 'toolu_01B8xk3Rp9u2Lw7cQ4mZ1vN', toolName: 'get_weather', args: { city: 'Oslo', unit: 'celsius' } },
    ]);
  });

  it('a thinking block comes back as a signed reasoning part and goes out again byte for byte, before the tool call', async () => {
    const answer = fixture<{ content: Array<Record<string, unknown>> }>('thinking-tool');
    server.reply(json('thinking-tool'), json('final-answer'));
    const model = modelOf(server);
    const settings = { effort: 'high' as const, temperature: 0.3 };
    const first = await model.doGenerate(ask('Weather in Paris?', { tools: [WEATHER_TOOL], settings }));
    const thinkingBody = { thinking: { type: 'enabled', budget_tokens: 16384 } };
    expectRequest(server.requests[0], {
      model: 'claude-sonnet-4-5',
      max_tokens: 16384 + 4096,
      messages: [USER],
      tools: [WIRE_WEATHER_TOOL],
      tool_choice: { type: 'auto' },
      ...thinkingBody,
    });
    expect(first.warnings).toEqual([{ type: 'unsupported-setting', setting: 'temperature', details: 'The API refuses temperature while thinking is on.' }]);
    expect(first.reasoning).toEqual([{ type: 'reasoning', text: answer.content[0]!.thinking, providerMetadata: { anthropic: { signature: answer.content[0]!.signature } } }]);
    expect(first.finishReason).toBe('tool-calls');

    const turn = viaCheckpoint(first);
    const second = await model.doGenerate(ask('', {
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: turn.text, toolCalls: turn.toolCalls, reasoning: turn.reasoning! },
        { role: 'tool', toolCallId: turn.toolCalls[0]!.toolCallId, toolName: 'get_weather', content: { tempC: 18, sky: 'sunny' } },
      ],
      tools: [WEATHER_TOOL],
      settings,
    }));
    const sent = server.requests[1]!.body as { messages: Array<{ content: unknown[] }> };
    // Byte for byte: the same JSON text as the block the API sent.
    expect(JSON.stringify(sent.messages[1]!.content[0])).toBe(JSON.stringify(answer.content[0]));
    expectRequest(server.requests[1], {
      model: 'claude-sonnet-4-5',
      max_tokens: 16384 + 4096,
      messages: [
        USER,
        { role: 'assistant', content: [answer.content[0], answer.content[1], answer.content[2]] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01Th1nkW3ath3rPar1s', content: '{"tempC":18,"sky":"sunny"}' }] },
      ],
      tools: [WIRE_WEATHER_TOOL],
      tool_choice: { type: 'auto' },
      ...thinkingBody,
    });
    expect(second.text).toBe('It is 18°C and sunny in Paris.');
    expect(second.reasoning).toBeUndefined();
  });

  it('redacted thinking round-trips as an empty reasoning part that carries the encrypted data', async () => {
    const answer = fixture<{ content: Array<Record<string, unknown>> }>('redacted-thinking');
    server.reply(json('redacted-thinking'), json('final-answer'));
    const model = modelOf(server);
    const first = await model.doGenerate(ask('Weather in Rome?', { tools: [WEATHER_TOOL] }));
    expect(first.reasoning).toEqual([
      { type: 'reasoning', text: '', providerMetadata: { anthropic: { redactedData: answer.content[0]!.data } } },
      { type: 'reasoning', text: answer.content[1]!.thinking, providerMetadata: { anthropic: { signature: answer.content[1]!.signature } } },
    ]);
    const turn = viaCheckpoint(first);
    await model.doGenerate(ask('', {
      messages: [
        { role: 'user', content: 'Weather in Rome?' },
        { role: 'assistant', content: turn.text, toolCalls: turn.toolCalls, reasoning: turn.reasoning! },
        { role: 'tool', toolCallId: 'toolu_01R3dW3ath3r', toolName: 'get_weather', content: 'Rome: 24°C' },
      ],
      tools: [WEATHER_TOOL],
    }));
    expectRequest(server.requests[1], {
      model: 'claude-sonnet-4-5',
      max_tokens: 8192,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Rome?' }] },
        { role: 'assistant', content: [answer.content[0], answer.content[1], answer.content[2]] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01R3dW3ath3r', content: 'Rome: 24°C' }] },
      ],
      tools: [WIRE_WEATHER_TOOL],
      tool_choice: { type: 'auto' },
    });
  });

  it("another provider's reasoning (and reasoning without a signature) is never sent", async () => {
    server.reply(json('final-answer'));
    const assistant: ModelMessage = {
      role: 'assistant',
      content: 'Checking.',
      toolCalls: [{ toolCallId: 'call_1', toolName: 'get_weather', args: { city: 'Paris' } }],
      reasoning: [
        { type: 'reasoning', text: 'OpenAI thoughts', providerMetadata: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'gAAAAB' } } },
        { type: 'reasoning', text: 'Gemini thoughts', providerMetadata: { google: { thoughtSignature: 'CiQB' } } },
        { type: 'reasoning', text: 'no metadata at all' },
        { type: 'reasoning', text: 'anthropic, unsigned', providerMetadata: { anthropic: {} } },
      ],
    };
    await modelOf(server).doGenerate(ask('', {
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        assistant,
        { role: 'tool', toolCallId: 'call_1', toolName: 'get_weather', content: 'sunny' },
      ],
      tools: [WEATHER_TOOL],
    }));
    expectRequest(server.requests[0], {
      model: 'claude-sonnet-4-5',
      max_tokens: 8192,
      messages: [
        USER,
        { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'sunny' }] },
      ],
      tools: [WIRE_WEATHER_TOOL],
      tool_choice: { type: 'auto' },
    });
  });

  it('refusal: stop_reason refusal is the refusal finish reason', async () => {
    server.reply(json('refusal'));
    const result = await modelOf(server).doGenerate(ask('Something harmful.'));
    expectRequest(server.requests[0], {
      model: 'claude-sonnet-4-5', max_tokens: 8192, messages: [{ role: 'user', content: [{ type: 'text', text: 'Something harmful.' }] }],
    });
    expect(result.finishReason).toBe('refusal');
    expect(result.text).toBe("I can't help with that.");
  });

  it('length: maxOutputTokens is max_tokens, and max_tokens is the length finish reason', async () => {
    server.reply(json('length'));
    const result = await modelOf(server).doGenerate(ask('Tell me a story.', { settings: { maxOutputTokens: 16 } }));
    expectRequest(server.requests[0], {
      model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: [{ type: 'text', text: 'Tell me a story.' }] }],
    });
    expect(result.finishReason).toBe('length');
  });

  it('usage: cache reads and writes count in inputTokens and are reported apart', async () => {
    server.reply(json('cached-usage'));
    const result: ModelResponse = await modelOf(server).doGenerate(ask('Again?'));
    expectRequest(server.requests[0], {
      model: 'claude-sonnet-4-5', max_tokens: 8192, messages: [{ role: 'user', content: [{ type: 'text', text: 'Again?' }] }],
    });
    expect(result.usage).toEqual({ inputTokens: 2050, outputTokens: 7, totalTokens: 2057, cacheReadTokens: 1800, cacheWriteTokens: 200 });
  });

  it('json strategy: output_config.format beside the unchanged tools, with tool_choice none', async () => {
    server.reply(json('json-answer'));
    const schema = { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'], additionalProperties: false };
    const result = await modelOf(server).doGenerate(ask('Answer as JSON.', {
      tools: [WEATHER_TOOL], toolChoice: 'none', responseFormat: { type: 'json', schema },
    }));
    expectRequest(server.requests[0], {
      model: 'claude-sonnet-4-5',
      max_tokens: 8192,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Answer as JSON.' }] }],
      tools: [WIRE_WEATHER_TOOL],
      tool_choice: { type: 'none' },
      output_config: { format: { type: 'json_schema', schema } },
    });
    expect(JSON.parse(result.text)).toEqual({ answer: 42 });
  });

  it('json strategy without a schema leaves the format out and says so', async () => {
    server.reply(json('json-answer'));
    const result = await modelOf(server).doGenerate(ask('Answer as JSON.', { toolChoice: 'none', responseFormat: { type: 'json' } }));
    expectRequest(server.requests[0], {
      model: 'claude-sonnet-4-5', max_tokens: 8192, messages: [{ role: 'user', content: [{ type: 'text', text: 'Answer as JSON.' }] }],
    });
    expect(result.warnings).toEqual([{ type: 'unsupported-setting', setting: 'responseFormat', details: 'Anthropic structured output needs a JSON schema.' }]);
  });
});

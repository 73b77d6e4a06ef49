/**
 * cairn/openai-compatible: Chat Completions models of Ollama, vLLM, LM Studio,
 * llama.cpp or OpenRouter, named by the user, with or without a key, at any
 * base URL; the thinking some servers report comes back as reasoning parts
 * that are never sent back.
 */
import { describe, expect, it } from 'vitest';
import { createOpenAICompatible } from 'cairn/openai-compatible';
import { APICallError, InvalidOptionsError } from '../../src/errors/index.js';
import type { ModelMessage } from '../../src/models/types.js';
import { CANARY_KEY, wireServerForFile } from './wire-server.js';
import {
  ask, collect, collectUntilError, expectNoKey, expectRequest, fixture, HTTP_FAILURES, json, rejectionOf, sse, weather, WEATHER_TOOL,
} from './fixtures/openai/harness.js';

const server = await wireServerForFile();

const MESSAGES = (text: string) => [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: text }];
const STREAM = { stream: true, stream_options: { include_usage: true } };
const WIRE_TOOL = { type: 'function', function: { ...WEATHER_TOOL } };
const ollama = () => createOpenAICompatible({ name: 'ollama', baseURL: `${server.url}/v1` });

describe('the provider', () => {
  it('names its models after the provider and speaks chat', () => {
    const provider = createOpenAICompatible({ name: 'lmstudio', baseURL: 'http://localhost:1234/v1' });
    for (const model of [provider('qwen2.5-7b-instruct'), provider.chat('qwen2.5-7b-instruct')]) {
      expect(model).toMatchObject({ specificationVersion: 'cairn-model-1', provider: 'lmstudio', modelId: 'qwen2.5-7b-instruct', protocol: 'chat' });
    }
  });

  it('refuses a missing name or baseURL at creation', () => {
    expect(() => createOpenAICompatible({ name: '', baseURL: 'http://localhost:1/v1' })).toThrow(InvalidOptionsError);
    expect(() => createOpenAICompatible({ name: 'vllm', baseURL: '' })).toThrow(/needs a baseURL/);
  });

  it('sends no authorization header without a key, max_tokens, and system messages as system', async () => {
    server.reply(json('openai-compatible/llamacpp-text'));
    const result = await ollama()('o3-distill').doGenerate(ask('Salut', { settings: { maxOutputTokens: 64, temperature: 0.7, effort: 'low' } }));
    expectRequest(server.requests[0], {
      path: '/v1/chat/completions', authorization: null,
      body: { model: 'o3-distill', messages: MESSAGES('Salut'), temperature: 0.7, reasoning_effort: 'low', max_tokens: 64 },
    });
    expect(result).toEqual({
      text: 'Bonjour !', toolCalls: [], finishReason: 'stop', usage: { inputTokens: 11, outputTokens: 4, totalTokens: 15 },
      response: { id: 'chatcmpl-llamacpp123', modelId: 'gpt-3.5-turbo' },
    });
  });

  it('sends a given key as Bearer, with its headers, under a base URL that has a path and a trailing slash', async () => {
    server.reply(json('openai-compatible/llamacpp-text'));
    const router = createOpenAICompatible({ name: 'openrouter', baseURL: `${server.url}/api/v1/`, apiKey: CANARY_KEY, headers: { 'x-title': 'Cairn tests' } });
    await router('meta-llama/llama-3.3-70b-instruct').doGenerate(ask('Salut'));
    expectRequest(server.requests[0], {
      path: '/api/v1/chat/completions', headers: { 'x-title': 'Cairn tests' },
      body: { model: 'meta-llama/llama-3.3-70b-instruct', messages: MESSAGES('Salut') },
    });
  });

  it('reads the key from apiKeyEnv at each call', async () => {
    const saved = process.env.CAIRN_TEST_VLLM_KEY;
    try {
      const vllm = createOpenAICompatible({ name: 'vllm', baseURL: `${server.url}/v1`, apiKeyEnv: 'CAIRN_TEST_VLLM_KEY' });
      server.reply(json('openai-compatible/llamacpp-text'), json('openai-compatible/llamacpp-text'));
      delete process.env.CAIRN_TEST_VLLM_KEY;
      await vllm('Qwen/Qwen3-8B').doGenerate(ask('Salut'));
      process.env.CAIRN_TEST_VLLM_KEY = CANARY_KEY;
      await vllm('Qwen/Qwen3-8B').doGenerate(ask('Salut'));
      const body = { model: 'Qwen/Qwen3-8B', messages: MESSAGES('Salut') };
      expectRequest(server.requests[0], { path: '/v1/chat/completions', authorization: null, body });
      expectRequest(server.requests[1], { path: '/v1/chat/completions', body });
    } finally {
      if (saved === undefined) delete process.env.CAIRN_TEST_VLLM_KEY;
      else process.env.CAIRN_TEST_VLLM_KEY = saved;
    }
  });

  it("merges the provider's own options under its name, and no one else's", async () => {
    server.reply(json('openai-compatible/llamacpp-text'));
    await ollama()('llama3.2').doGenerate(ask('Salut', {
      providerOptions: { ollama: { keep_alive: '5m', top_k: 20 }, openai: { service_tier: 'flex' } },
      responseFormat: { type: 'json', schema: { type: 'object' } },
    }));
    expectRequest(server.requests[0], {
      path: '/v1/chat/completions', authorization: null,
      body: {
        model: 'llama3.2', messages: MESSAGES('Salut'),
        response_format: { type: 'json_schema', json_schema: { name: 'response', schema: { type: 'object' }, strict: false } },
        keep_alive: '5m', top_k: 20,
      },
    });
  });
});

describe("the servers' own shapes", () => {
  it("streams Ollama's reasoning as reasoning parts without provider metadata, and never sends them back", async () => {
    server.reply(sse('openai-compatible/ollama-reasoning-stream'), json('openai-compatible/llamacpp-text'));
    const parts = await collect(ollama()('qwen3:8b').doStream!(ask('Hi')));
    expectRequest(server.requests[0], { path: '/v1/chat/completions', authorization: null, body: { model: 'qwen3:8b', messages: MESSAGES('Hi'), ...STREAM } });
    expect(parts).toEqual([
      { type: 'response-metadata', id: 'chatcmpl-512', modelId: 'qwen3:8b' },
      { type: 'reasoning-delta', delta: 'The user' },
      { type: 'reasoning-delta', delta: ' greets me.' },
      { type: 'reasoning', reasoning: { type: 'reasoning', text: 'The user greets me.' } },
      { type: 'text-delta', delta: 'Hi' },
      { type: 'text-delta', delta: ' there!' },
      { type: 'finish', finishReason: 'stop', usage: { inputTokens: 12, outputTokens: 9, totalTokens: 21 } },
    ]);
    const history: ModelMessage[] = [
      ...ask('Hi').messages,
      { role: 'assistant', content: 'Hi there!', reasoning: [{ type: 'reasoning', text: 'The user greets me.' }] },
      { role: 'user', content: 'Bye.' },
    ];
    await ollama()('qwen3:8b').doGenerate({ messages: history, tools: [], toolChoice: 'auto' });
    expectRequest(server.requests[1], {
      path: '/v1/chat/completions', authorization: null,
      body: { model: 'qwen3:8b', messages: [...MESSAGES('Hi'), { role: 'assistant', content: 'Hi there!' }, { role: 'user', content: 'Bye.' }] },
    });
  });

  it("takes Ollama's finish_reason 'stop' after a call as tool-calls", async () => {
    server.reply(json('openai-compatible/ollama-tool-call'));
    const result = await ollama()('llama3.2').doGenerate(weather());
    expectRequest(server.requests[0], {
      path: '/v1/chat/completions', authorization: null,
      body: { model: 'llama3.2', messages: MESSAGES('Weather in Paris?'), tools: [WIRE_TOOL], tool_choice: 'auto' },
    });
    expect(result.toolCalls).toEqual([{ toolCallId: 'call_k2j3h4g5', toolName: 'get_weather', args: { city: 'Paris' } }]);
    expect(result.finishReason).toBe('tool-calls');
  });

  it("returns vLLM's reasoning_content, and gives a call without an id one from its position", async () => {
    server.reply(json('openai-compatible/vllm-reasoning'));
    const vllm = createOpenAICompatible({ name: 'vllm', baseURL: `${server.url}/v1`, apiKey: CANARY_KEY });
    const result = await vllm('Qwen/Qwen3-8B').doGenerate(weather());
    expectRequest(server.requests[0], {
      path: '/v1/chat/completions',
      body: { model: 'Qwen/Qwen3-8B', messages: MESSAGES('Weather in Paris?'), tools: [WIRE_TOOL], tool_choice: 'auto' },
    });
    expect(result).toEqual({
      text: '', toolCalls: [{ toolCallId: 'call_0', toolName: 'get_weather', args: { city: 'Paris' } }], finishReason: 'tool-calls',
      usage: { inputTokens: 50, outputTokens: 30, totalTokens: 80 },
      reasoning: [{ type: 'reasoning', text: 'Paris is the capital.' }],
      response: { id: 'chatcmpl-b7c1d2e3f4a5', modelId: 'Qwen/Qwen3-8B' },
    });
  });

  it('accepts a stream that closes after its finish reason without [DONE]', async () => {
    const events = fixture<unknown[]>('openai-compatible/ollama-reasoning-stream').filter((e) => e !== '[DONE]');
    server.reply({ sse: events as never });
    const parts = await collect(ollama()('qwen3:8b').doStream!(ask('Hi')));
    expect(parts.at(-1)).toEqual({ type: 'finish', finishReason: 'stop', usage: { inputTokens: 12, outputTokens: 9, totalTokens: 21 } });
  });
});

describe('failures', () => {
  it("reads Ollama's error body ({ error: '...' }) into the message", async () => {
    server.reply({ status: 404, json: { error: 'model "llama9" not found, try pulling it first' } });
    const error = await rejectionOf(ollama()('llama9').doGenerate(ask('Hi')));
    expect(error).toMatchObject({ name: 'APICallError', statusCode: 404, isRetryable: false, provider: 'ollama' });
    expect((error as Error).message).toContain('model "llama9" not found');
  });

  it.each(HTTP_FAILURES)('$name, with a key that stays hidden', async ({ reply, status, retryable, message, retryAfterMs }) => {
    server.reply(reply);
    const router = createOpenAICompatible({ name: 'openrouter', baseURL: `${server.url}/api/v1`, apiKey: CANARY_KEY });
    const { parts, error } = await collectUntilError(router('openai/gpt-4.1').doStream!(ask('Hi')));
    expectRequest(server.requests[0], { path: '/api/v1/chat/completions', body: { model: 'openai/gpt-4.1', messages: MESSAGES('Hi'), ...STREAM } });
    expect(parts).toEqual([]);
    expect(APICallError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ statusCode: status, isRetryable: retryable, provider: 'openrouter', url: `${server.url}/api/v1/chat/completions` });
    expect((error as Error).message).toContain(message);
    if (retryAfterMs !== undefined) expect(error).toMatchObject({ retryAfterMs });
    expectNoKey(error);
  });

  it('a hang past the transport timeout rejects with the TimeoutError', async () => {
    server.reply({ hang: true });
    const error = await rejectionOf(ollama()('llama3.2').doGenerate(ask('Hi', { signal: AbortSignal.timeout(200) })));
    expect((error as Error).name).toBe('TimeoutError');
  });

  it('a server that is not running is a retryable APICallError without a status', async () => {
    const down = createOpenAICompatible({ name: 'ollama', baseURL: 'http://127.0.0.1:9/v1' });
    const error = await rejectionOf(down('llama3.2').doGenerate(ask('Hi')));
    expect(error).toMatchObject({ name: 'APICallError', isRetryable: true, statusCode: undefined });
    expect((error as Error).message).toContain('Could not reach ollama');
  });
});

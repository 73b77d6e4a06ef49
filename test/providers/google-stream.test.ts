/**
 * cairn/google over streamGenerateContent (alt=sse): the stream parts each
 * recorded chunk sequence makes, in order, and the request that asked for it.
 */
import { describe, expect, it } from 'vitest';
import { wireServerForFile } from './wire-server.js';
import {
  ask, collect, expectSent, modelOn, sse, SIG_CALL, SIG_TEXT, SIG_THOUGHT, streamPath, USER_HI,
} from './fixtures/google/harness.js';

const server = await wireServerForFile();

const stream = (modelId?: string, over?: Parameters<typeof ask>[0]) => collect(modelOn(server, modelId).doStream!(ask(over)));

describe('google streamGenerateContent', () => {
  it('plain text: metadata first, a delta per chunk, finish with the last chunk\'s usage', async () => {
    server.reply({ sse: sse('stream-text') });
    const parts = await stream();
    expectSent(server.requests[0], streamPath(), USER_HI);
    expect(parts).toEqual([
      { type: 'response-metadata', id: 'st-1', modelId: 'gemini-2.5-flash' },
      { type: 'text-delta', delta: 'Hello' },
      { type: 'text-delta', delta: '! How can I' },
      { type: 'text-delta', delta: ' help?' },
      { type: 'finish', finishReason: 'stop', usage: { inputTokens: 12, outputTokens: 7, totalTokens: 19 } },
    ]);
  });

  it('parallel calls, each whole in its chunk: start, one delta with all its arguments, the call with its signature', async () => {
    server.reply({ sse: sse('stream-tool-calls') });
    const parts = await stream('gemini-2.5-flash', { tools: [{ name: 'get_weather', parameters: { type: 'object' } }] });
    expectSent(server.requests[0], streamPath(), {
      ...USER_HI,
      tools: [{ functionDeclarations: [{ name: 'get_weather', parametersJsonSchema: { type: 'object' } }] }],
      toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
    });
    const paris = { city: 'Paris', units: { temperature: 'celsius' } };
    expect(parts).toEqual([
      { type: 'response-metadata', id: 'st-2', modelId: 'gemini-2.5-flash' },
      { type: 'text-delta', delta: 'Checking both cities.' },
      { type: 'tool-call-start', toolCallId: 'call_0', toolName: 'get_weather' },
      { type: 'tool-call-delta', toolCallId: 'call_0', argsTextDelta: JSON.stringify(paris) },
      { type: 'tool-call', toolCall: { toolCallId: 'call_0', toolName: 'get_weather', args: paris, providerMetadata: { google: { thoughtSignature: SIG_CALL } } } },
      { type: 'tool-call-start', toolCallId: 'call_1', toolName: 'get_weather' },
      { type: 'tool-call-delta', toolCallId: 'call_1', argsTextDelta: '{"city":"Oslo"}' },
      { type: 'tool-call', toolCall: { toolCallId: 'call_1', toolName: 'get_weather', args: { city: 'Oslo' } } },
      { type: 'finish', finishReason: 'tool-calls', usage: { inputTokens: 70, outputTokens: 52, totalTokens: 122, reasoningTokens: 12 } },
    ]);
  });

  it('thinking: thought deltas, the thought part with its signature when it ends, the text, the text\'s signature from the last chunk', async () => {
    server.reply({ sse: sse('stream-thinking') });
    const parts = await stream('gemini-3-flash-preview', { settings: { effort: 'low' } });
    expectSent(server.requests[0], streamPath('gemini-3-flash-preview'), {
      ...USER_HI,
      generationConfig: { thinkingConfig: { thinkingLevel: 'low', includeThoughts: true } },
    });
    expect(parts).toEqual([
      { type: 'response-metadata', id: 'st-3', modelId: 'gemini-3-flash-preview' },
      { type: 'reasoning-delta', delta: '**Comparing the numbers**\n\n' },
      { type: 'reasoning-delta', delta: 'Compare the tenths: 9 against 1.' },
      {
        type: 'reasoning',
        reasoning: {
          type: 'reasoning',
          text: '**Comparing the numbers**\n\nCompare the tenths: 9 against 1.',
          providerMetadata: { google: { part: 'thought', thoughtSignature: SIG_THOUGHT } },
        },
      },
      { type: 'text-delta', delta: '9.9 is' },
      { type: 'text-delta', delta: ' larger.' },
      { type: 'reasoning', reasoning: { type: 'reasoning', text: '', providerMetadata: { google: { part: 'text', thoughtSignature: SIG_TEXT } } } },
      { type: 'finish', finishReason: 'stop', usage: { inputTokens: 15, outputTokens: 235, totalTokens: 250, reasoningTokens: 230 } },
    ]);
  });

  it('content filter after some text, and a prompt blocked before any', async () => {
    server.reply({ sse: sse('stream-content-filter') }, { sse: sse('stream-prompt-blocked') });
    const filtered = await stream();
    expectSent(server.requests[0], streamPath(), USER_HI);
    expect(filtered).toEqual([
      { type: 'response-metadata', id: 'st-4', modelId: 'gemini-2.5-flash' },
      { type: 'text-delta', delta: 'Here is how you' },
      { type: 'finish', finishReason: 'content-filter', usage: { inputTokens: 20, outputTokens: 4, totalTokens: 24 } },
    ]);
    const blocked = await stream();
    expectSent(server.requests[1], streamPath(), USER_HI);
    expect(blocked).toEqual([
      { type: 'response-metadata', id: 'st-5', modelId: 'gemini-2.5-flash' },
      { type: 'finish', finishReason: 'content-filter', usage: { inputTokens: 20, outputTokens: 0, totalTokens: 20 } },
    ]);
  });

  it('length and cached prompt tokens', async () => {
    server.reply({ sse: sse('stream-length') }, { sse: sse('stream-cached') });
    const cut = await stream();
    for (const request of server.requests) expectSent(request, streamPath(), USER_HI);
    expect(cut.map((p) => p.type)).toEqual(['response-metadata', 'text-delta', 'text-delta', 'finish']);
    expect(cut.at(-1)).toEqual({ type: 'finish', finishReason: 'length', usage: { inputTokens: 10, outputTokens: 8, totalTokens: 18 } });
    const cached = await stream();
    expect(cached.at(-1)).toEqual({
      type: 'finish', finishReason: 'stop', usage: { inputTokens: 4120, outputTokens: 7, totalTokens: 4127, cacheReadTokens: 4096 },
    });
  });

  it('a setting the model cannot take is a warnings part after the metadata', async () => {
    server.reply({ sse: sse('stream-text') });
    const parts = await stream('gemini-2.5-pro', { settings: { effort: 'none' } });
    expectSent(server.requests[0], streamPath('gemini-2.5-pro'), USER_HI);
    expect(parts.slice(0, 2)).toEqual([
      { type: 'response-metadata', id: 'st-1', modelId: 'gemini-2.5-flash' },
      { type: 'warnings', warnings: [{ type: 'unsupported-setting', setting: 'effort', details: expect.stringContaining('cannot turn thinking off') }] },
    ]);
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
  });
});

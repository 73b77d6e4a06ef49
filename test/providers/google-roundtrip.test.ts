/**
 * Thought signatures round trip: what Gemini returned on a part goes back,
 * byte for byte, on the same part of the next request — from a whole answer,
 * from a stream, and through runAgent's two-step tool loop.
 */
import { describe, expect, it } from 'vitest';
import { runAgent } from 'cairn/agent';
import { createGoogle } from 'cairn/google';
import type { ModelMessage, ModelResponse, ModelStreamPart, ReasoningPart } from 'cairn/models';
import { CANARY_KEY, wireServerForFile } from './wire-server.js';
import {
  ask, collect, expectSent, fixture, generatePath, modelOn, SIG_CALL, SIG_TEXT, SIG_THOUGHT, sse, streamPath,
} from './fixtures/google/harness.js';

const server = await wireServerForFile();

const weather = { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } };
const declarations = [{ functionDeclarations: [{ name: 'get_weather', parametersJsonSchema: weather.parameters }] }];

/** The assistant message a turn becomes in the history, as the engine records it. */
function turnMessage(turn: Pick<ModelResponse, 'text' | 'toolCalls' | 'reasoning'>): ModelMessage {
  return { role: 'assistant', content: turn.text, toolCalls: turn.toolCalls, ...(turn.reasoning ? { reasoning: turn.reasoning } : {}) };
}

/** A streamed turn put together from its parts. */
function streamedTurn(parts: ModelStreamPart[]): Pick<ModelResponse, 'text' | 'toolCalls' | 'reasoning'> {
  const reasoning: ReasoningPart[] = [];
  let text = '';
  const toolCalls: ModelResponse['toolCalls'] = [];
  for (const part of parts) {
    if (part.type === 'text-delta') text += part.delta;
    if (part.type === 'reasoning') reasoning.push(part.reasoning);
    if (part.type === 'tool-call') toolCalls.push(part.toolCall);
  }
  return { text, toolCalls, reasoning };
}

describe('google thought signatures', () => {
  it('generate: a call\'s signature goes back on its functionCall part, its result as a functionResponse', async () => {
    server.reply({ json: fixture('tool-call') }, { json: fixture('text') });
    const model = modelOn(server);
    const first = await model.doGenerate(ask({ tools: [weather] }));
    await model.doGenerate(ask({
      tools: [weather],
      messages: [
        { role: 'user', content: 'Hi' },
        turnMessage(first),
        { role: 'tool', toolCallId: 'call_0', toolName: 'get_weather', content: { tempC: 21 } },
      ],
    }));
    expectSent(server.requests[1], generatePath(), {
      contents: [
        { role: 'user', parts: [{ text: 'Hi' }] },
        {
          role: 'model',
          parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris', units: { temperature: 'celsius' } } }, thoughtSignature: SIG_CALL }],
        },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { tempC: 21 } } }] },
      ],
      tools: declarations,
      toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
    });
  });

  it('generate: thought summaries and the text\'s signature go back in Gemini\'s order; Gemini\'s call ids come back on call and response', async () => {
    server.reply({ json: fixture('thinking') }, { json: fixture('parallel-tool-calls') }, { json: fixture('text') });
    const model = modelOn(server, 'gemini-2.5-pro');
    const thought = await model.doGenerate(ask());
    const calls = await model.doGenerate(ask());
    await model.doGenerate(ask({
      messages: [
        { role: 'user', content: 'Which is larger?' },
        turnMessage(thought),
        { role: 'user', content: 'And the weather?' },
        turnMessage(calls),
        { role: 'tool', toolCallId: 'call_0', toolName: 'get_weather', content: 'sunny' },
        { role: 'tool', toolCallId: 'call_1', toolName: 'get_weather', content: 'rain' },
        { role: 'tool', toolCallId: 'fc-7d1e', toolName: 'get_time', content: '12:00' },
      ],
    }));
    expectSent(server.requests[2], generatePath('gemini-2.5-pro'), {
      contents: [
        { role: 'user', parts: [{ text: 'Which is larger?' }] },
        {
          role: 'model',
          parts: [
            { text: '**Comparing the numbers**\n\n9.11 and 9.9: compare the tenths.', thought: true },
            { text: '9.9 is larger than 9.11.', thoughtSignature: SIG_TEXT },
          ],
        },
        { role: 'user', parts: [{ text: 'And the weather?' }] },
        {
          role: 'model',
          parts: [
            { text: 'Checking both cities.' },
            { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: SIG_CALL },
            { functionCall: { name: 'get_weather', args: { city: 'Oslo' } } },
            { functionCall: { id: 'fc-7d1e', name: 'get_time', args: {} } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'get_weather', response: { result: 'sunny' } } },
            { functionResponse: { name: 'get_weather', response: { result: 'rain' } } },
            { functionResponse: { id: 'fc-7d1e', name: 'get_time', response: { result: '12:00' } } },
          ],
        },
      ],
    });
  });

  it('stream: the thought, text and call signatures of streamed turns go back on their parts', async () => {
    server.reply({ sse: sse('stream-thinking') }, { sse: sse('stream-tool-calls') }, { sse: sse('stream-text') });
    const model = modelOn(server, 'gemini-3-flash-preview');
    const thinking = streamedTurn(await collect(model.doStream!(ask())));
    const calls = streamedTurn(await collect(model.doStream!(ask({ tools: [weather] }))));
    await collect(model.doStream!(ask({
      tools: [weather],
      messages: [
        { role: 'user', content: 'Which is larger?' },
        turnMessage(thinking),
        { role: 'user', content: 'And the weather?' },
        turnMessage(calls),
        { role: 'tool', toolCallId: 'call_0', toolName: 'get_weather', content: { sky: 'clear' } },
        { role: 'tool', toolCallId: 'call_1', toolName: 'get_weather', content: { sky: 'rain' } },
      ],
    })));
    expectSent(server.requests[2], streamPath('gemini-3-flash-preview'), {
      contents: [
        { role: 'user', parts: [{ text: 'Which is larger?' }] },
        {
          role: 'model',
          parts: [
            { text: '**Comparing the numbers**\n\nCompare the tenths: 9 against 1.', thought: true, thoughtSignature: SIG_THOUGHT },
            { text: '9.9 is larger.', thoughtSignature: SIG_TEXT },
          ],
        },
        { role: 'user', parts: [{ text: 'And the weather?' }] },
        {
          role: 'model',
          parts: [
            { text: 'Checking both cities.' },
            { functionCall: { name: 'get_weather', args: { city: 'Paris', units: { temperature: 'celsius' } } }, thoughtSignature: SIG_CALL },
            { functionCall: { name: 'get_weather', args: { city: 'Oslo' } } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'get_weather', response: { sky: 'clear' } } },
            { functionResponse: { name: 'get_weather', response: { sky: 'rain' } } },
          ],
        },
      ],
      tools: declarations,
      toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
    });
  });

  it('runAgent: a two-step tool loop sends the thought and the call back with its signature, and the tool\'s result', async () => {
    const callChunk = {
      candidates: [{
        content: {
          role: 'model',
          parts: [
            { text: 'The user wants Paris.', thought: true },
            { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: SIG_CALL },
          ],
        },
        finishReason: 'STOP',
        index: 0,
      }],
      usageMetadata: { promptTokenCount: 30, candidatesTokenCount: 5, totalTokenCount: 35 },
      modelVersion: 'gemini-2.5-flash',
      responseId: 'agent-1',
    };
    server.reply({ sse: [{ data: callChunk }] }, { sse: sse('stream-text') });
    const google = createGoogle({ apiKey: CANARY_KEY, baseURL: server.url });
    const seen: unknown[] = [];
    const result = await runAgent({
      model: google('gemini-2.5-flash'),
      prompt: 'Weather in Paris?',
      effort: 'low',
      tools: {
        get_weather: {
          parameters: weather.parameters,
          execute: async (args: unknown) => { seen.push(args); return { tempC: 21 }; },
        },
      },
    });
    expect(result.status).toBe('completed');
    expect(result.text).toBe('Hello! How can I help?');
    expect(seen).toEqual([{ city: 'Paris' }]);
    expect(server.requests.map((r) => r.path)).toEqual([streamPath(), streamPath()]);
    for (const request of server.requests) {
      expect(request.headers['x-goog-api-key']).toBe(CANARY_KEY);
      expect(request.path).not.toContain(CANARY_KEY);
    }
    const [first, second] = server.requests.map((r) => r.body as { contents: unknown; generationConfig: unknown });
    expect(first!.generationConfig).toEqual({ thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } });
    expect(second!.generationConfig).toEqual(first!.generationConfig);
    expect(second!.contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
      {
        role: 'model',
        parts: [
          { text: 'The user wants Paris.', thought: true },
          { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: SIG_CALL },
        ],
      },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { tempC: 21 } } }] },
    ]);
  });
});

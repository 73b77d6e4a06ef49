/**
 * cairn/google over generateContent, against recorded Gemini answers: what the
 * adapter sends for each kind of message and setting, and what it makes of
 * each kind of answer.
 */
import { describe, expect, it } from 'vitest';
import type { ModelMessage, ModelRequest } from 'cairn/models';
import { wireServerForFile } from './wire-server.js';
import {
  ask, expectSent, fixture, generatePath, modelOn, SIG_CALL, SIG_TEXT, USER_HI,
} from './fixtures/google/harness.js';

const server = await wireServerForFile();

const weatherTool = {
  name: 'get_weather',
  description: 'The weather in a city.',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, units: { type: 'object', properties: { temperature: { enum: ['celsius', 'fahrenheit'] } } } },
    required: ['city'],
    additionalProperties: false,
  },
};

describe('google generateContent: answers', () => {
  it('plain text: system instruction, the text, usage and the response metadata', async () => {
    server.reply({ json: fixture('text') });
    const result = await modelOn(server).doGenerate(ask({
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }],
    }));
    expectSent(server.requests[0], generatePath(), { systemInstruction: { parts: [{ text: 'Be brief.' }] }, ...USER_HI });
    expect(result).toEqual({
      text: 'Hello! How can I help you today?',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 12, outputTokens: 9, totalTokens: 21 },
      response: { id: 'kX9aaOu1Lp-hz7IPq5mW6Qg', modelId: 'gemini-2.5-flash' },
    });
  });

  it('a function call: its args, a stable id, its thought signature, finish tool-calls, thoughts counted as output', async () => {
    server.reply({ json: fixture('tool-call') });
    const result = await modelOn(server).doGenerate(ask({ tools: [weatherTool] }));
    expectSent(server.requests[0], generatePath(), {
      ...USER_HI,
      tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'The weather in a city.', parametersJsonSchema: weatherTool.parameters }] }],
      toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
    });
    expect(result.toolCalls).toEqual([{
      toolCallId: 'call_0',
      toolName: 'get_weather',
      args: { city: 'Paris', units: { temperature: 'celsius' } },
      providerMetadata: { google: { thoughtSignature: SIG_CALL } },
    }]);
    expect(result.finishReason).toBe('tool-calls');
    expect(result.usage).toEqual({ inputTokens: 64, outputTokens: 106, totalTokens: 170, reasoningTokens: 88 });
  });

  it('parallel calls: one id each (Gemini\'s own when it gives one), the signature only where Gemini put it', async () => {
    server.reply({ json: fixture('parallel-tool-calls') });
    const result = await modelOn(server).doGenerate(ask({ tools: [weatherTool, { name: 'get_time', parameters: { type: 'object' } }] }));
    expect(result.text).toBe('Checking both cities.');
    expect(result.toolCalls).toEqual([
      { toolCallId: 'call_0', toolName: 'get_weather', args: { city: 'Paris' }, providerMetadata: { google: { thoughtSignature: SIG_CALL } } },
      { toolCallId: 'call_1', toolName: 'get_weather', args: { city: 'Oslo' } },
      { toolCallId: 'fc-7d1e', toolName: 'get_time', args: {}, providerMetadata: { google: { id: 'fc-7d1e' } } },
    ]);
    expect(result.finishReason).toBe('tool-calls');
  });

  it('thinking: effort sets the budget and asks for summaries; thought and text signature come back as reasoning parts', async () => {
    server.reply({ json: fixture('thinking') });
    const result = await modelOn(server, 'gemini-2.5-pro').doGenerate(ask({ settings: { effort: 'high' } }));
    expectSent(server.requests[0], generatePath('gemini-2.5-pro'), {
      ...USER_HI,
      generationConfig: { thinkingConfig: { thinkingBudget: 24576, includeThoughts: true } },
    });
    expect(result.text).toBe('9.9 is larger than 9.11.');
    expect(result.reasoning).toEqual([
      { type: 'reasoning', text: '**Comparing the numbers**\n\n9.11 and 9.9: compare the tenths.', providerMetadata: { google: { part: 'thought' } } },
      { type: 'reasoning', text: '', providerMetadata: { google: { part: 'text', thoughtSignature: SIG_TEXT } } },
    ]);
    expect(result.usage).toEqual({ inputTokens: 15, outputTokens: 240, totalTokens: 255, reasoningTokens: 230 });
    expect(result.response).toEqual({ id: 'th-1', modelId: 'gemini-2.5-pro' });
  });

  it('content filter: a blocked answer (SAFETY) and a blocked prompt (promptFeedback) both end in content-filter', async () => {
    server.reply({ json: fixture('content-filter') }, { json: fixture('prompt-blocked') });
    const model = modelOn(server);
    const answer = await model.doGenerate(ask());
    for (const request of server.requests) expectSent(request, generatePath(), USER_HI);
    expect(answer).toMatchObject({ text: '', toolCalls: [], finishReason: 'content-filter', usage: { inputTokens: 20, outputTokens: 0, totalTokens: 20 } });
    const prompt = await model.doGenerate(ask());
    expectSent(server.requests[1], generatePath(), USER_HI);
    expect(prompt).toMatchObject({ text: '', toolCalls: [], finishReason: 'content-filter', response: { id: 'pb-1' } });
  });

  it('length, a malformed function call (error) and cached prompt tokens', async () => {
    server.reply({ json: fixture('length') }, { json: fixture('malformed-call') }, { json: fixture('cached') });
    const model = modelOn(server);
    const cut = await model.doGenerate(ask({ settings: { maxOutputTokens: 8 } }));
    expectSent(server.requests[0], generatePath(), { ...USER_HI, generationConfig: { maxOutputTokens: 8 } });
    expect(cut).toEqual({
      text: 'The history of the Roman Empire begins',
      toolCalls: [],
      finishReason: 'length',
      usage: { inputTokens: 10, outputTokens: 8, totalTokens: 18 },
      response: { id: 'len-1', modelId: 'gemini-2.5-flash' },
    });
    const malformed = await model.doGenerate(ask({ tools: [weatherTool] }));
    expectSent(server.requests[1], generatePath(), {
      ...USER_HI,
      tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'The weather in a city.', parametersJsonSchema: weatherTool.parameters }] }],
      toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
    });
    expect(malformed).toMatchObject({ toolCalls: [], finishReason: 'error' });
    const cached = await model.doGenerate(ask({ settings: { promptCaching: true } }));
    // Implicit caching: promptCaching changes nothing in the request, and warns of nothing.
    expectSent(server.requests[2], generatePath(), USER_HI);
    expect(cached.warnings).toBeUndefined();
    expect(cached.usage).toEqual({ inputTokens: 4120, outputTokens: 7, totalTokens: 4127, cacheReadTokens: 4096 });
  });
});

describe('google generateContent: requests', () => {
  it('every kind of message, merged into alternating user and model contents', async () => {
    server.reply({ json: fixture('text') });
    const messages: ModelMessage[] = [
      { role: 'system', content: 'You are a travel agent.' },
      { role: 'system', content: 'Answer in English.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image', url: 'https://example.com/tower.jpg' },
          { type: 'image', data: 'iVBORw0KGgo=', mediaType: 'image/png' },
          { type: 'image', url: 'data:image/webp;base64,UklGRg==' },
          { type: 'file', url: 'https://generativelanguage.googleapis.com/v1beta/files/abc123', mediaType: 'application/pdf' },
          { type: 'file', data: 'JVBERi0=', mediaType: 'application/pdf', filename: 'trip.pdf' },
        ],
      },
      // A turn of another provider: its reasoning never crosses, its calls do (without any signature).
      {
        role: 'assistant',
        content: 'Let me look.',
        reasoning: [{ type: 'reasoning', text: 'secret', providerMetadata: { anthropic: { signature: 'sig-a' } } }],
        toolCalls: [
          { toolCallId: 'toolu_1', toolName: 'get_weather', args: { city: 'Paris' } },
          { toolCallId: 'toolu_2', toolName: 'lookup', args: 'not json' },
          { toolCallId: 'toolu_3', toolName: 'fail', args: {} },
          { toolCallId: 'toolu_4', toolName: 'photo', args: {} },
        ],
      },
      { role: 'tool', toolCallId: 'toolu_1', toolName: 'get_weather', content: { tempC: 21 } },
      { role: 'tool', toolCallId: 'toolu_2', toolName: 'lookup', content: 'plain text' },
      { role: 'tool', toolCallId: 'toolu_3', toolName: 'fail', content: 'boom', isError: true },
      {
        role: 'tool', toolCallId: 'toolu_4', toolName: 'photo',
        content: { type: 'content', parts: [{ type: 'text', text: 'The photo:' }, { type: 'image', data: 'AAAA', mediaType: 'image/jpeg' }] },
      },
      { role: 'user', content: 'Thanks.' },
      // A system message later in the history is user text in its place.
      { role: 'system', content: 'Recalled: the user likes trains.' },
      { role: 'assistant', content: '' },
      { role: 'user', content: 'Go on.' },
    ];
    await modelOn(server).doGenerate(ask({
      messages,
      tools: [weatherTool],
      toolChoice: 'required',
      settings: { temperature: 0.3, topP: 0.9, maxOutputTokens: 500 },
      providerOptions: {
        google: { safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }] },
        openai: { store: true },
      },
    }));
    expectSent(server.requests[0], generatePath(), {
      systemInstruction: { parts: [{ text: 'You are a travel agent.' }, { text: 'Answer in English.' }] },
      contents: [
        {
          role: 'user',
          parts: [
            { text: 'What is in these?' },
            { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/tower.jpg' } },
            { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
            { inlineData: { mimeType: 'image/webp', data: 'UklGRg==' } },
            { fileData: { mimeType: 'application/pdf', fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/abc123' } },
            { inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } },
          ],
        },
        {
          role: 'model',
          parts: [
            { text: 'Let me look.' },
            { functionCall: { name: 'get_weather', args: { city: 'Paris' } } },
            { functionCall: { name: 'lookup' } },
            { functionCall: { name: 'fail', args: {} } },
            { functionCall: { name: 'photo', args: {} } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'get_weather', response: { tempC: 21 } } },
            { functionResponse: { name: 'lookup', response: { result: 'plain text' } } },
            { functionResponse: { name: 'fail', response: { error: 'boom' } } },
            { functionResponse: { name: 'photo', response: { result: 'The photo:' }, parts: [{ inlineData: { mimeType: 'image/jpeg', data: 'AAAA' } }] } },
            { text: 'Thanks.' },
            { text: 'Recalled: the user likes trains.' },
            { text: 'Go on.' },
          ],
        },
      ],
      tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'The weather in a city.', parametersJsonSchema: weatherTool.parameters }] }],
      toolConfig: { functionCallingConfig: { mode: 'ANY' } },
      generationConfig: { temperature: 0.3, topP: 0.9, maxOutputTokens: 500 },
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }],
    });
  });

  it('tool choice: none and a named tool', async () => {
    server.reply({ json: fixture('text') }, { json: fixture('text') });
    const model = modelOn(server);
    await model.doGenerate(ask({ tools: [weatherTool], toolChoice: 'none' }));
    await model.doGenerate(ask({ tools: [weatherTool], toolChoice: { toolName: 'get_weather' } }));
    expect(server.requests.map((r) => (r.body as { toolConfig: unknown }).toolConfig)).toEqual([
      { functionCallingConfig: { mode: 'NONE' } },
      { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
    ]);
  });

  it('the json strategy sends the response schema alone: no function declarations, no tool config', async () => {
    server.reply({ json: fixture('json-answer') });
    const schema = { type: 'object', properties: { city: { type: 'string' }, tempC: { type: 'number' } }, required: ['city', 'tempC'] };
    const result = await modelOn(server).doGenerate(ask({ tools: [weatherTool], toolChoice: 'none', responseFormat: { type: 'json', schema } }));
    expectSent(server.requests[0], generatePath(), {
      ...USER_HI,
      generationConfig: { responseMimeType: 'application/json', responseJsonSchema: schema },
    });
    expect(JSON.parse(result.text)).toEqual({ city: 'Paris', tempC: 21 });
  });

  it('effort as thinkingConfig, by model family; a level the model cannot take is a warning', async () => {
    const cases: Array<[string, NonNullable<ModelRequest['settings']>['effort'], unknown]> = [
      ['gemini-2.5-flash', 'none', { thinkingBudget: 0 }],
      ['gemini-2.5-flash', 'low', { thinkingBudget: 1024, includeThoughts: true }],
      ['gemini-2.5-flash-lite', 'minimal', { thinkingBudget: 512, includeThoughts: true }],
      ['gemini-2.5-pro', 'max', { thinkingBudget: 32768, includeThoughts: true }],
      ['gemini-3-flash-preview', 'none', { thinkingLevel: 'minimal', includeThoughts: true }],
      ['gemini-3-flash-preview', 'medium', { thinkingLevel: 'medium', includeThoughts: true }],
      ['gemini-3-pro-preview', 'minimal', { thinkingLevel: 'low', includeThoughts: true }],
      ['gemini-3-pro-preview', 'xhigh', { thinkingLevel: 'high', includeThoughts: true }],
    ];
    for (const [modelId, effort, thinkingConfig] of cases) {
      server.reply({ json: fixture('text') });
      const result = await modelOn(server, modelId).doGenerate(ask({ settings: { effort } }));
      expectSent(server.requests.at(-1), generatePath(modelId), { ...USER_HI, generationConfig: { thinkingConfig } });
      expect(result.warnings).toBeUndefined();
    }
    server.reply({ json: fixture('text') });
    const pro = await modelOn(server, 'gemini-2.5-pro').doGenerate(ask({ settings: { effort: 'none' } }));
    expectSent(server.requests.at(-1), generatePath('gemini-2.5-pro'), USER_HI);
    expect(pro.warnings).toEqual([{ type: 'unsupported-setting', setting: 'effort', details: expect.stringContaining('cannot turn thinking off') }]);
  });
});

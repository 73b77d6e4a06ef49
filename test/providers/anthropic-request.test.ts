/** cairn/anthropic: how settings, content parts, caching and options become the request body. */
import { describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../../src/errors/index.js';
import type { ModelRequest, ModelSettings, ToolChoice } from '../../src/models/types.js';
import { toolContent } from '../../src/models/types.js';
import { wireServerForFile } from './wire-server.js';
import {
  ask, expectRequest, json, modelOf, WEATHER_TOOL, WIRE_WEATHER_TOOL,
} from './fixtures/anthropic/harness.js';

const server = await wireServerForFile();

const HI = [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }];

describe('effort, thinking and sampling by model family', () => {
  const cases: Array<{
    name: string; modelId: string; settings: ModelSettings; toolChoice?: ToolChoice;
    body: Record<string, unknown>; warnings?: unknown[];
  }> = [
    {
      name: 'Sonnet 4.5, effort low: extended thinking with the low budget, answer room on top',
      modelId: 'claude-sonnet-4-5', settings: { effort: 'low' },
      body: { max_tokens: 2048 + 4096, thinking: { type: 'enabled', budget_tokens: 2048 } },
    },
    {
      name: "Sonnet 4.5, effort 'none': no thinking, temperature passes",
      modelId: 'claude-sonnet-4-5', settings: { effort: 'none', temperature: 0.2 },
      body: { max_tokens: 8192, temperature: 0.2 },
    },
    {
      name: 'Sonnet 4.5 with maxOutputTokens: thinking takes at most half of it',
      modelId: 'claude-sonnet-4-5-20250929', settings: { effort: 'high', maxOutputTokens: 3000 },
      body: { max_tokens: 3000, thinking: { type: 'enabled', budget_tokens: 1500 } },
    },
    {
      name: 'Sonnet 4.5 with a maxOutputTokens too small for the minimum budget: no thinking, a warning',
      modelId: 'claude-sonnet-4-5', settings: { effort: 'medium', maxOutputTokens: 1500 },
      body: { max_tokens: 1500 },
      warnings: [{ type: 'unsupported-setting', setting: 'effort', details: 'Extended thinking is left out: maxOutputTokens 1500 leaves less than the 1024-token minimum budget.' }],
    },
    {
      name: 'Sonnet 4.5 takes temperature or top_p, not both: top_p is left out',
      modelId: 'claude-sonnet-4-5', settings: { temperature: 0.5, topP: 0.9 },
      body: { max_tokens: 8192, temperature: 0.5 },
      warnings: [{ type: 'unsupported-setting', setting: 'topP', details: 'This model takes temperature or top_p, not both; temperature was sent.' }],
    },
    {
      name: 'with thinking, top_p passes and temperature is left out',
      modelId: 'claude-sonnet-4-5', settings: { effort: 'minimal', temperature: 0.5, topP: 0.95 },
      body: { max_tokens: 1024 + 4096, thinking: { type: 'enabled', budget_tokens: 1024 }, top_p: 0.95 },
      warnings: [{ type: 'unsupported-setting', setting: 'temperature', details: 'The API refuses temperature while thinking is on.' }],
    },
    {
      name: 'Claude 3.5 Haiku takes both samplers',
      modelId: 'claude-3-5-haiku-20241022', settings: { temperature: 0.5, topP: 0.9 },
      body: { max_tokens: 8192, temperature: 0.5, top_p: 0.9 },
    },
    {
      name: 'Claude 3 Haiku writes at most 4096 tokens',
      modelId: 'claude-3-haiku-20240307', settings: {},
      body: { max_tokens: 4096 },
    },
    {
      name: 'Opus 4.5: the effort parameter beside an extended-thinking budget',
      modelId: 'claude-opus-4-5', settings: { effort: 'medium' },
      body: { max_tokens: 8192 + 4096, thinking: { type: 'enabled', budget_tokens: 8192 }, output_config: { effort: 'medium' } },
    },
    {
      name: "Opus 4.5 has no 'max' effort: sent as 'high', with max's budget",
      modelId: 'claude-opus-4-5-20251101', settings: { effort: 'max' },
      body: { max_tokens: 27648 + 4096, thinking: { type: 'enabled', budget_tokens: 27648 }, output_config: { effort: 'high' } },
      warnings: [{ type: 'other', message: "effort 'max' is sent as 'high', the nearest level this model takes." }],
    },
    {
      name: 'Opus 4.6: adaptive thinking steered by effort',
      modelId: 'claude-opus-4-6', settings: { effort: 'high' },
      body: { max_tokens: 16000, thinking: { type: 'adaptive' }, output_config: { effort: 'high' } },
    },
    {
      name: "Sonnet 4.6 has no 'xhigh': sent as 'high'",
      modelId: 'claude-sonnet-4-6', settings: { effort: 'xhigh', maxOutputTokens: 32000 },
      body: { max_tokens: 32000, thinking: { type: 'adaptive' }, output_config: { effort: 'high' } },
      warnings: [{ type: 'other', message: "effort 'xhigh' is sent as 'high', the nearest level this model takes." }],
    },
    {
      name: 'Opus 4.7 refuses temperature and top_p',
      modelId: 'claude-opus-4-7', settings: { effort: 'xhigh', temperature: 0.5, topP: 0.9 },
      body: { max_tokens: 16000, thinking: { type: 'adaptive' }, output_config: { effort: 'xhigh' } },
      warnings: [
        { type: 'unsupported-setting', setting: 'temperature', details: 'This model refuses temperature.' },
        { type: 'unsupported-setting', setting: 'topP', details: 'This model refuses top_p.' },
      ],
    },
    {
      name: 'a forced tool with extended thinking: thinking is left out (the API refuses the pair)',
      modelId: 'claude-sonnet-4-5', settings: { effort: 'high' }, toolChoice: { toolName: 'get_weather' },
      body: { max_tokens: 8192, tools: [WIRE_WEATHER_TOOL], tool_choice: { type: 'tool', name: 'get_weather' } },
      warnings: [{ type: 'unsupported-setting', setting: 'effort', details: 'Extended thinking is left out: the tool choice forces a tool call.' }],
    },
    {
      name: 'a forced tool with adaptive thinking keeps it',
      modelId: 'claude-opus-4-6', settings: { effort: 'low' }, toolChoice: 'required',
      body: { max_tokens: 16000, tools: [WIRE_WEATHER_TOOL], tool_choice: { type: 'any' }, thinking: { type: 'adaptive' }, output_config: { effort: 'low' } },
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      server.reply(json('text'));
      const tools = c.toolChoice !== undefined ? { tools: [WEATHER_TOOL], toolChoice: c.toolChoice } : {};
      const result = await modelOf(server, c.modelId).doGenerate(ask('Hi', { settings: c.settings, ...tools }));
      const { max_tokens, ...rest } = c.body;
      expectRequest(server.requests[0], { model: c.modelId, max_tokens, messages: HI, ...rest });
      expect(result.warnings).toEqual(c.warnings);
    });
  }
});

describe('prompt caching', () => {
  it('marks the last system block, the last tool and the last block of the last user turn', async () => {
    server.reply(json('final-answer'));
    const timeTool = { name: 'get_time', parameters: { type: 'object', properties: {} } };
    await modelOf(server).doGenerate({
      messages: [
        { role: 'system', content: 'You are a weather bot.' },
        { role: 'system', content: 'Answer in one line.' },
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: '', toolCalls: [{ toolCallId: 'toolu_1', toolName: 'get_weather', args: { city: 'Paris' } }] },
        { role: 'tool', toolCallId: 'toolu_1', toolName: 'get_weather', content: { tempC: 18 } },
      ],
      tools: [WEATHER_TOOL, timeTool],
      toolChoice: 'auto',
      settings: { promptCaching: true },
    });
    const ephemeral = { type: 'ephemeral' };
    expectRequest(server.requests[0], {
      model: 'claude-sonnet-4-5',
      max_tokens: 8192,
      system: [{ type: 'text', text: 'You are a weather bot.' }, { type: 'text', text: 'Answer in one line.', cache_control: ephemeral }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '{"tempC":18}', cache_control: ephemeral }] },
      ],
      tools: [WIRE_WEATHER_TOOL, { name: 'get_time', input_schema: { type: 'object', properties: {} }, cache_control: ephemeral }],
      tool_choice: { type: 'auto' },
    });
  });

  it('sets no breakpoint where there is nothing to mark', async () => {
    server.reply(json('text'));
    await modelOf(server).doGenerate(ask('Hi', { settings: { promptCaching: true } }));
    expectRequest(server.requests[0], {
      model: 'claude-sonnet-4-5', max_tokens: 8192,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] }],
    });
  });
});

describe('content parts and turn merging', () => {
  it('images, PDFs and text files by url or data; consecutive turns merged; tool results with parts and errors', async () => {
    server.reply(json('final-answer'));
    const request: ModelRequest = {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look at these.' },
            { type: 'image', url: 'https://example.com/cat.png' },
            { type: 'image', data: 'iVBORw0KGgo=', mediaType: 'image/png' },
            { type: 'file', data: 'JVBERi0xLjQ=', mediaType: 'application/pdf', filename: 'report.pdf' },
            { type: 'file', url: 'https://example.com/paper.pdf', mediaType: 'application/pdf' },
            { type: 'file', data: Buffer.from('plain notes').toString('base64'), mediaType: 'text/plain', filename: 'notes.txt' },
            { type: 'file', data: 'R0lGODlh', mediaType: 'image/gif' },
          ],
        },
        { role: 'user', content: 'And this one.' },
        {
          role: 'assistant', content: '',
          toolCalls: [
            { toolCallId: 'toolu_a', toolName: 'get_chart', args: {} },
            { toolCallId: 'toolu_b', toolName: 'get_weather', args: 'not json' },
          ],
        },
        { role: 'tool', toolCallId: 'toolu_a', toolName: 'get_chart', content: toolContent([{ type: 'text', text: 'The chart:' }, { type: 'image', data: 'iVBO', mediaType: 'image/png' }]) as never },
        { role: 'tool', toolCallId: 'toolu_b', toolName: 'get_weather', content: 'City not found', isError: true },
        { role: 'user', content: 'Summarize.' },
        { role: 'assistant', content: '' },
        { role: 'user', content: 'Please.' },
      ],
      tools: [],
      toolChoice: 'auto',
    };
    await modelOf(server).doGenerate(request);
    expectRequest(server.requests[0], {
      model: 'claude-sonnet-4-5',
      max_tokens: 8192,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look at these.' },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQ=' }, title: 'report.pdf' },
            { type: 'document', source: { type: 'url', url: 'https://example.com/paper.pdf' } },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain notes' }, title: 'notes.txt' },
            { type: 'image', source: { type: 'base64', media_type: 'image/gif', data: 'R0lGODlh' } },
            { type: 'text', text: 'And this one.' },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 'toolu_a', name: 'get_chart', input: {} },
            { type: 'tool_use', id: 'toolu_b', name: 'get_weather', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result', tool_use_id: 'toolu_a',
              content: [{ type: 'text', text: 'The chart:' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBO' } }],
            },
            { type: 'tool_result', tool_use_id: 'toolu_b', content: 'City not found', is_error: true },
            { type: 'text', text: 'Summarize.' },
            // The empty assistant turn is left out, so the two user turns merge.
            { type: 'text', text: 'Please.' },
          ],
        },
      ],
    });
  });

  it('a file the API cannot take fails before any request', async () => {
    const request = ask('', { messages: [{ role: 'user', content: [{ type: 'file', data: 'UEsDBA==', mediaType: 'application/zip' }] }] });
    const error = await modelOf(server).doGenerate(request).catch((e: unknown) => e);
    expect(InvalidOptionsError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('application/zip');
    expect(server.requests).toHaveLength(0);
  });
});

describe('provider options and settings of the factory', () => {
  it("providerOptions.anthropic is merged over the body last; other providers' options are ignored", async () => {
    server.reply(json('text'));
    await modelOf(server).doGenerate(ask('Hi', {
      providerOptions: { anthropic: { top_k: 5, metadata: { user_id: 'u-1' }, max_tokens: 100 }, openai: { store: true } },
    }));
    expectRequest(server.requests[0], { model: 'claude-sonnet-4-5', max_tokens: 100, messages: HI, top_k: 5, metadata: { user_id: 'u-1' } });
  });

  it('extra headers, another anthropic-version, and a baseURL with a trailing slash', async () => {
    server.reply(json('text'));
    const model = modelOf(server, 'claude-sonnet-4-5', {
      baseURL: `${server.url}/v1/`, headers: { 'anthropic-beta': 'files-api-2025-04-14' }, version: '2024-10-22',
    });
    await model.doGenerate(ask('Hi'));
    expectRequest(server.requests[0], { model: 'claude-sonnet-4-5', max_tokens: 8192, messages: HI }, {
      'anthropic-version': '2024-10-22', 'anthropic-beta': 'files-api-2025-04-14',
    });
  });
});

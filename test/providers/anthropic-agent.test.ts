/**
 * cairn/anthropic under the engine: a two-step tool loop whose first turn
 * thinks. The second request must start the assistant turn with the very
 * thinking block the first answer carried (signature unchanged), or the API
 * refuses it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAgent } from 'cairn/agent';
import { createAnthropic } from 'cairn/anthropic';
import { CANARY_KEY, startWireServer, visibleText, type WireServer } from './wire-server.js';
import { fixture, sse } from './fixtures/anthropic/harness.js';

let server: WireServer;
beforeAll(async () => {
  server = await startWireServer();
});
afterAll(async () => {
  await server.close();
});

describe('runAgent with an Anthropic model', () => {
  it('sends the first turn’s thinking block back unchanged, first in the assistant turn, on the second step', async () => {
    const events = fixture<Array<{ data: { delta?: { signature?: string } } }>>('stream-thinking-tool');
    const signature = events[4]!.data.delta!.signature!;
    const thinking = {
      type: 'thinking',
      thinking: 'The user wants the weather in Paris. I should call get_weather with city Paris.',
      signature,
    };
    server.reply(sse('stream-thinking-tool'), sse('stream-text'));
    const anthropic = createAnthropic({ apiKey: CANARY_KEY, baseURL: server.url });
    const result = await runAgent({
      model: anthropic('claude-sonnet-4-5'),
      prompt: 'Weather in Paris?',
      effort: 'medium',
      tools: {
        get_weather: {
          description: 'Current weather of a city.',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          execute: async ({ city }: { city: string }) => ({ city, tempC: 18 }),
        },
      },
    });
    expect(server.requests).toHaveLength(2);
    for (const request of server.requests) {
      expect(request.path).toBe('/messages');
      expect(request.headers['x-api-key']).toBe(CANARY_KEY);
    }
    const second = server.requests[1]!.body as { messages: Array<{ role: string; content: unknown[] }>; thinking?: unknown };
    expect(second.thinking).toEqual({ type: 'enabled', budget_tokens: 8192 });
    expect(second.messages[1]!.role).toBe('assistant');
    expect(second.messages[1]!.content[0]).toEqual(thinking);
    expect(second.messages[1]!.content).toEqual([
      thinking,
      { type: 'text', text: 'Let me look that up.' },
      { type: 'tool_use', id: 'toolu_01Th1nkW3ath3rPar1s', name: 'get_weather', input: { city: 'Paris' } },
    ]);
    expect(second.messages[2]).toEqual({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_01Th1nkW3ath3rPar1s', content: '{"city":"Paris","tempC":18}' }],
    });
    expect(result.status).toBe('completed');
    expect(result.text).toBe('Hello! How can I help?');
    expect(visibleText(result)).not.toContain(CANARY_KEY);
  });
});

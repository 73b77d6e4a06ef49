/**
 * cairn/openai under the engine: runAgent drives a Responses model (the default
 * global fetch against the local wire server) through a two-step tool loop,
 * and the spec's fail-over example runs as written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAgent } from 'cairn/agent';
import { createOpenAI } from 'cairn/openai';
import { createMockModel } from 'cairn/testing';
import { CANARY_KEY, startWireServer, visibleText, type WireServer } from './wire-server.js';
import { expectRequest, fixture, sse } from './fixtures/openai/harness.js';

let server: WireServer;
beforeAll(async () => { server = await startWireServer(); });
afterAll(async () => { await server.close(); });

describe('runAgent with an OpenAI Responses model', () => {
  it('runs a tool loop of two steps and sends the call, its output and the reasoning item back in step 2', async () => {
    server.reply(sse('openai/responses/agent-step-1-stream'), sse('openai/responses/agent-step-2-stream'));
    const lookups: unknown[] = [];
    const result = await runAgent({
      model: createOpenAI({ apiKey: CANARY_KEY, baseURL: `${server.url}/v1` })('gpt-5.2'),
      system: 'You answer questions about orders.',
      prompt: 'Where is order A-42?',
      tools: {
        lookup_order: {
          description: 'Looks an order up.',
          parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
          execute: (args: unknown) => {
            lookups.push(args);
            return { status: 'shipped', day: 'Monday' };
          },
        },
      },
    });
    expect(visibleText(result)).not.toContain(CANARY_KEY);
    expect(result.status).toBe('completed');
    expect(result.text).toBe('Order A-42 shipped on Monday.');
    expect(lookups).toEqual([{ orderId: 'A-42' }]);
    expect(server.requests).toHaveLength(2);

    const tools = [{
      type: 'function', name: 'lookup_order', description: 'Looks an order up.',
      parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] }, strict: false,
    }];
    const prefix = [{ role: 'developer', content: 'You answer questions about orders.' }, { role: 'user', content: 'Where is order A-42?' }];
    const common = { model: 'gpt-5.2', store: false, include: ['reasoning.encrypted_content'], tools, tool_choice: 'auto', stream: true };
    expectRequest(server.requests[0], { path: '/v1/responses', body: { ...common, input: prefix } });

    const step1 = fixture<Array<{ event: string; data: { response?: { output: Array<Record<string, unknown>> } } }>>('openai/responses/agent-step-1-stream');
    const reasoningItem = step1.at(-1)!.data.response!.output[0]!;
    const input = (server.requests[1]!.body as { input: unknown[] }).input;
    // The item the model returned in step 1, as it returned it (its encrypted content unchanged).
    expect(input[2]).toEqual(reasoningItem);
    expectRequest(server.requests[1], {
      path: '/v1/responses',
      body: {
        ...common,
        input: [
          ...prefix,
          reasoningItem,
          { type: 'function_call', call_id: 'call_Agent1LookupOrder42xyz', name: 'lookup_order', arguments: '{"orderId":"A-42"}' },
          { type: 'function_call_output', call_id: 'call_Agent1LookupOrder42xyz', output: '{"status":"shipped","day":"Monday"}' },
        ],
      },
    });
  });

  it("runs the spec's fail-over example: a primary that answers 503 hands the call to the fallback", async () => {
    const primary = createOpenAI({
      apiKey: 'demo',
      fetch: async () => new Response('{"error":{"message":"unavailable"}}', { status: 503 }),
    })('gpt-5.2');
    const result = await runAgent({
      model: primary,
      fallbackModels: [createMockModel({ responses: [{ text: 'Answered by the fallback.' }] })],
      maxRetries: 0,
      prompt: 'Hello?',
    });
    expect(result.status).toBe('completed');
    expect(result.text).toBe('Answered by the fallback.');
  });
});

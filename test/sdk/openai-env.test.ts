/**
 * `createOpenAI` as 004 uses it: `openai("model-id")` callable, the key and
 * the base URL read from OPENAI_API_KEY and OPENAI_BASE_URL when not given
 * (explicit options win), an Agent run over the Responses wire of a local
 * server.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, tool } from 'cairn';
import { createOpenAI } from 'cairn/openai';
import { startResponsesServer, type ResponsesServer } from './support/responses-server.js';

let server: ResponsesServer;
const saved = { key: process.env.OPENAI_API_KEY, base: process.env.OPENAI_BASE_URL };
beforeAll(async () => {
  server = await startResponsesServer();
});
afterAll(async () => {
  await server.close();
});
afterEach(() => {
  for (const [name, value] of [['OPENAI_API_KEY', saved.key], ['OPENAI_BASE_URL', saved.base]] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe('createOpenAI and the environment', () => {
  it('reads OPENAI_BASE_URL and OPENAI_API_KEY when they are not given', async () => {
    server.script('env', [
      { toolCalls: [{ name: 'lookupAccount', args: { accountId: 'acct_123' } }] },
      { text: 'Account acct_123 is active.' },
    ]);
    process.env.OPENAI_BASE_URL = `${server.baseURL('env')}/`;
    process.env.OPENAI_API_KEY = 'sk-env-key';
    const openai = createOpenAI({ apiKey: process.env.OPENAI_API_KEY });
    const agent = new Agent({
      model: openai('gpt-6-astra'),
      instructions: 'Answer with verified account facts and keep replies short.',
      maxSteps: 3,
      tools: {
        lookupAccount: tool({
          name: 'lookupAccount',
          schema: z.object({ accountId: z.string() }),
          execute: async ({ accountId }) => ({ accountId, status: 'active' }),
        }),
      },
    });
    const result = await agent.run({ prompt: 'Check account acct_123.' });
    expect(result.outputText).toBe('Account acct_123 is active.');
    const mine = server.requests.filter((r) => r.script === 'env');
    expect(mine).toHaveLength(2);
    expect(mine[0]!.authorization).toBe('Bearer sk-env-key');
    expect(mine[0]!.body.model).toBe('gpt-6-astra');
    expect(mine[0]!.body.tools![0]).toMatchObject({ name: 'lookupAccount', parameters: { type: 'object', required: ['accountId'] } });
    // The second request carries the call and its output back.
    expect(JSON.stringify(mine[1]!.body.input)).toContain('"function_call_output"');
  });

  it('explicit options win over the environment, and an empty OPENAI_BASE_URL counts as unset', async () => {
    server.script('explicit', [{ text: 'explicit' }]);
    process.env.OPENAI_BASE_URL = 'http://127.0.0.1:9/nowhere/v1';
    process.env.OPENAI_API_KEY = 'sk-env-key';
    const model = createOpenAI({ apiKey: 'sk-given', baseURL: server.baseURL('explicit') })('gpt-6-astra');
    const result = await new Agent({ model }).run({ prompt: 'hi' });
    expect(result.outputText).toBe('explicit');
    expect(server.requests.filter((r) => r.script === 'explicit')[0]!.authorization).toBe('Bearer sk-given');

    process.env.OPENAI_BASE_URL = '';
    const fetched: string[] = [];
    const fallback = createOpenAI({ apiKey: 'k', fetch: async (input) => {
      fetched.push(String(input));
      return new Response('{"error":{"message":"no"}}', { status: 400 });
    } })('gpt-6-astra');
    await new Agent({ model: fallback, maxRetries: 0 }).run({ prompt: 'hi' });
    expect(fetched[0]).toBe('https://api.openai.com/v1/responses');
  });
});

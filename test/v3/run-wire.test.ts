/**
 * Without the V3 options nothing a provider receives changes: the recorded
 * OpenAI Responses tool loop (test/providers/openai-agent.test.ts) sends
 * byte-identical request bodies whether the run has no store, today's store,
 * or checkpointVersion 3 on a V3 store with no context and no working memory.
 * With a context, the request carries the compiled blocks and nothing else
 * changes in the body.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, createInMemoryAgentRunStoreV3, runAgent } from 'cairn/agent';
import { createRagContextSource } from 'cairn/context';
import { createOpenAI } from 'cairn/openai';
import { CANARY_KEY, startWireServer, type WireServer } from '../providers/wire-server.js';
import { sse } from '../providers/fixtures/openai/harness.js';

let server: WireServer;
beforeAll(async () => { server = await startWireServer(); });
afterAll(async () => { await server.close(); });

const tools = {
  lookup_order: {
    description: 'Looks an order up.',
    parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
    execute: () => ({ status: 'shipped', day: 'Monday' }),
  },
};

/** Runs the recorded two-step loop and answers the raw request bodies, as sent. */
async function bodies(extra: Record<string, unknown>): Promise<string[]> {
  server.reply(sse('openai/responses/agent-step-1-stream'), sse('openai/responses/agent-step-2-stream'));
  const sent: string[] = [];
  const capture: typeof fetch = async (input, init) => {
    sent.push(String(init?.body));
    return fetch(input, init);
  };
  const result = await runAgent({
    model: createOpenAI({ apiKey: CANARY_KEY, baseURL: `${server.url}/v1`, fetch: capture })('gpt-5.2'),
    system: 'You answer questions about orders.',
    prompt: 'Where is order A-42?',
    tools,
    ...extra,
  } as never);
  expect(result.status).toBe('completed');
  return sent;
}

describe('provider requests of V3 runs', () => {
  it('are byte-identical without the V3 options, whatever the store and checkpointVersion', async () => {
    const none = await bodies({});
    expect(none).toHaveLength(2);
    const today = await bodies({ session: { store: createInMemoryAgentRunStore(), runId: 'a', scope: 's' } });
    const v3 = await bodies({ checkpointVersion: 3, session: { store: createInMemoryAgentRunStoreV3(), runId: 'a', scope: 's' } });
    expect(today).toEqual(none);
    expect(v3).toEqual(none);
  });

  it('carry the compiled blocks as input items and change nothing else', async () => {
    const none = (await bodies({})).map((b) => JSON.parse(b) as { input: unknown[] });
    const withContext = (await bodies({
      checkpointVersion: 3,
      session: { store: createInMemoryAgentRunStoreV3(), runId: 'c', scope: 's' },
      context: { sources: [createRagContextSource({ retrieve: () => [{ text: 'A-42 left Lyon.', index: 0 }] })] },
    })).map((b) => JSON.parse(b) as { input: unknown[] });
    const block = { role: 'user', content: '<cairn_context pass="0" step="0">\n[rag rag:0] A-42 left Lyon.\n</cairn_context>' };
    // Step 0: the history, then the block.
    expect(withContext[0]).toEqual({ ...none[0], input: [...none[0]!.input, block] });
    // Step 1: the block stayed in the history where it was sent, before the model's turn.
    const [system, user, ...rest] = none[1]!.input;
    expect(withContext[1]).toEqual({ ...none[1], input: [system, user, block, ...rest] });
  });
});

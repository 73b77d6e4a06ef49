/**
 * The V3 run behind the V3 store's compatibility fixtures (test/compat/corpus/v3-store/):
 * the corpus agent (corpus-agent.ts: same tools, model id, binding id, clock and ids) run with
 * checkpointVersion 3, one retrieval source and working memory. Changing anything that goes
 * into the binding or the compiled context makes the frozen records refuse to resume: add a
 * case under a new folder instead.
 */
import type { AgentRunStoreV3 } from 'cairn/agent';
import { createRagContextSource } from 'cairn/context';
import type { MockResponse } from 'cairn/testing';
import { corpusAgent, WRITTEN_AT, type Effects } from '../compat/corpus-agent.js';

export const V3_CORPUS_RUN_ID = 'corpus-v3-suspended-approval';

export const LOOKUP: MockResponse = { toolCalls: [{ toolName: 'lookup', args: { orderId: '7' } }] };
export const PAY: MockResponse = { toolCalls: [{ toolName: 'pay', args: { orderId: '7', amountCents: 4200 } }] };
export const DONE: MockResponse = { text: 'Order 7 is paid and packed.' };

export function v3CorpusAgent(options: { store: AgentRunStoreV3; effects: Effects; responses: MockResponse[]; idPrefix?: string }) {
  const base = corpusAgent({ ...options, store: options.store as never, runId: V3_CORPUS_RUN_ID });
  return {
    ...base,
    checkpointVersion: 3 as const,
    context: {
      sources: [createRagContextSource({ retrieve: async () => [{ text: 'Order 7 ships from Lyon.', index: 0, score: 0.9 }] })],
    },
    workingMemory: { create: { scope: 'tenant-corpus', goal: 'Charge and ship order 7.', now: WRITTEN_AT } },
  };
}

/**
 * Recall in a run: once, before the first model call, from the last user
 * message; one system message marked providerMetadata.cairn.memoryRecall;
 * the same prefix on every step and resume; a failing store is a warning.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, streamAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { createExecutionContext } from 'cairn/policy';
import { testMemory } from './run-helpers.js';

const seed = async (memory: ReturnType<typeof testMemory>, text = 'prefers green tea', extra = {}) =>
  memory.store.add({ id: `seed-${text}`, scope: { userId: 'ada' }, text, at: 1, ...extra });

describe('memory recall in a run', () => {
  it('appends one marked system message after the input, sends it on every step, and records it', async () => {
    const memory = testMemory({ extract: false });
    await seed(memory);
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'look', args: {} }] }, { text: 'Green tea.' }] });
    const store = createInMemoryAgentRunStore();
    const result = await runAgent({
      model, prompt: 'Which tea do I like?', memory, session: { store, runId: 'r1', scope: 't' },
      tools: { look: { parameters: { type: 'object' }, execute: () => 'nothing' } },
    });
    expect(result.status).toBe('completed');
    const recall = result.messages[1] as { role: string; content: string; providerMetadata?: unknown };
    expect(recall).toMatchObject({ role: 'system', providerMetadata: { cairn: { memoryRecall: { count: 1 } } } });
    expect(recall.content).toContain('prefers green tea');
    // Both model calls got the same prefix: the input, then the recall.
    for (const call of model.calls) expect(call.messages.slice(0, 2)).toEqual(result.messages.slice(0, 2));
    expect((await store.load('r1'))?.memory).toEqual({ scope: { userId: 'ada' }, recall: { status: 'recalled', count: 1 } });
  });

  it('never recalls again on a resume, nor for a history whose last user message a recall already follows', async () => {
    const memory = testMemory({ extract: false });
    await seed(memory);
    let searches = 0;
    const search = memory.store.search.bind(memory.store);
    memory.seams.store = { ...memory.store, search: (input) => (searches++, search(input)) };
    const store = createInMemoryAgentRunStore();
    const options = {
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'publish', args: {} }] }, { text: 'Done.' }] }),
      prompt: 'Publish my tea notes.', memory, session: { store, runId: 'r2', scope: 't' },
      tools: { publish: { parameters: { type: 'object' as const }, needsApproval: true, execute: () => 'ok' } },
    };
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    expect(searches).toBe(1);
    if (first.status !== 'suspended') return;
    const resumed = await resumeAgent({ ...options, approvalResponses: [{ approvalId: first.pendingApprovals[0]!.approvalId, token: first.pendingApprovals[0]!.token, approved: true }] });
    expect(resumed.status).toBe('completed');
    expect(searches).toBe(1);
    expect(resumed.messages.filter((m) => m.role === 'system')).toHaveLength(1);
    // A new run continuing that history (no new user turn) does not recall again.
    const again = await runAgent({ model: createMockModel({ responses: [{ text: 'Still done.' }] }), messages: resumed.messages, memory });
    expect(searches).toBe(1);
    expect(again.messages.filter((m) => m.role === 'system')).toHaveLength(1);
  });

  it('a failing store is a warning part and the run goes on without memories', async () => {
    const memory = testMemory({ extract: false });
    memory.seams.store = { ...memory.store, search: async () => { throw new Error('memory db down'); } };
    const stream = streamAgent({ model: createMockModel({ responses: [{ text: 'Hi.' }] }), prompt: 'Hello', memory });
    const warnings: unknown[] = [];
    for await (const event of stream.events) if (event.type === 'warning') warnings.push(event);
    const result = await stream.result;
    expect(result.status).toBe('completed');
    expect(result.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(warnings).toEqual([expect.objectContaining({ setting: 'memory', message: expect.stringContaining('memory db down') })]);
  });

  it('an embedding of another model is left out with an embedding-mismatch warning; the embedder is charged to the run\'s context', async () => {
    const memory = testMemory({ extract: false });
    await seed(memory, 'prefers green tea', { embedding: { vector: [1, 0], model: 'old' } });
    memory.seams.embedder = async () => ({ vector: [1, 0], model: 'new' });
    const execution = createExecutionContext({ budget: { tokens: 100_000 } });
    const result = await runAgent({ model: createMockModel({ responses: [{ text: 'Hi.' }] }), prompt: 'tea?', memory, execution });
    expect(result.warnings.map((w) => (w as { code?: string }).code)).toEqual(['unaccounted-usage', 'embedding-mismatch']);
    const entries = await execution.ledger.entries();
    expect(entries.filter((e) => e.model === 'memory:embedder')).toEqual([expect.objectContaining({ status: 'unknown' })]);
  });

  it('recall: false sends the input alone', async () => {
    const memory = testMemory({ extract: false, recall: false });
    await seed(memory);
    const result = await runAgent({ model: createMockModel({ responses: [{ text: 'Hi.' }] }), prompt: 'tea?', memory });
    expect(result.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
  });
});

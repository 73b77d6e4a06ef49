/**
 * A leg's result holds the run's transcript as a copy made when the caller
 * first reads `messages` (the engine no longer copies the whole transcript
 * for a caller that never reads it): the copy is the caller's own, the same
 * array on every read, assignable, and changing it changes nothing stored.
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, type ResumeOptions } from '../../src/agent/index.js';
import { createInMemoryAgentRunStore } from '../../src/stores/in-memory.js';
import { createMockModel } from '../../src/testing/index.js';

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
const step = (id: string, toolName: string) => ({
  text: '', toolCalls: [{ toolCallId: id, toolName, args: { id } }], finishReason: 'tool-calls' as const, usage,
});

const model = () => createMockModel({ responses: [step('a', 'echo'), step('b', 'deploy'), { text: 'done', toolCalls: [], finishReason: 'stop', usage }] });

function options(store: ReturnType<typeof createInMemoryAgentRunStore>, scripted = model()): ResumeOptions {
  return {
    model: scripted,
    prompt: 'go',
    session: { store, runId: 'detached', scope: 's' },
    tools: {
      echo: { parameters: { type: 'object' }, execute: (args: { id: string }) => ({ echoed: args.id }) },
      deploy: { parameters: { type: 'object' }, needsApproval: true, execute: () => 'deployed' },
    },
  };
}

describe('a result detached from the run', () => {
  it('copies the transcript on the first read, once, and shares nothing with the store', async () => {
    const store = createInMemoryAgentRunStore();
    const scripted = model();
    const first = await runAgent(options(store, scripted));
    expect(first.status).toBe('suspended');
    if (first.status !== 'suspended') return;
    const result = await resumeAgent({
      ...options(store, scripted),
      approvalResponses: first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true })),
    });
    expect(result.status).toBe('completed');
    expect(Object.keys(result)).toContain('messages');
    const messages = result.messages;
    expect(result.messages).toBe(messages);
    expect(JSON.parse(JSON.stringify(result)).messages).toEqual(messages);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    const stored = await store.load('detached', { scope: 's' });
    const storedMessages = (stored!.result as { messages: unknown[] }).messages;
    expect(storedMessages).toEqual(messages);
    (messages[0] as { content: string }).content = 'changed';
    messages.push({ role: 'user', content: 'more' });
    const again = await store.load('detached', { scope: 's' });
    expect((again!.result as { messages: unknown[] }).messages).toEqual(storedMessages);
    result.messages = [];
    expect(result.messages).toEqual([]);
  });

  it('answers the same copy from a frozen result', async () => {
    const store = createInMemoryAgentRunStore();
    const result = await runAgent({ ...options(store), tools: {}, model: createMockModel({ responses: [{ text: 'hi', toolCalls: [], finishReason: 'stop', usage }] }) });
    Object.freeze(result);
    const messages = result.messages;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(result.messages).toBe(messages);
    expect(structuredClone(result).messages).toEqual(messages);
  });
});

import { describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, resumeAgent, runAgent, streamAgent,
} from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

describe('spec examples', () => {
  it('a typed, validated result', async () => {
    type Answer = { answer: number };
    const result = await runAgent<Answer>({
      model: createMockModel({ responses: [{ text: '{"answer":42}' }] }),
      prompt: 'Return the answer as JSON.',
      output: {
        mode: 'json',
        schema: {
          type: 'object',
          properties: { answer: { type: 'number' } },
          required: ['answer'],
          additionalProperties: false,
        },
        validate(value) {
          if (value === null || typeof value !== 'object' || !('answer' in value) || typeof value.answer !== 'number') {
            throw new Error('Expected a numeric answer');
          }
          return { answer: value.answer };
        },
      },
      verify: ({ output }) => (output.answer === 42 ? { status: 'verified' } : { status: 'rejected', feedback: 'Recheck the calculation.' }),
      maxSteps: 5,
      maxOutputAttempts: 2,
      maxVerifyAttempts: 2,
    });
    expect(result.status).toBe('completed');
    if (result.status !== 'completed') return;
    expect(result.output.answer).toBe(42);
    expect(result.steps).toBe(1);
    expect(result.runId).toBeTruthy();
  });

  it('streaming', async () => {
    const stream = streamAgent({
      model: createMockModel({ responses: [{ text: 'Hello' }] }),
      prompt: 'Say hello.',
    });
    const statuses: string[] = [];
    for await (const event of stream.events) {
      if (event.type === 'result') statuses.push(event.result.status);
    }
    expect(statuses).toEqual(['completed']);
    expect((await stream.result).text).toBe('Hello');
  });

  it('approval across resume', async () => {
    const store = createInMemoryAgentRunStore();
    let published = 0;
    const options = {
      model: createMockModel({ responses: [
        { toolCalls: [{ toolName: 'publish', args: {} }] },
        { text: 'Approved operation finished.' },
      ] }),
      prompt: 'Run the publish demonstration.',
      bindingId: 'publish-demo-v1',
      session: { store, runId: 'demo-1', scope: 'tenant-a' },
      tools: {
        publish: {
          description: 'Demonstrate an approval gate.',
          parameters: { type: 'object' as const, properties: {}, additionalProperties: false },
          needsApproval: true,
          execute: () => {
            published++;
            return 'demo complete';
          },
        },
      },
    };
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    if (first.status !== 'suspended') return;
    expect(first.pendingApprovals).toHaveLength(1);
    expect(published).toBe(0);
    const approvalResponses = first.pendingApprovals.map((request) => ({
      approvalId: request.approvalId,
      approved: true,
      token: request.token,
    }));
    const resumed = await resumeAgent({ ...options, approvalResponses });
    expect(resumed.status).toBe('completed');
    expect(resumed.text).toBe('Approved operation finished.');
    expect(published).toBe(1);
    const again = await resumeAgent({ ...options, approvalResponses });
    expect(again.status).toBe('completed');
    expect(published).toBe(1);
  });

  it('idempotent tool keyed by [modelStep, toolCallId]', async () => {
    const board = new Map<string, string>();
    const result = await runAgent({
      model: createMockModel({ responses: [
        { toolCalls: [{ toolName: 'note', args: { text: 'checked' } }] },
        { text: 'Noted.' },
      ] }),
      prompt: 'Leave a note.',
      tools: {
        note: {
          description: 'Append a note to the shared board.',
          parameters: { type: 'object' as const, properties: { text: { type: 'string' } }, required: ['text'] },
          replay: 'idempotent',
          execute: ({ text }: { text: string }, ctx) => {
            board.set(`${ctx.toolCallId}@${ctx.modelStep}`, text);
            return 'noted';
          },
        },
      },
    });
    expect(result.status).toBe('completed');
    expect([...board.entries()]).toEqual([['tool_0@0', 'checked']]);
  });
});

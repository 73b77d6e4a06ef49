/**
 * taskOutcome from the receipts: an ordinary tool error is still resolved,
 * a run that stops early is failed, a waiting one in_progress, and an effect
 * a crash left in doubt needs_reconciliation (see restart.test.ts for a real
 * killed process); an idempotent tool's interrupted call is not in doubt.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, taskOutcomeOf, tool } from 'cairn';
import type { AgentRunEnvelope, AgentToolReceipt } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const call = (name: string) => ({ toolCalls: [{ toolName: name, args: {} }] });

describe('taskOutcome', () => {
  it('an ordinary tool error does not make the task indeterminate', async () => {
    const broken = tool({ name: 'broken', schema: z.object({}), execute: () => { throw new Error('upstream said no'); } });
    const model = createMockModel({ responses: [call('broken'), { text: 'The lookup failed; try later.' }] });
    const result = await new Agent({ model, tools: [broken] }).run({ prompt: 'go' });
    expect(result.status).toBe('completed');
    expect(result.state.toolResults).toEqual([expect.objectContaining({ status: 'failed', isError: true })]);
    expect(result.taskOutcome).toBe('resolved');
  });

  it('a run that stops before it finishes is failed', async () => {
    const noop = tool({ name: 'noop', schema: z.object({}), execute: () => 'ok' });
    const model = createMockModel({ responses: [call('noop'), call('noop')] });
    const result = await new Agent({ model, maxSteps: 2, tools: [noop] }).run({ prompt: 'go' });
    expect(result.status).toBe('stopped');
    expect(result.state.stopReason).toBe('max-steps');
    expect(result.taskOutcome).toBe('failed');
  });

  it('reads an interrupted receipt: in doubt unless the tool is idempotent', () => {
    const receipt = (idempotent: boolean): AgentToolReceipt => ({
      key: '0:c1', toolCallId: 'c1', toolName: 'charge', modelStep: 0, status: 'executing', idempotent,
    });
    const record = (r: AgentToolReceipt, status: AgentRunEnvelope['status']) =>
      ({ receipts: { [r.key]: r }, status, approvals: {}, pendingApprovals: [] }) as unknown as AgentRunEnvelope;
    expect(taskOutcomeOf(record(receipt(false), 'running'))).toBe('needs_reconciliation');
    expect(taskOutcomeOf(record(receipt(true), 'running'))).toBe('in_progress');
    expect(taskOutcomeOf(record({ ...receipt(false), status: 'completed' }, 'completed'))).toBe('resolved');
    expect(taskOutcomeOf(record({ ...receipt(false), status: 'completed' }, 'suspended'))).toBe('in_progress');
  });
});

/**
 * A run suspends from inside the save that records its suspension, so the
 * restored run asks for that save again. When the record it would write is
 * the stored one but for its revision and time, the resume does not write it
 * a second time: its first save is the approved call's `executing` receipt,
 * still before the effect. A resume that changes the record (another plan)
 * writes it first, as before.
 */
import { describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunEnvelope, type AgentRunStore,
} from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { recordingStore as recording } from '../support/recording-store.js';

const effects: string[] = [];
const tools = {
  lookup: { parameters: { type: 'object' }, execute: () => ({ found: true }) },
  pay: {
    parameters: { type: 'object' },
    needsApproval: true,
    execute: () => {
      effects.push('pay');
      return { paid: true };
    },
  },
};

async function suspendedRun(store: AgentRunStore, runId: string) {
  const first = await runAgent({
    model: createMockModel({
      responses: [
        { toolCalls: [{ toolCallId: 'l', toolName: 'lookup', args: {} }] },
        { toolCalls: [{ toolCallId: 'p', toolName: 'pay', args: {} }] },
      ],
    }),
    prompt: 'Look up, then pay.',
    tools,
    session: { store, runId, scope: 's' },
  });
  if (first.status !== 'suspended') throw new Error(`expected a suspended run, got ${first.status}`);
  const [pending] = first.pendingApprovals;
  return [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }];
}

/** The record without what every save changes. */
const content = (envelope: AgentRunEnvelope) => ({ ...envelope, revision: 0, updatedAt: 0 });

describe("a resume's first save", () => {
  it('is the approved call\'s executing receipt, not the stored suspension written again', async () => {
    const inner = createInMemoryAgentRunStore();
    const approvals = await suspendedRun(inner, 'r1');
    const stored = (await inner.load('r1'))!;
    const { store, saved } = recording(inner);
    effects.length = 0;
    const done = await resumeAgent({
      model: createMockModel({ responses: [{ text: 'Paid.' }] }),
      prompt: 'Look up, then pay.',
      tools,
      approvalResponses: approvals,
      session: { store, runId: 'r1', scope: 's' },
    });
    expect(done.status).toBe('completed');
    expect(effects).toEqual(['pay']);
    // The revisions go on from the stored one, and none of the saves is the stored record again.
    expect(saved.map((e) => e.revision)).toEqual(saved.map((_, i) => stored.revision + 1 + i));
    expect(saved.some((e) => JSON.stringify(content(e)) === JSON.stringify(content(stored)))).toBe(false);
    const first = saved[0]!;
    expect(first.status).toBe('running');
    expect(Object.values(first.receipts).find((r) => r.toolCallId === 'p')?.status).toBe('executing');
    expect(saved.at(-1)!.status).toBe('completed');
  });

  it('writes the restored record first when the resume changed it (here, its plan)', async () => {
    const inner = createInMemoryAgentRunStore();
    const approvals = await suspendedRun(inner, 'r2');
    const stored = (await inner.load('r2'))!;
    const { store, saved } = recording(inner);
    const done = await resumeAgent({
      model: createMockModel({ responses: [{ text: 'Paid.' }] }),
      prompt: 'Look up, then pay.',
      tools,
      approvalResponses: approvals,
      // A signal gives every call an admission stage: the plan the record holds is not the stored one.
      abortSignal: new AbortController().signal,
      session: { store, runId: 'r2', scope: 's' },
    });
    expect(done.status).toBe('completed');
    const first = saved[0]!;
    expect(first.status).toBe('suspended');
    expect(first.revision).toBe(stored.revision + 1);
    expect(JSON.stringify(content(first))).not.toBe(JSON.stringify(content(stored)));
  });
});

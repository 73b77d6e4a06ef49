/**
 * A run restored in the middle of a save (its suspension's) asks for that save again. While the restored actor and
 * its calls hold the very snapshots they were restored with, and the restore changed nothing of the stored record
 * (the same binding, tools and plans), that write is the stored record: it is not made (src/runtime/host.ts, write).
 * Where a resume changes the plan the record is written, as before.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunEnvelope, type AgentRunStore } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

function counted(inner: AgentRunStore) {
  const saved: AgentRunEnvelope[] = [];
  return {
    saved,
    store: {
      load: (runId, options) => inner.load(runId, options),
      save: async (envelope, options) => {
        await inner.save(envelope, options);
        saved.push(JSON.parse(JSON.stringify(envelope)));
      },
    } satisfies AgentRunStore,
  };
}

// The first leg's model asks for the deploy; a resume's answers once it ran.
const options = (store: AgentRunStore, resumed = true) => ({
  model: createMockModel({ responses: [resumed ? { text: 'done' } : { toolCalls: [{ toolName: 'deploy', args: {}, toolCallId: 'd' }] }] }),
  prompt: 'Deploy.',
  tools: { deploy: { parameters: { type: 'object' }, needsApproval: true, execute: () => 'deployed' } },
  session: { store, runId: 'run-1', scope: 'tenant' },
});

async function suspended() {
  const inner = createInMemoryAgentRunStore();
  const first = await runAgent(options(inner, false));
  if (first.status !== 'suspended') throw new Error(`the first leg ended ${first.status}`);
  const approvals = first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));
  const stored = (await inner.load('run-1', { scope: 'tenant' }))!;
  return { inner, approvals, stored };
}

describe('a restored run\'s first write', () => {
  it('is not made while the actor holds what it was restored from', async () => {
    const { inner, approvals, stored } = await suspended();
    const { store, saved } = counted(inner);
    const resumed = await resumeAgent({ ...options(store), approvalResponses: approvals });
    expect(resumed.status).toBe('completed');
    // The executing receipt, the step's checkpoint, the completed run: none of them is the stored record again.
    expect(saved).toHaveLength(3);
    expect(saved[0]!.revision).toBe(stored.revision + 1);
    expect(saved[0]!.status).not.toBe('suspended');
  });

  it('is made where the resume changed the plan the record holds', async () => {
    const { inner, approvals, stored } = await suspended();
    const { store, saved } = counted(inner);
    // A guardrail the first leg did not have: the run's and the call's plans change before the actor is restored.
    const resumed = await resumeAgent({ ...options(store), approvalResponses: approvals, onToolCall: () => ({ action: 'allow' }) });
    expect(resumed.status).toBe('completed');
    expect(saved).toHaveLength(4);
    expect(saved[0]!.status).toBe('suspended');
    expect(saved[0]!.revision).toBe(stored.revision + 1);
    expect((saved[0]!.snapshot as { context: { plan: { calls: { deploy: { guardrails: boolean } } } } }).context.plan.calls.deploy.guardrails).toBe(true);
  });
});

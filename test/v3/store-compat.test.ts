/**
 * A version-3 record on today's path: resumeAgent and reconcileAgentRun without
 * checkpointVersion 3 refuse it as a checkpoint version, identity or scope
 * mismatch before any model or tool call, and write nothing; so does a
 * resume handed a V3 store.
 */
import { describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, createInMemoryAgentRunStoreV3, reconcileAgentRun, resumeAgent, runAgent,
  type AgentRunEnvelope, type AgentRunEnvelopeV3, type AgentRunStore, type AgentTool,
} from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const MISMATCH = 'Native checkpoint version, identity, or scope mismatch.';

/** A run suspended at an approval; its record, and counters of every model and tool call after it. */
async function suspendedRecord() {
  const store = createInMemoryAgentRunStore();
  let effects = 0;
  const publish: AgentTool = {
    description: 'Publishes.', parameters: { type: 'object', properties: {} }, needsApproval: true,
    execute: async () => {
      effects += 1;
      return 'published';
    },
  };
  const session = { store, runId: 'v3-1', scope: 'tenant-a' };
  const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'publish', toolCallId: 'p1', args: {} }] }] });
  const first = await runAgent({ model, prompt: 'Publish.', session, tools: { publish } });
  expect(first.status).toBe('suspended');
  const record = (await store.load('v3-1'))!;
  const approval = first.status === 'suspended' ? first.pendingApprovals[0]! : undefined;
  return { record, publish, approval: approval!, effects: () => effects };
}

const asV3 = (record: AgentRunEnvelope): AgentRunEnvelopeV3 => ({ ...structuredClone(record), version: 3 });

describe('a V3 record on the version-1/2 path', () => {
  it('resumeAgent refuses it before any model or tool call, and writes nothing', async () => {
    const { record, publish, approval, effects } = await suspendedRecord();
    const v3 = asV3(record);
    const store = createInMemoryAgentRunStore([v3 as unknown as AgentRunEnvelope]);
    const model = createMockModel({ responses: [{ text: 'never' }] });
    const result = await resumeAgent({
      model, tools: { publish }, session: { store, runId: 'v3-1', scope: 'tenant-a' },
      approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }],
    });
    expect(result).toMatchObject({ status: 'failed', error: { code: 'scope_mismatch', message: MISMATCH } });
    expect(model.calls).toHaveLength(0);
    expect(effects()).toBe(0);
    expect(await store.load('v3-1')).toEqual(JSON.parse(JSON.stringify(v3)));
  });

  it('reconcileAgentRun rejects it with the same error', async () => {
    const { record } = await suspendedRecord();
    const store = createInMemoryAgentRunStore([asV3(record) as unknown as AgentRunEnvelope]);
    await expect(reconcileAgentRun({ session: { store, runId: 'v3-1', scope: 'tenant-a' } }))
      .rejects.toMatchObject({ code: 'scope_mismatch', message: MISMATCH });
  });

  it('a resume without checkpointVersion 3 handed a V3 store is refused before any model or tool call', async () => {
    const { record, publish, approval, effects } = await suspendedRecord();
    const runs = createInMemoryAgentRunStoreV3();
    await runs.save({ ...asV3(record), revision: 1 });
    const before = await runs.load('v3-1');
    const model = createMockModel({ responses: [{ text: 'never' }] });
    const result = await resumeAgent({
      model, tools: { publish }, session: { store: runs as unknown as AgentRunStore, runId: 'v3-1', scope: 'tenant-a' },
      approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }],
    });
    // Refused as the mismatch it loads, or earlier, at the options (a V3 store needs checkpointVersion 3).
    expect(result.status).toBe('failed');
    if (result.status === 'failed') expect(['scope_mismatch', 'invalid_options']).toContain(result.error.code);
    expect(model.calls).toHaveLength(0);
    expect(effects()).toBe(0);
    expect(await runs.load('v3-1')).toEqual(before);
  });
});

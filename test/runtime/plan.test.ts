/**
 * The run's plan (src/runtime/plan.ts): which stages of the tool path have
 * work under the options of the leg that hosts the run. A resume brings its
 * own options, and the calls already in flight follow them, not the plan the
 * run was started with.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentTool } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const session = (store: ReturnType<typeof createInMemoryAgentRunStore>) => ({ store, runId: 'plan-run', scope: 'tenant-a' });
const turn = { toolCalls: [{ toolName: 'send', toolCallId: 'c1', args: { to: 'ada' } }] };
const send: AgentTool = { description: 'Send.', parameters: { type: 'object' }, needsApproval: true, execute: () => ({ sent: 'ada' }) };

interface StoredRun {
  context: { plan?: { durable: boolean; calls: Record<string, { projects: boolean; guardrails: boolean }> } };
  children: Record<string, { snapshot: { context: { plan?: { projects: boolean } | null } } }>;
}

async function suspended(options: { onToolResult?: Parameters<typeof runAgent>[0]['onToolResult'] }) {
  const store = createInMemoryAgentRunStore();
  const model = createMockModel({ responses: [turn, { text: 'Done.' }] });
  const first = await runAgent({ model, prompt: 'Send it.', tools: { send }, session: session(store), ...options });
  if (first.status !== 'suspended') throw new Error(`expected a suspension, got ${first.status}`);
  const stored = (await store.load('plan-run', { scope: 'tenant-a' }))!;
  return { store, model, first, stored: stored.snapshot as unknown as StoredRun };
}

const approve = (first: { pendingApprovals: { approvalId: string; token: string }[] }) =>
  first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));

describe('the plan follows the options of the leg that runs the call', () => {
  it('is stored with the run and each open call, as the options decided it', async () => {
    const { stored } = await suspended({});
    expect(stored.context.plan).toMatchObject({ durable: true, policy: false, calls: { send: { approval: true, executes: true, projects: false, guardrails: false } } });
    expect(stored.children['call-0-0']!.snapshot.context.plan).toMatchObject({ approval: true, projects: false });
  });

  it('a resume that adds onToolResult has it run on the call that was waiting (started without one)', async () => {
    const { store, model, first, stored } = await suspended({});
    expect(stored.children['call-0-0']!.snapshot.context.plan?.projects).toBe(false);
    const seen: unknown[] = [];
    const result = await resumeAgent({
      model, tools: { send }, session: session(store), approvalResponses: approve(first),
      onToolResult: ({ output }) => {
        seen.push(output);
        return 'the email went out';
      },
    });
    expect(seen).toEqual([{ sent: 'ada' }]);
    expect(result).toMatchObject({ status: 'completed', text: 'Done.' });
    expect(model.calls[1]!.messages).toContainEqual(expect.objectContaining({ role: 'tool', toolCallId: 'c1', content: 'the email went out' }));
    const after = (await store.load('plan-run', { scope: 'tenant-a' }))!.snapshot as unknown as StoredRun;
    expect(after.context.plan?.calls.send?.projects).toBe(true);
  });

  it('a resume without the onToolResult the run started with gives the model the result as it is', async () => {
    const { store, model, first, stored } = await suspended({ onToolResult: () => 'replaced' });
    expect(stored.children['call-0-0']!.snapshot.context.plan?.projects).toBe(true);
    const result = await resumeAgent({ model, tools: { send }, session: session(store), approvalResponses: approve(first) });
    expect(result).toMatchObject({ status: 'completed' });
    expect(model.calls[1]!.messages).toContainEqual(expect.objectContaining({ role: 'tool', toolCallId: 'c1', content: { sent: 'ada' } }));
  });

  it('a record written before plans existed (none in its snapshot) is given the resuming leg\'s plan and completes', async () => {
    const { store, model, first } = await suspended({});
    const envelope = (await store.load('plan-run', { scope: 'tenant-a' }))!;
    const snapshot = envelope.snapshot as unknown as StoredRun;
    delete snapshot.context.plan;
    delete snapshot.children['call-0-0']!.snapshot.context.plan;
    const older = createInMemoryAgentRunStore();
    await older.save({ ...envelope, revision: 1 });
    const result = await resumeAgent({ model, tools: { send }, session: session(older), approvalResponses: approve(first) });
    expect(result).toMatchObject({ status: 'completed', text: 'Done.' });
    const after = (await older.load('plan-run', { scope: 'tenant-a' }))!.snapshot as unknown as StoredRun;
    expect(after.context.plan).toMatchObject({ durable: true, calls: { send: { approval: true, projects: false } } });
  });
});

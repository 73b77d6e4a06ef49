/**
 * Interrupt approvals through the engine's approval gate: the run stops before
 * the effect with the pending approval in its state; a decision (with the
 * single-use token) continues it; a changed approvalVersion asks again and
 * never runs the call under the old approval.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, idempotencyKeyOf, tool, type AgentState } from 'cairn';
import { createMockModel } from 'cairn/testing';
import { digestOf } from '../../src/agent/digest.js';

function world(version = '2026-07-29') {
  const deployed: { target: string; key: string }[] = [];
  const deploy = tool({
    name: 'deploy',
    schema: z.object({ target: z.string() }),
    requiresApproval: true,
    approvalMode: 'interrupt',
    approvalVersion: version,
    execute: async ({ target }, context) => {
      deployed.push({ target, key: context.idempotencyKey });
      return `deployed ${target}`;
    },
  });
  return { deploy, deployed };
}

const model = () => createMockModel({ responses: [
  { toolCalls: [{ toolName: 'deploy', args: { target: 'eu-west' } }] },
  { text: 'Deployed to eu-west.' },
] });
/** The model of a process that continues the run: the turn that asked for the call is in the state already. */
const rest = () => createMockModel({ responses: [{ text: 'Deployed to eu-west.' }] });

describe('approvalMode: interrupt', () => {
  it('stops before the effect with the pending approval, and an approval continues it once', async () => {
    const { deploy, deployed } = world();
    const agent = new Agent({ model: model(), tools: { deploy } });
    const first = await agent.run({ prompt: 'Deploy the release.' });
    expect(first.status).toBe('suspended');
    expect(first.taskOutcome).toBe('in_progress');
    expect(deployed).toEqual([]);
    const [pending] = first.state.pendingApprovals;
    expect(pending).toMatchObject({
      toolName: 'deploy', approvalVersion: '2026-07-29', args: { target: 'eu-west' }, argsDigest: digestOf({ target: 'eu-west' }),
    });
    expect(pending!.approvalId).toMatch(/@[0-9a-f]{24}~v[0-9a-f]{12}$/);
    expect(first.state.approvals).toEqual([expect.objectContaining({ status: 'pending', toolCallId: pending!.toolCallId })]);

    // The state travels as JSON; a fresh Agent object of the same definition continues it.
    const saved = JSON.parse(JSON.stringify(first.state)) as AgentState;
    const later = new Agent({ model: rest(), tools: { deploy } });
    const decision = { approvalId: pending!.approvalId, approved: true, token: pending!.token };
    const second = await later.run({ state: saved, approvalResponses: [decision] });
    expect(second.status).toBe('completed');
    expect(second.taskOutcome).toBe('resolved');
    expect(deployed).toEqual([{ target: 'eu-west', key: idempotencyKeyOf(first.runId, pending!.modelStep, pending!.toolCallId) }]);
    expect(second.state.approvals).toEqual([expect.objectContaining({ status: 'approved' })]);

    // A finished run answers with what it stored: the same decision again runs nothing.
    const replayed = await later.run({ state: second.state, approvalResponses: [decision] });
    expect(replayed.status).toBe('completed');
    expect(deployed).toHaveLength(1);
  });

  it('with a run store a decision is single use even against an older state; without one the call keeps its idempotencyKey', async () => {
    const { createInMemoryAgentRunStore } = await import('cairn/agent');
    const { deploy, deployed } = world();
    const store = createInMemoryAgentRunStore();
    const first = await new Agent({ model: model(), tools: { deploy } }).run({ prompt: 'Deploy the release.', store });
    const [pending] = first.state.pendingApprovals;
    const decision = { approvalId: pending!.approvalId, approved: true, token: pending!.token };
    const agent = new Agent({ model: rest(), tools: { deploy } });
    expect((await agent.run({ state: first.state, store, approvalResponses: [decision] })).status).toBe('completed');
    // The older state names the run; the store holds its newer record, which the decision already answered.
    const again = await agent.run({ state: first.state, store, approvalResponses: [decision] });
    expect(again.status).toBe('completed');
    expect(deployed).toHaveLength(1);

    // Without a store the state is the only copy of the run: an older copy goes on again, under the same idempotencyKey,
    // so the system the tool calls can refuse the repeat (see docs/agent-class.md).
    const forked = await new Agent({ model: rest(), tools: { deploy } }).run({ state: first.state, approvalResponses: [decision] });
    expect(forked.status).toBe('completed');
    expect(deployed).toHaveLength(2);
    expect(deployed[1]!.key).toBe(deployed[0]!.key);
  });

  it('a decision without the token decides nothing; a denial completes with taskOutcome denied and no effect', async () => {
    const { deploy, deployed } = world();
    const agent = new Agent({ model: model(), tools: { deploy } });
    const first = await agent.run({ prompt: 'Deploy the release.' });
    const [pending] = first.state.pendingApprovals;
    const tokenless = await agent.run({ state: first.state, approvalResponses: [{ approvalId: pending!.approvalId, approved: true }] });
    expect(tokenless.status).toBe('suspended');
    expect(tokenless.state.revision).toBe(first.state.revision);
    const denied = await agent.run({
      state: tokenless.state, approvalResponses: [{ approvalId: pending!.approvalId, approved: false, token: pending!.token, reason: 'Freeze week.' }],
    });
    expect(denied.status).toBe('completed');
    expect(denied.taskOutcome).toBe('denied');
    expect(deployed).toEqual([]);
    expect(denied.state.approvals).toEqual([expect.objectContaining({ status: 'denied', reason: 'Freeze week.' })]);
  });

  it('a changed approvalVersion invalidates the approval: it asks again and never runs under the old one', async () => {
    const before = world('v1');
    const first = await new Agent({ model: model(), tools: { deploy: before.deploy } }).run({ prompt: 'Deploy the release.' });
    const [asked] = first.state.pendingApprovals;
    expect(asked!.approvalVersion).toBe('v1');

    // The application approved under v1; the tool now means something else (v2).
    const after = world('v2');
    const agent = new Agent({ model: rest(), tools: { deploy: after.deploy } });
    const stale = await agent.run({ state: first.state, approvalResponses: [{ approvalId: asked!.approvalId, approved: true, token: asked!.token }] });
    expect(stale.status).toBe('suspended');
    expect(after.deployed).toEqual([]);
    expect(stale.warnings).toEqual([expect.objectContaining({ setting: 'approvalVersion', toolCallId: asked!.toolCallId })]);
    const [again] = stale.state.pendingApprovals;
    expect(again).toMatchObject({ toolCallId: asked!.toolCallId, approvalVersion: 'v2', argsDigest: asked!.argsDigest });
    expect(again!.approvalId).not.toBe(asked!.approvalId);
    // Nothing was written for the stale decision.
    expect(stale.state.revision).toBe(first.state.revision);

    const approved = await agent.run({ state: stale.state, approvalResponses: [{ approvalId: again!.approvalId, approved: true, token: again!.token }] });
    expect(approved.status).toBe('completed');
    expect(after.deployed.map((d) => d.target)).toEqual(['eu-west']);
  });

  it('a requiresApproval predicate gets the validated input', async () => {
    const seen: unknown[] = [];
    const refund = tool({
      name: 'refund',
      schema: z.object({ cents: z.number().int() }),
      requiresApproval: ({ cents }) => (seen.push(cents), cents > 10_000),
      execute: ({ cents }) => `refunded ${cents}`,
    });
    const script = createMockModel({ responses: [
      { toolCalls: [{ toolName: 'refund', args: { cents: 500 } }, { toolName: 'refund', args: { cents: 50_000 } }] },
      { text: 'One refund waits.' },
    ] });
    const result = await new Agent({ model: script, tools: [refund] }).run({ prompt: 'Refund both.' });
    expect(result.status).toBe('suspended');
    expect(seen.sort()).toEqual([500, 50_000]);
    expect(result.pendingApprovals.map((p) => p.args)).toEqual([{ cents: 50_000 }]);
    // Without a version the approvalId is the engine's own.
    expect(result.pendingApprovals[0]!.approvalId).not.toContain('~v');
  });
});

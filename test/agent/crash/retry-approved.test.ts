/**
 * Retrying a call a person approved, after its process died during the
 * effect: the run recorded the verdict with the approval, the stopped result
 * (and headless inspectRun) says which unknown calls were approved and with
 * which approval, and a retry passes its gate with that verdict without the
 * caller sending it again. Sending the same verdict again is fine; another
 * verdict is refused; a gated call with no verdict at all is denied, loudly.
 */
import { describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunEnvelope, type AgentRunStore, type UnknownEffect,
} from 'cairn/agent';
import { inspectRun } from 'cairn/headless';
import { cloneStore, createLedger, createMockModel, type MockTurn } from 'cairn/testing';
import { interrupted, scenario } from './interrupted-run.js';

/** Rewrites the stored record through the store's own API, as an older engine or an edit would have left it. */
async function tamper(store: AgentRunStore, runId: string, edit: (e: AgentRunEnvelope) => void): Promise<void> {
  const envelope = structuredClone((await store.load(runId))!);
  edit(envelope);
  envelope.revision += 1;
  await store.save(envelope);
}

const byCall = (effects: UnknownEffect[] | undefined) => Object.fromEntries((effects ?? []).map((e) => [e.toolCallId, e]));

describe('retrying an approved call after a crash during its effect', () => {
  it('unknownEffects and inspectRun name the approval each interrupted call ran under, with its recorded verdict', async () => {
    const { store, ledger, approvalResponses } = await interrupted({ gated: true });
    const stored = (await store.load('order-7'))!;
    for (const { approvalId } of approvalResponses) expect(stored.approvals[approvalId]?.verdict).toEqual({ approved: true });

    const stopped = await resumeAgent(scenario(store, ledger, { gated: true }));
    if (stopped.status !== 'stopped') throw new Error(stopped.status);
    const effects = byCall(stopped.unknownEffects);
    for (const response of approvalResponses) {
      const toolCallId = response.approvalId.split('@')[0]!;
      expect(effects[toolCallId]).toMatchObject({
        status: 'executing', approval: { approvalId: response.approvalId, token: response.token, approved: true },
      });
    }
    const report = await inspectRun(store, 'order-7', { scope: 'tenant-a' });
    const pending = report.pending.filter((p) => p.kind === 'unknown-effect');
    expect(pending).toHaveLength(2);
    for (const action of pending) {
      expect(action).toMatchObject({ approval: { approvalId: effects[action.toolCallId]!.approval!.approvalId, approved: true } });
    }
  });

  it('a retry passes the gate with the recorded verdict: nothing needs to be sent again', async () => {
    const { store, ledger } = await interrupted({ gated: true });
    const done = await resumeAgent({ ...scenario(store, ledger, { gated: true }), retryToolCallIds: ['c1', 'c2'] });
    expect(done.status).toBe('completed');
    expect(done.warnings).toEqual([]);
    expect(ledger.entries()).toEqual({ 'charge@0:c1': 2, 'email@0:c2': 2 });
    expect(done.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([{ charged: true }, 'sent']);
  });

  it('sending the same verdict again still works, and warns of nothing', async () => {
    const { store, ledger, approvalResponses } = await interrupted({ gated: true });
    const done = await resumeAgent({
      ...scenario(store, ledger, { gated: true }), retryToolCallIds: ['c1'], reconciledToolResults: [{ toolCallId: 'c2', output: 'sent' }],
      approvalResponses: approvalResponses.filter((r) => r.approvalId.startsWith('c1@')),
    });
    expect(done.status).toBe('completed');
    expect(done.warnings).toEqual([]);
    expect(ledger.entries()).toEqual({ 'charge@0:c1': 2, 'email@0:c2': 1 });
  });

  it('a different verdict for a retried call is refused: the approval was answered once', async () => {
    const { store, ledger, approvalResponses } = await interrupted({ gated: true });
    const before = JSON.stringify(await store.load('order-7'));
    const refused = await resumeAgent({
      ...scenario(store, ledger, { gated: true }), retryToolCallIds: ['c1', 'c2'],
      approvalResponses: approvalResponses.map((r) => ({ ...r, approved: false })),
    });
    expect(refused).toMatchObject({ status: 'failed', error: { name: 'TypeError', code: 'invalid_options' } });
    if (refused.status !== 'failed') return;
    expect(refused.error.message).toMatch(/differs from the one the run recorded/);
    expect(JSON.stringify(await store.load('order-7'))).toBe(before);
    expect(ledger.entries()).toEqual({ 'charge@0:c1': 1, 'email@0:c2': 1 });
  });

  it('a gated call with no recorded verdict and none sent is answered as denied, with a retryToolCallIds warning', async () => {
    const { store, ledger } = await interrupted({ gated: true });
    // A record that kept no verdict (an older engine's): the approval is known, the verdict is not.
    await tamper(store, 'order-7', (e) => {
      for (const approval of Object.values(e.approvals)) delete approval.verdict;
    });
    const stopped = await resumeAgent(scenario(store, ledger, { gated: true }));
    if (stopped.status !== 'stopped') throw new Error(stopped.status);
    expect(byCall(stopped.unknownEffects).c1?.approval).toEqual({ approvalId: expect.stringMatching(/^c1@/), token: expect.any(String) });

    const done = await resumeAgent({
      ...scenario(store, ledger, { gated: true }), retryToolCallIds: ['c1'], reconciledToolResults: [{ toolCallId: 'c2', output: 'sent' }],
    });
    expect(done.status).toBe('completed');
    expect(ledger.entries()).toEqual({ 'charge@0:c1': 1, 'email@0:c2': 1 });
    expect(done.messages.find((m) => m.role === 'tool' && m.toolCallId === 'c1'))
      .toMatchObject({ content: 'Tool call denied. Reason: No approval response.', isError: true });
    expect(done.warnings).toEqual([
      { type: 'warning', setting: 'retryToolCallIds', toolCallId: 'c1', message: expect.stringMatching(/recorded no verdict .* answered as denied/) },
    ]);
  });

  it('a verdict from an earlier turn never approves a retried call that reuses its id', async () => {
    const ledger = createLedger();
    const inner = createInMemoryAgentRunStore();
    const options = (store: AgentRunStore, hangAtStep?: number) => ({
      model: createMockModel({
        strict: false,
        responses: [(request): MockTurn => {
          const turns = request.messages.filter((m) => m.role === 'assistant').length;
          return turns < 2 ? { toolCalls: [{ toolName: 'publish', args: { turn: turns }, toolCallId: 'c1' }] } : { text: 'Published twice.' };
        }],
      }),
      prompt: 'Publish twice.',
      session: { store, runId: 'pub', scope: 's' },
      deps: { clock: { now: () => 9_000 }, generateId: (() => { let n = 0; return () => `id-${n++}`; })() },
      tools: {
        publish: {
          parameters: { type: 'object' as const },
          needsApproval: true,
          execute: (_args: unknown, ctx: { modelStep: number; toolCallId: string }) => {
            ledger.record(`publish@${ctx.modelStep}:${ctx.toolCallId}`);
            return ctx.modelStep === hangAtStep ? new Promise<never>(() => undefined) : 'published';
          },
        },
      },
    });
    const first = await runAgent(options(inner));
    if (first.status !== 'suspended') throw new Error('expected a suspension');
    const v0 = first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));
    const second = await resumeAgent({ ...options(inner), approvalResponses: v0 });
    if (second.status !== 'suspended') throw new Error('expected a second suspension');
    const v1 = second.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));
    expect(v1[0]!.approvalId).not.toBe(v0[0]!.approvalId);
    void resumeAgent({ ...options(inner, 1), approvalResponses: v1 });
    await new Promise((r) => setTimeout(r, 50));
    expect(ledger.count('publish@1:c1')).toBe(1);

    // With the later turn's verdict recorded, the retry runs under it; the earlier one decides nothing.
    const recorded = await resumeAgent({ ...options(await cloneStore(inner, ['pub'])), retryToolCallIds: ['c1'], approvalResponses: v0 });
    expect(recorded.status).toBe('completed');
    expect(ledger.count('publish@1:c1')).toBe(2);
    expect(recorded.warnings).toEqual([
      expect.objectContaining({ setting: 'approvalResponses', toolCallId: 'c1', message: expect.stringMatching(/already used/) }),
    ]);

    // Without it, the earlier turn's verdict does not stand in for it: the call is denied.
    const store = await cloneStore(inner, ['pub']);
    await tamper(store, 'pub', (e) => delete e.approvals[v1[0]!.approvalId]!.verdict);
    const denied = await resumeAgent({ ...options(store), retryToolCallIds: ['c1'], approvalResponses: v0 });
    expect(denied.status).toBe('completed');
    expect(ledger.count('publish@1:c1')).toBe(2);
    expect(denied.messages.filter((m) => m.role === 'tool').at(-1)).toMatchObject({ content: 'Tool call denied. Reason: No approval response.' });
    expect(denied.warnings.map((w) => w.setting).sort()).toEqual(['approvalResponses', 'retryToolCallIds']);
  });
});

/**
 * Rule 1: approvals. A verdict is bound to the exact call it was issued for;
 * an absent verdict is not a denial and writes nothing; a wrong token is
 * ignored with a warning; the bare tool-call-id form counts only when the id
 * is unambiguous; a denial answers the model and the run goes on.
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, type AgentOptions, type AgentTool, type JsonValue, type ResumeOptions } from 'cairn/agent';
import { createMockModel, type MockResponse } from 'cairn/testing';
import { countingTool, fixedDeps, recordingStore, toolMessages, type RecordingStore } from './helpers.js';

function gatedRun(opts: {
  store: RecordingStore;
  runId?: string;
  responses: MockResponse[];
  publish?: AgentTool & { runs: unknown[] };
  extraTools?: Record<string, AgentTool>;
  modelId?: string;
  generateToolCallId?: (step: number, index: number) => string;
}) {
  const publish = opts.publish ?? countingTool('published', { needsApproval: true });
  const model = createMockModel({
    responses: opts.responses,
    ...(opts.modelId ? { modelId: opts.modelId } : {}),
    ...(opts.generateToolCallId ? { generateToolCallId: opts.generateToolCallId } : {}),
  });
  const options = {
    model,
    prompt: 'Publish it.',
    bindingId: 'approvals-v1',
    session: { store: opts.store, runId: opts.runId ?? 'run-a', scope: 'tenant-a' },
    tools: { publish, ...opts.extraTools },
    deps: fixedDeps(),
  } satisfies ResumeOptions;
  return { model, publish, options };
}

const publishCall = (args: { [key: string]: JsonValue } = {}) => ({ toolCalls: [{ toolName: 'publish', args }] }) as MockResponse;

describe('approvals', () => {
  it('suspends on a gated call with an approvalId of the form <toolCallId>@<digest> and does not run the tool', async () => {
    const store = recordingStore();
    const { options, publish, model } = gatedRun({ store, responses: [publishCall({ id: 1 }), { text: 'ok' }] });
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    if (first.status !== 'suspended') return;
    expect(publish.runs).toHaveLength(0);
    expect(model.calls).toHaveLength(1);
    expect(first.pendingClientCalls).toEqual([]);
    expect(first.pendingApprovals).toHaveLength(1);
    const pending = first.pendingApprovals[0]!;
    expect(pending).toMatchObject({ toolCallId: 'tool_0', toolName: 'publish', args: { id: 1 }, modelStep: 0 });
    expect(pending.approvalId).toMatch(/^tool_0@[0-9a-f]+$/);
    expect(pending.token).toEqual(expect.any(String));
    expect(pending.token.length).toBeGreaterThan(0);
  });

  it('binds approvalId to the run, the call id, the tool name and the arguments (and to nothing else)', async () => {
    const idOf = async (opts: Parameters<typeof gatedRun>[0]) => {
      const r = await runAgent(gatedRun(opts).options);
      if (r.status !== 'suspended') throw new Error(`expected suspended, got ${r.status}`);
      return r.pendingApprovals[0]!.approvalId;
    };
    const base = await idOf({ store: recordingStore(), responses: [publishCall({ id: 1 })] });
    // Same run id, same call: the same id (it is derived, not random).
    expect(await idOf({ store: recordingStore(), responses: [publishCall({ id: 1 })] })).toBe(base);
    // Another run.
    expect(await idOf({ store: recordingStore(), runId: 'run-b', responses: [publishCall({ id: 1 })] })).not.toBe(base);
    // Other arguments.
    expect(await idOf({ store: recordingStore(), responses: [publishCall({ id: 2 })] })).not.toBe(base);
    // Another call id.
    expect(await idOf({
      store: recordingStore(), responses: [publishCall({ id: 1 })], generateToolCallId: () => 'call_x',
    })).not.toBe(base);
    // Another tool name (same call id, same args).
    const other = countingTool('published', { needsApproval: true });
    const renamed = await runAgent({
      ...gatedRun({ store: recordingStore(), responses: [{ toolCalls: [{ toolName: 'release', args: { id: 1 } }] }] }).options,
      tools: { release: other },
    });
    expect(renamed.status).toBe('suspended');
    if (renamed.status !== 'suspended') return;
    expect(renamed.pendingApprovals[0]!.approvalId).toMatch(/^tool_0@/);
    expect(renamed.pendingApprovals[0]!.approvalId).not.toBe(base);
  });

  it('a verdict from an earlier gate never approves a later call, even when the provider reuses tool_0', async () => {
    const store = recordingStore();
    const { options, publish, model } = gatedRun({
      store,
      responses: [publishCall({ id: 1 }), publishCall({ id: 1 }), { text: 'both published' }],
    });
    const first = await runAgent(options);
    if (first.status !== 'suspended') throw new Error(first.status);
    const earlier = first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));

    const second = await resumeAgent({ ...options, approvalResponses: earlier });
    expect(second.status).toBe('suspended');
    if (second.status !== 'suspended') return;
    expect(publish.runs).toHaveLength(1);
    expect(model.calls).toHaveLength(2);
    expect(second.pendingApprovals).toHaveLength(1);
    const later = second.pendingApprovals[0]!;
    expect(later.toolCallId).toBe('tool_0');
    expect(later.modelStep).toBe(1);
    expect(later.approvalId).not.toBe(earlier[0]!.approvalId);

    // The kept verdict is offered again: it decides nothing.
    const before = await store.dump('run-a');
    const third = await resumeAgent({ ...options, approvalResponses: earlier });
    expect(third.status).toBe('suspended');
    expect(publish.runs).toHaveLength(1);
    expect(model.calls).toHaveLength(2);
    expect(await store.dump('run-a')).toBe(before);

    const fourth = await resumeAgent({
      ...options,
      approvalResponses: [{ approvalId: later.approvalId, token: later.token, approved: true }],
    });
    expect(fourth.status).toBe('completed');
    expect(fourth.text).toBe('both published');
    expect(publish.runs).toHaveLength(2);
    expect(model.calls).toHaveLength(3);
  });

  it('an absent verdict keeps the run suspended and writes nothing', async () => {
    const store = recordingStore();
    const { options, publish, model } = gatedRun({ store, responses: [publishCall(), { text: 'ok' }] });
    const first = await runAgent(options);
    if (first.status !== 'suspended') throw new Error(first.status);
    const before = await store.dump('run-a');
    const revision = (await store.load('run-a'))!.revision;
    const savesBefore = store.attempts();

    for (const approvalResponses of [undefined, []]) {
      const again = await resumeAgent({ ...options, ...(approvalResponses ? { approvalResponses } : {}) });
      expect(again.status).toBe('suspended');
      if (again.status !== 'suspended') return;
      expect(again.pendingApprovals).toEqual(first.pendingApprovals);
    }
    expect(publish.runs).toHaveLength(0);
    expect(model.calls).toHaveLength(1);
    expect(store.attempts()).toBe(savesBefore);
    expect((await store.load('run-a'))!.revision).toBe(revision);
    expect(await store.dump('run-a')).toBe(before);
  });

  it('ignores a verdict with a wrong token, with an approvalResponses warning', async () => {
    const store = recordingStore();
    const { options, publish, model } = gatedRun({ store, responses: [publishCall(), { text: 'ok' }] });
    const first = await runAgent(options);
    if (first.status !== 'suspended') throw new Error(first.status);
    const pending = first.pendingApprovals[0]!;
    const before = await store.dump('run-a');

    const resumed = await resumeAgent({
      ...options,
      approvalResponses: [{ approvalId: pending.approvalId, token: 'not-the-token', approved: true }],
    });
    expect(resumed.status).toBe('suspended');
    expect(publish.runs).toHaveLength(0);
    expect(model.calls).toHaveLength(1);
    expect(resumed.warnings).toHaveLength(1);
    expect(resumed.warnings[0]).toMatchObject({ type: 'warning', setting: 'approvalResponses', toolCallId: 'tool_0' });
    expect(await store.dump('run-a')).toBe(before);
  });

  it('records in the envelope how many approval requests each tool call id was issued under', async () => {
    const store = recordingStore();
    const { options } = gatedRun({ store, responses: [publishCall(), publishCall(), { text: 'ok' }] });
    const first = await runAgent(options);
    if (first.status !== 'suspended') throw new Error(first.status);
    expect((await store.load('run-a'))!.approvalRequestCounts).toEqual({ tool_0: 1 });
    const p = first.pendingApprovals[0]!;
    await resumeAgent({ ...options, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: true }] });
    expect((await store.load('run-a'))!.approvalRequestCounts).toEqual({ tool_0: 2 });
  });

  describe('a verdict naming only the tool call id (with allowBareApprovalIds)', () => {
    it('counts when that id occurs once in the history and one approval request was issued under it', async () => {
      const store = recordingStore();
      const { options, publish } = gatedRun({ store, responses: [publishCall(), { text: 'done' }] });
      const first = await runAgent(options);
      expect(first.status).toBe('suspended');
      const resumed = await resumeAgent({ ...options, approvalResponses: [{ approvalId: 'tool_0', approved: true }], allowBareApprovalIds: true });
      expect(resumed.status).toBe('completed');
      expect(publish.runs).toHaveLength(1);
    });

    it('does not count when the id was gated twice (reused by the provider in a later step)', async () => {
      const store = recordingStore();
      const { options, publish, model } = gatedRun({ store, responses: [publishCall(), publishCall(), { text: 'done' }] });
      const first = await runAgent(options);
      if (first.status !== 'suspended') throw new Error(first.status);
      const p = first.pendingApprovals[0]!;
      const second = await resumeAgent({ ...options, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: true }] });
      expect(second.status).toBe('suspended');
      const before = await store.dump('run-a');
      const third = await resumeAgent({ ...options, approvalResponses: [{ approvalId: 'tool_0', approved: true }], allowBareApprovalIds: true });
      expect(third.status).toBe('suspended');
      expect(publish.runs).toHaveLength(1);
      expect(model.calls).toHaveLength(2);
      expect(await store.dump('run-a')).toBe(before);
    });

    it('does not count when the id occurs twice in the history, though it was gated once', async () => {
      const store = recordingStore();
      const lookup = countingTool('found');
      const { options, publish } = gatedRun({
        store,
        extraTools: { lookup },
        // tool_0 first names an ungated call, then the gated one.
        responses: [{ toolCalls: [{ toolName: 'lookup', args: {} }] }, publishCall(), { text: 'done' }],
      });
      const first = await runAgent(options);
      expect(first.status).toBe('suspended');
      expect(lookup.runs).toHaveLength(1);
      expect((await store.load('run-a'))!.approvalRequestCounts).toEqual({ tool_0: 1 });
      const resumed = await resumeAgent({ ...options, approvalResponses: [{ approvalId: 'tool_0', approved: true }], allowBareApprovalIds: true });
      expect(resumed.status).toBe('suspended');
      expect(publish.runs).toHaveLength(0);
    });

    it('does not count when the checkpoint records more than one request under the id, though the history shows it once', async () => {
      const store = recordingStore();
      const { options, publish } = gatedRun({ store, responses: [publishCall(), { text: 'done' }] });
      await runAgent(options);
      // A history shortened by compaction looks unique; the stored count does not.
      await store.tamper('run-a', (record) => {
        record.approvalRequestCounts = { tool_0: 2 };
      });
      const resumed = await resumeAgent({ ...options, approvalResponses: [{ approvalId: 'tool_0', approved: true }], allowBareApprovalIds: true });
      expect(resumed.status).toBe('suspended');
      expect(publish.runs).toHaveLength(0);
    });
  });

  it("answers a denied call with 'Tool call denied. Reason: ...' and the run goes on", async () => {
    const store = recordingStore();
    const { options, publish, model } = gatedRun({ store, responses: [publishCall(), { text: 'Understood, not published.' }] });
    const first = await runAgent(options);
    if (first.status !== 'suspended') throw new Error(first.status);
    const p = first.pendingApprovals[0]!;
    const resumed = await resumeAgent({
      ...options,
      approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: false, reason: 'Too risky.' }],
    });
    expect(resumed.status).toBe('completed');
    expect(resumed.text).toBe('Understood, not published.');
    expect(publish.runs).toHaveLength(0);
    expect(model.calls).toHaveLength(2);
    expect(toolMessages(model.calls[1])).toEqual([
      { role: 'tool', toolCallId: 'tool_0', toolName: 'publish', content: 'Tool call denied. Reason: Too risky.', isError: true },
    ]);
  });

  it('calls a needsApproval predicate with the arguments and the tool context, and gates only what it asks for', async () => {
    const store = recordingStore();
    const seen: Array<{ args: unknown; toolCallId: string; modelStep: number; context: unknown; lastRole: string }> = [];
    const transfer = countingTool('sent', {
      needsApproval: (args: { amount: number }, ctx) => {
        seen.push({
          args, toolCallId: ctx.toolCallId, modelStep: ctx.modelStep, context: ctx.context,
          lastRole: ctx.messages.at(-1)!.role,
        });
        return args.amount > 100;
      },
    });
    const model = createMockModel({
      responses: [
        { toolCalls: [{ toolName: 'transfer', args: { amount: 5 } }, { toolName: 'transfer', args: { amount: 500 } }] },
        { text: 'Transfers handled.' },
      ],
    });
    const options: AgentOptions & ResumeOptions = {
      model,
      prompt: 'Pay.',
      session: { store, runId: 'pay', scope: 's' },
      tools: { transfer },
      toolsContext: { transfer: { account: 'acc-1' } },
      deps: fixedDeps(),
    };
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    if (first.status !== 'suspended') return;
    expect(transfer.runs).toEqual([{ amount: 5 }]);
    expect(first.pendingApprovals.map((p) => [p.toolCallId, p.args])).toEqual([['tool_1', { amount: 500 }]]);
    const byCall = Object.fromEntries(seen.map((s) => [s.toolCallId, s]));
    expect(byCall.tool_0).toEqual({ args: { amount: 5 }, toolCallId: 'tool_0', modelStep: 0, context: { account: 'acc-1' }, lastRole: 'assistant' });
    expect(byCall.tool_1).toEqual({ args: { amount: 500 }, toolCallId: 'tool_1', modelStep: 0, context: { account: 'acc-1' }, lastRole: 'assistant' });

    const p = first.pendingApprovals[0]!;
    const resumed = await resumeAgent({ ...options, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: true }] });
    expect(resumed.status).toBe('completed');
    expect(transfer.runs).toEqual([{ amount: 5 }, { amount: 500 }]);
    expect(toolMessages(model.calls[1]).map((m) => [m.toolCallId, m.content])).toEqual([['tool_0', 'sent'], ['tool_1', 'sent']]);
  });
});

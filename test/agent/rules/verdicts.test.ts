/**
 * Rules of a verdict, for a careful operator and a careless one: a verdict the
 * run asked for decides (a denial is final, whatever a predicate says when the
 * resume runs the call again; an approval stands); two different verdicts for
 * one approval are refused; a verdict counts only with the token the run
 * issued, once; a bare tool call id counts only with allowBareApprovalIds.
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent, resumeStreamAgent, runAgent, type AgentTool, type ApprovalResponse, type ResumeOptions } from 'cairn/agent';
import { createMockModel, type MockResponse } from 'cairn/testing';
import { countingTool, eventsOf, fixedDeps, recordingStore, toolMessages } from './helpers.js';

const publishCall: MockResponse = { toolCalls: [{ toolName: 'publish', args: { slug: 'notes' } }] };

function setup(publish: AgentTool & { runs: unknown[] }, responses: MockResponse[] = [publishCall, { text: 'Done.' }]) {
  const store = recordingStore();
  const model = createMockModel({ responses });
  const options = {
    model,
    prompt: 'Publish the notes.',
    session: { store, runId: 'run-v', scope: 'tenant-a' },
    tools: { publish },
    deps: fixedDeps(),
  } satisfies ResumeOptions;
  return { store, model, options };
}

async function suspended(options: ResumeOptions) {
  const first = await runAgent(options);
  if (first.status !== 'suspended') throw new Error(`expected a suspension, got ${first.status}`);
  return first.pendingApprovals[0]!;
}

/** A predicate that holds the call the first time it is asked, and says "not needed" ever after. */
function flippingPredicate() {
  let asked = 0;
  const predicate = () => ++asked === 1;
  return { predicate, asked: () => asked };
}

describe('a verdict the run asked for decides', () => {
  it('a denial is final: the call never runs, even when the predicate no longer holds it on the resume', async () => {
    const gate = flippingPredicate();
    const publish = countingTool('published', { needsApproval: gate.predicate });
    const { options, model } = setup(publish);
    const p = await suspended(options);
    const events = await eventsOf(resumeStreamAgent({
      ...options, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: false, reason: 'Not today.' }],
    }));
    const result = events.find((e) => e.type === 'result')!.result;
    expect(result.status).toBe('completed');
    expect(publish.runs).toEqual([]);
    expect(toolMessages(model.calls[1])).toEqual([
      { role: 'tool', toolCallId: 'tool_0', toolName: 'publish', content: 'Tool call denied. Reason: Not today.', isError: true },
    ]);
    expect(events.find((e) => e.type === 'tool-call-end')).toMatchObject({ outcome: 'denied', isError: true });
  });

  it('an approval stands when the predicate later says "not needed": the call runs as approved, once', async () => {
    const gate = flippingPredicate();
    const publish = countingTool('published', { needsApproval: gate.predicate });
    const { options } = setup(publish);
    const p = await suspended(options);
    const done = await resumeAgent({ ...options, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: true }] });
    expect(done.status).toBe('completed');
    expect(publish.runs).toEqual([{ slug: 'notes' }]);
    // The verdict decided: the predicate was not asked again.
    expect(gate.asked()).toBe(1);
  });
});

describe('conflicting verdicts', () => {
  const orders: Array<[string, (id: string, token: string) => ApprovalResponse[]]> = [
    ['approve, then deny', (approvalId, token) => [{ approvalId, token, approved: true }, { approvalId, token, approved: false }]],
    ['deny, then approve', (approvalId, token) => [{ approvalId, token, approved: false }, { approvalId, token, approved: true }]],
    ['duplicates of both', (approvalId, token) => [
      { approvalId, token, approved: true }, { approvalId, token, approved: true }, { approvalId, token, approved: false },
    ]],
  ];
  for (const [name, verdicts] of orders) {
    it(`${name} for one approvalId are refused with a TypeError, and nothing is written`, async () => {
      const publish = countingTool('published', { needsApproval: true });
      const { options, store, model } = setup(publish);
      const p = await suspended(options);
      const before = await store.dump('run-v');
      const attempts = store.attempts();
      const refused = await resumeAgent({ ...options, approvalResponses: verdicts(p.approvalId, p.token) });
      expect(refused).toMatchObject({ status: 'failed', error: { name: 'TypeError', code: 'invalid_options' } });
      if (refused.status !== 'failed') return;
      expect(refused.error.message).toContain(`${p.approvalId} has conflicting verdicts`);
      expect(store.attempts()).toBe(attempts);
      expect(await store.dump('run-v')).toBe(before);
      expect(publish.runs).toEqual([]);
      expect(model.calls).toHaveLength(1);
    });
  }

  it('two identical verdicts for one approvalId are one verdict', async () => {
    const publish = countingTool('published', { needsApproval: true });
    const { options } = setup(publish);
    const p = await suspended(options);
    const verdict = { approvalId: p.approvalId, token: p.token, approved: true };
    const done = await resumeAgent({ ...options, approvalResponses: [verdict, { ...verdict }] });
    expect(done.status).toBe('completed');
    expect(done.warnings).toEqual([]);
    expect(publish.runs).toHaveLength(1);
  });

  it('a verdict that is not { approvalId, approved: boolean, token } is refused, not read as a denial', async () => {
    const publish = countingTool('published', { needsApproval: true });
    const { options, store } = setup(publish);
    const p = await suspended(options);
    const before = await store.dump('run-v');
    const refused = await resumeAgent({
      ...options, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: 'yes' }] as unknown as ApprovalResponse[],
    });
    expect(refused).toMatchObject({ status: 'failed', error: { name: 'TypeError', code: 'invalid_options' } });
    expect(await store.dump('run-v')).toBe(before);
  });
});

describe('tokens: a verdict cannot be forged or replayed', () => {
  /** Resumes with one verdict; the run stays suspended as it was, with one warning, whose message is returned. */
  async function ignoredWith(response: (p: { approvalId: string; token: string; toolCallId: string }) => ApprovalResponse, extra: Partial<ResumeOptions> = {}) {
    const publish = countingTool('published', { needsApproval: true });
    const { options, store } = setup(publish);
    const p = await suspended(options);
    const before = await store.dump('run-v');
    const resumed = await resumeAgent({ ...options, ...extra, approvalResponses: [response(p)] });
    expect(resumed.status).toBe('suspended');
    expect(publish.runs).toEqual([]);
    expect(await store.dump('run-v')).toBe(before);
    expect(resumed.warnings).toHaveLength(1);
    expect(resumed.warnings[0]).toMatchObject({ type: 'warning', setting: 'approvalResponses', toolCallId: 'tool_0' });
    return resumed.warnings[0]!.message;
  }

  it('a verdict without the token decides nothing: the approvalId alone is predictable', async () => {
    const message = await ignoredWith((p) => ({ approvalId: p.approvalId, approved: true }));
    expect(message).toMatch(/has no token; pass the token of the pending approval/);
  });

  it('a verdict with another token decides nothing', async () => {
    const message = await ignoredWith((p) => ({ approvalId: p.approvalId, token: `${p.token}-forged`, approved: true }));
    expect(message).toMatch(/carries a token that does not match the one issued/);
  });

  it('a bare tool call id decides nothing without allowBareApprovalIds', async () => {
    const message = await ignoredWith((p) => ({ approvalId: p.toolCallId, approved: true }));
    expect(message).toMatch(/names a tool call id, not an approvalId; a bare id counts only with allowBareApprovalIds: true/);
  });

  it('with allowBareApprovalIds, a bare id with the wrong token says so (it is not "unknown")', async () => {
    const message = await ignoredWith((p) => ({ approvalId: p.toolCallId, token: 'wrong', approved: true }), { allowBareApprovalIds: true });
    expect(message).toMatch(/carries a token that does not match the one issued/);
  });

  it('an approvalId the run never issued decides nothing', async () => {
    const message = await ignoredWith(() => ({ approvalId: 'tool_0@000000000000000000000000', token: 'x', approved: true }));
    expect(message).toMatch(/matches no approval this run issued/);
  });

  it('with allowBareApprovalIds, an unambiguous bare id approves the call', async () => {
    const publish = countingTool('published', { needsApproval: true });
    const { options } = setup(publish);
    await suspended(options);
    const done = await resumeAgent({ ...options, allowBareApprovalIds: true, approvalResponses: [{ approvalId: 'tool_0', approved: true }] });
    expect(done.status).toBe('completed');
    expect(publish.runs).toHaveLength(1);
  });

  it('allowBareApprovalIds must be a boolean', async () => {
    const publish = countingTool('published', { needsApproval: true });
    const { options } = setup(publish);
    await suspended(options);
    const refused = await resumeAgent({ ...options, allowBareApprovalIds: 'yes' as unknown as boolean });
    expect(refused).toMatchObject({ status: 'failed', error: { code: 'invalid_options' } });
  });

  it('a token is single-use: replayed once its call was answered, the verdict decides nothing and says it was used', async () => {
    const publish = countingTool('published', { needsApproval: true });
    // Two gated turns: the first verdict answers the first call; replayed against the second wait, it must not approve anything.
    const { options, store } = setup(publish, [publishCall, publishCall, { text: 'Done.' }]);
    const p = await suspended(options);
    const verdict = { approvalId: p.approvalId, token: p.token, approved: true };
    const second = await resumeAgent({ ...options, approvalResponses: [verdict] });
    expect(second.status).toBe('suspended');
    expect(publish.runs).toHaveLength(1);
    const before = await store.dump('run-v');
    const replayed = await resumeAgent({ ...options, approvalResponses: [verdict] });
    expect(replayed.status).toBe('suspended');
    expect(publish.runs).toHaveLength(1);
    expect(await store.dump('run-v')).toBe(before);
    expect(replayed.warnings).toEqual([{
      type: 'warning', setting: 'approvalResponses', toolCallId: 'tool_0',
      message: `The verdict for ${p.approvalId} was already used: the call it was issued for has been answered. This one decides nothing.`,
    }]);
  });

  it('the resume records each verdict with its approval in the envelope', async () => {
    const publish = countingTool('published', { needsApproval: true });
    const { options, store } = setup(publish);
    const p = await suspended(options);
    expect((await store.load('run-v'))!.approvals[p.approvalId]).not.toHaveProperty('verdict');
    await resumeAgent({ ...options, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: false, reason: 'No.' }] });
    expect((await store.load('run-v'))!.approvals[p.approvalId]).toEqual({
      toolCallId: 'tool_0', modelStep: 0, token: p.token, verdict: { approved: false, reason: 'No.' },
    });
  });
});

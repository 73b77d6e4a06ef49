/**
 * retryToolCallIds and reconciledToolResults: what a resume accepts, and how
 * each settles an interrupted call. The interruption is a simulated crash
 * right after both tools of a step ran, before either result was recorded.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunStore } from 'cairn/agent';
import { cloneStore, createLedger, createMockModel, ledgerTool, type Ledger, type MockTurn } from 'cairn/testing';

const clock = { now: () => 9_000 };

function scenario(store: AgentRunStore, ledger: Ledger, options: { gated?: boolean } = {}) {
  return {
    // The model answers from the conversation, so every leg meets the same script.
    model: createMockModel({
      strict: false,
      responses: [
        (request): MockTurn => request.messages.some((m) => m.role === 'tool')
          ? { text: 'Done.' }
          : { toolCalls: [{ toolName: 'charge', args: { order: 7 }, toolCallId: 'c1' }, { toolName: 'email', args: { to: 'ada' }, toolCallId: 'c2' }] },
      ],
    }),
    prompt: 'Charge and notify.',
    session: { store, runId: 'order-7', scope: 'tenant-a' },
    deps: { clock, generateId: (() => { let n = 0; return () => `id-${n++}`; })() },
    tools: {
      charge: ledgerTool(ledger, 'charge', { result: () => ({ charged: true }), needsApproval: options.gated ?? false }),
      email: ledgerTool(ledger, 'email', { result: () => 'sent', needsApproval: options.gated ?? false }),
    },
  };
}

/**
 * Both effects happen, then the process dies before either result is recorded:
 * the first leg's tools record their effect and never return, and the leg is
 * abandoned. The resume starts from a fresh store object over what was saved.
 */
async function interrupted(options: { gated?: boolean } = {}) {
  const ledger = createLedger();
  const inner = createInMemoryAgentRunStore();
  const base = scenario(inner, ledger, options);
  let approvalResponses: { approvalId: string; token: string; approved: boolean }[] = [];
  let started = 0;
  let bothStarted!: () => void;
  const effectsDone = new Promise<void>((resolve) => (bothStarted = resolve));
  const hanging = (name: 'charge' | 'email') => ({
    ...base.tools[name],
    execute: (args: unknown, ctx: unknown) => {
      (base.tools[name].execute as (a: unknown, c: unknown) => unknown)(args, ctx);
      if (++started === 2) bothStarted();
      return new Promise<never>(() => undefined);
    },
  });
  const dying = { ...base, tools: { charge: hanging('charge'), email: hanging('email') } };
  if (options.gated) {
    const first = await runAgent(base);
    if (first.status !== 'suspended') throw new Error('expected a suspension');
    approvalResponses = first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));
    void resumeAgent({ ...dying, approvalResponses });
  } else {
    void runAgent(dying);
  }
  await effectsDone;
  const store = await cloneStore(inner, ['order-7']);
  return { store, ledger, approvalResponses };
}

describe('reconciliation of interrupted calls', () => {
  it('a resume stops, writes nothing, and lists every interrupted call', async () => {
    const { store, ledger } = await interrupted();
    expect(ledger.entries()).toEqual({ 'charge@0:c1': 1, 'email@0:c2': 1 });
    const before = JSON.stringify(await store.load('order-7'));
    const resumed = await resumeAgent(scenario(store, ledger));
    expect(resumed.status).toBe('stopped');
    if (resumed.status !== 'stopped') return;
    expect(resumed.reason).toBe('tool-reconciliation-required');
    expect(resumed.unknownEffects?.map((r) => r.toolCallId).sort()).toEqual(['c1', 'c2']);
    expect(JSON.stringify(await store.load('order-7'))).toBe(before);
  });

  it('refuses with a TypeError, before anything is written: duplicates, both lists, a recorded result for another call, bad shapes', async () => {
    const { store, ledger } = await interrupted();
    const before = JSON.stringify(await store.load('order-7'));
    const refused = [
      { reconciledToolResults: [{ toolCallId: 'nope', output: 'x' }] },
      { retryToolCallIds: ['c1', 'c1'] },
      { retryToolCallIds: ['c1'], reconciledToolResults: [{ toolCallId: 'c1', output: 'x' }] },
      { reconciledToolResults: [{ toolCallId: 'c2' }] },
      { retryToolCallIds: 'c1' },
    ];
    for (const lists of refused) {
      const result = await resumeAgent({ ...scenario(store, ledger), ...(lists as object) });
      expect(result.status, JSON.stringify(lists)).toBe('failed');
      if (result.status === 'failed') expect(result.error.name, JSON.stringify(lists)).toBe('TypeError');
    }
    expect(JSON.stringify(await store.load('order-7'))).toBe(before);
    expect(ledger.total()).toBe(2);
  });

  it('ignores, with a warning, a retry id that names no interrupted call', async () => {
    const { store, ledger } = await interrupted();
    const before = JSON.stringify(await store.load('order-7'));
    const resumed = await resumeAgent({ ...scenario(store, ledger), retryToolCallIds: ['nope'] });
    expect(resumed.status).toBe('stopped');
    if (resumed.status === 'stopped') expect(resumed.reason).toBe('tool-reconciliation-required');
    expect(resumed.warnings).toEqual([expect.objectContaining({ setting: 'retryToolCallIds', toolCallId: 'nope' })]);
    expect(JSON.stringify(await store.load('order-7'))).toBe(before);
    expect(ledger.total()).toBe(2);
  });

  it('a call left unsettled stops the resume again, records nothing, and lists every call still unknown', async () => {
    const { store, ledger } = await interrupted();
    const before = JSON.stringify(await store.load('order-7'));
    const resumed = await resumeAgent({ ...scenario(store, ledger), reconciledToolResults: [{ toolCallId: 'c1', output: { charged: true } }] });
    expect(resumed.status).toBe('stopped');
    if (resumed.status === 'stopped') expect(resumed.unknownEffects?.map((r) => r.toolCallId).sort()).toEqual(['c1', 'c2']);
    expect(JSON.stringify(await store.load('order-7'))).toBe(before);
  });

  it('reconciled and retried calls settle in one resume; a reconciled output flows through the projection', async () => {
    const { store, ledger } = await interrupted();
    const options = scenario(store, ledger);
    const resumed = await resumeAgent({
      ...options,
      reconciledToolResults: [{ toolCallId: 'c1', output: { charged: true } }],
      retryToolCallIds: ['c2'],
    });
    expect(resumed.status).toBe('completed');
    expect(ledger.entries()).toEqual({ 'charge@0:c1': 1, 'email@0:c2': 2 });
    const tools = resumed.messages.filter((m) => m.role === 'tool');
    expect(tools).toEqual([
      { role: 'tool', toolCallId: 'c1', toolName: 'charge', content: { charged: true } },
      { role: 'tool', toolCallId: 'c2', toolName: 'email', content: 'sent' },
    ]);
    const stored = await store.load('order-7');
    expect(stored!.receipts['0:c1']).toMatchObject({ status: 'completed', reconciled: true });
    // A completed run never runs a retried call again.
    const again = await resumeAgent({ ...options, retryToolCallIds: ['c2'] });
    expect(again.status).toBe('completed');
    expect(ledger.count('email@0:c2')).toBe(2);
  });

  it('a reconciled error answers the call with its error', async () => {
    const { store, ledger } = await interrupted();
    const resumed = await resumeAgent({
      ...scenario(store, ledger),
      reconciledToolResults: [
        { toolCallId: 'c1', output: { declined: 'card expired' }, isError: true },
        { toolCallId: 'c2', output: 'sent' },
      ],
    });
    expect(resumed.status).toBe('completed');
    const charge = resumed.messages.find((m) => m.role === 'tool' && m.toolCallId === 'c1');
    expect(charge).toEqual({ role: 'tool', toolCallId: 'c1', toolName: 'charge', content: '{"declined":"card expired"}', isError: true });
    expect(ledger.total()).toBe(2);
  });

  it('a retried call that waited for an approval runs again only with its verdict', async () => {
    const denied = await interrupted({ gated: true });
    const noVerdict = await resumeAgent({
      ...scenario(denied.store, denied.ledger, { gated: true }),
      retryToolCallIds: ['c1'],
      reconciledToolResults: [{ toolCallId: 'c2', output: 'sent' }],
    });
    // A reconciled call that waited for an approval needs no verdict: the outcome answers it.
    expect(noVerdict.status).toBe('completed');
    expect(denied.ledger.count('charge@0:c1')).toBe(1);
    const answer = noVerdict.messages.find((m) => m.role === 'tool' && m.toolCallId === 'c1');
    expect(answer).toMatchObject({ content: 'Tool call denied. Reason: No approval response.', isError: true });

    const approved = await interrupted({ gated: true });
    const withVerdict = await resumeAgent({
      ...scenario(approved.store, approved.ledger, { gated: true }),
      retryToolCallIds: ['c1'],
      reconciledToolResults: [{ toolCallId: 'c2', output: 'sent' }],
      approvalResponses: approved.approvalResponses,
    });
    expect(withVerdict.status).toBe('completed');
    expect(approved.ledger.count('charge@0:c1')).toBe(2);
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
      deps: { clock, generateId: (() => { let n = 0; return () => `id-${n++}`; })() },
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

    const withOldVerdict = await resumeAgent({ ...options(await cloneStore(inner, ['pub'])), retryToolCallIds: ['c1'], approvalResponses: v0 });
    expect(withOldVerdict.status).toBe('completed');
    expect(ledger.count('publish@1:c1')).toBe(1);
    expect(withOldVerdict.messages.filter((m) => m.role === 'tool').at(-1)).toMatchObject({ content: 'Tool call denied. Reason: No approval response.' });

    const withItsVerdict = await resumeAgent({ ...options(await cloneStore(inner, ['pub'])), retryToolCallIds: ['c1'], approvalResponses: v1 });
    expect(withItsVerdict.status).toBe('completed');
    expect(withItsVerdict.warnings).toEqual([]);
    expect(ledger.count('publish@1:c1')).toBe(2);
  });
});

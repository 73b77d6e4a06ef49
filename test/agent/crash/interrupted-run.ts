/**
 * A run whose process dies right after both tools of a step ran, before
 * either result was recorded (optionally after a person approved both), and
 * the options every leg of it passes.
 */
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunStore } from 'cairn/agent';
import { cloneStore, createLedger, createMockModel, ledgerTool, type Ledger, type MockTurn } from 'cairn/testing';

export const clock = { now: () => 9_000 };

export function scenario(store: AgentRunStore, ledger: Ledger, options: { gated?: boolean } = {}) {
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
export async function interrupted(options: { gated?: boolean } = {}) {
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

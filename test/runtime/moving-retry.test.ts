/**
 * A retry an earlier leg began and never finished: the stored snapshot shows
 * the call on its way again (past its gate's start, before its new
 * `executing` receipt), so a restore moves it at once, before the run can hand
 * it an answer. An operator who then records the call's outcome must be
 * heard: the call is answered from that outcome and never runs again.
 */
import { describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentOptions, type AgentRunEnvelope, type AgentRunStore,
} from '../../src/agent/index.js';
import { createMockModel, type MockResponse } from '../../src/testing/index.js';

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
const calls: MockResponse = { text: '', finishReason: 'tool-calls', usage, toolCalls: [
  { toolCallId: 'A', toolName: 'charge', args: { amount: 5 } },
  { toolCallId: 'B', toolName: 'ship', args: { order: 7 } },
] };
const answer: MockResponse = { text: 'Charged and shipped.', toolCalls: [], finishReason: 'stop', usage };

function options(store: AgentRunStore, ledger: Record<string, number>, gate: () => Promise<boolean>, first: boolean): AgentOptions {
  const effect = (name: string, ms = 0) => async () => {
    ledger[name] = (ledger[name] ?? 0) + 1;
    if (ms > 0) await new Promise((r) => setTimeout(r, ms));
    return `${name} done`;
  };
  return {
    model: createMockModel({ responses: first ? [calls, answer] : [answer] }),
    prompt: 'Charge and ship order 7.',
    bindingId: 'moving-retry',
    session: { store, runId: 'order-7', scope: 's' },
    deps: { clock: { now: () => 1_000 }, generateId: (() => { let n = 0; return () => `id-${n++}`; })() },
    tools: {
      charge: { parameters: { type: 'object' }, needsApproval: () => gate(), execute: effect('charge') },
      ship: { parameters: { type: 'object' }, execute: effect('ship', 30) },
    },
  };
}

/** A store that refuses every save holding an outcome: both effects run (ship's after charge's), neither result is kept. */
function failingAfterReceipts(): { store: AgentRunStore; inner: ReturnType<typeof createInMemoryAgentRunStore> } {
  const inner = createInMemoryAgentRunStore();
  return {
    inner,
    store: {
      load: (id, o) => inner.load(id, o),
      async save(envelope, o) {
        if (Object.values(envelope.receipts).some((r) => r.status !== 'executing')) throw new Error('disk gone');
        await inner.save(envelope, o);
      },
    },
  };
}

const openCall = (envelope: AgentRunEnvelope, id: string) =>
  (envelope.snapshot as { children: Record<string, { snapshot: { status: string; value: unknown; context: { toolCallId: string; retried?: boolean } } }> })
    .children[id]!.snapshot;

describe('a retry cut off before its new executing receipt', () => {
  it("an operator's recorded outcome answers the call: it never runs again", async () => {
    const ledger: Record<string, number> = {};
    const first = failingAfterReceipts();
    const failed = await runAgent(options(first.store, ledger, async () => false, true));
    expect(failed.status).toBe('failed');
    expect(ledger).toEqual({ charge: 1, ship: 1 });

    // Leg 2: the operator retries both; charge's gate hangs (the process will die there), ship runs and is checkpointed.
    const leg2 = createInMemoryAgentRunStore([(await first.inner.load('order-7'))!]);
    let release!: (value: boolean) => void;
    const hanging = new Promise<boolean>((resolve) => { release = resolve; });
    const retrying = resumeAgent({ ...options(leg2, ledger, () => hanging, false), retryToolCallIds: ['A', 'B'] } as never);
    let cut: AgentRunEnvelope | undefined;
    for (let i = 0; i < 500 && !cut; i++) {
      await new Promise((r) => setTimeout(r, 5));
      const now = (await leg2.load('order-7'))!;
      if (now.receipts['0:B']?.status !== 'executing' && now.receipts['0:B']?.status !== undefined) cut = now;
    }
    expect(cut, 'ship was retried and its result saved').toBeDefined();
    expect(ledger).toEqual({ charge: 1, ship: 2 });
    // The record the dead process left: charge on its way again, its old receipt still `executing`.
    const charge = openCall(cut!, 'call-0-0');
    expect(charge.status).toBe('active');
    expect(charge.value).toEqual({ approval: 'deciding' });
    expect(charge.context.retried).toBe(true);
    expect(cut!.receipts['0:A']!.status).toBe('executing');

    // Leg 3, on the record the dead process left: a plain resume stops on the unknown effect and writes nothing.
    const leg3 = createInMemoryAgentRunStore([cut!]);
    const stopped = await resumeAgent(options(leg3, ledger, async () => false, false) as never);
    expect(stopped).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required' });
    expect((await leg3.load('order-7'))!.revision).toBe(cut!.revision);

    // The operator checked the payment system: the charge landed. Recorded, it answers the call.
    const done = await resumeAgent({
      ...options(leg3, ledger, async () => false, false),
      reconciledToolResults: [{ toolCallId: 'A', output: 'charged by hand' }],
    } as never);
    expect(done.status).toBe('completed');
    expect(ledger).toEqual({ charge: 1, ship: 2 });
    const final = (await leg3.load('order-7'))!;
    expect(final.receipts['0:A']).toMatchObject({ status: 'completed', reconciled: true, rawResult: 'charged by hand' });
    release(false);
    await retrying;
  });
});

/**
 * A run a crash left with an unknown effect, on any store: a payment tool
 * whose charge reached the payments ledger (or not) while the process died
 * around it, and the evidence and verifier an application would write.
 */
import { createInMemoryAgentRunStore, createInMemoryLeaseProvider, resumeAgent, runAgent, type AgentRunStore } from 'cairn/agent';
import { digestOfToolInput, toolOperationId, type ToolExecutionEvidence, type ToolExecutionJournalView, type ToolReconciliationStore } from 'cairn/evidence';
import { createCrashPlan, createLedger, createMockModel, ledgerKey, ledgerTool, type Ledger } from 'cairn/testing';
import { createInMemoryAgentStreamJournal } from 'cairn/ui';

export const RUN = { runId: 'orders', scope: 'tenant-a' };

export function inMemoryStore(): ToolReconciliationStore {
  const leases = createInMemoryLeaseProvider();
  return { agentRuns: createInMemoryAgentRunStore([], { leases }), leases, journal: createInMemoryAgentStreamJournal() };
}

export function runOptions(store: AgentRunStore, payments: Ledger) {
  return {
    model: createMockModel({
      strict: false,
      responses: [
        (request: { messages: { role: string; content: unknown }[] }) => {
          const results = request.messages.filter((m) => m.role === 'tool').map((m) => m.content);
          return results.length > 0
            ? { text: `charged: ${JSON.stringify(results)}` }
            : { toolCalls: [{ toolName: 'charge', toolCallId: 'pay-A7', args: { order: 'A-7', cents: 1250 } }] };
        },
      ],
    }),
    prompt: 'Charge order A-7.',
    bindingId: 'payments-v1',
    session: { store, ...RUN },
    tools: { charge: ledgerTool(payments, 'charge', { description: 'Charge one order.', result: () => ({ receipt: 'rcpt-1' }) }) },
  };
}

/** Runs until the process "dies" just before or just after the charge: the call is left with only its `executing` receipt. */
export async function crashedRun(store: ToolReconciliationStore, when: 'before' | 'after'): Promise<Ledger> {
  const payments = createLedger();
  const crash = createCrashPlan({ at: { kind: 'tool', toolName: 'charge', index: 1, when } });
  const doomed = runOptions(crash.wrapStore(store.agentRuns), payments);
  const outcome = await crash.race(runAgent({ ...doomed, model: crash.wrapModel(doomed.model), tools: crash.wrapTools(doomed.tools) } as never));
  if (!outcome.crashed) throw new Error('the crash plan did not fire');
  return payments;
}

export function resume(store: ToolReconciliationStore, payments: Ledger) {
  return resumeAgent(runOptions(store.agentRuns, payments) as never);
}

export function evidenceFor(over: Partial<ToolExecutionEvidence> = {}): ToolExecutionEvidence {
  return {
    operationId: toolOperationId(RUN.runId, 0, 'pay-A7'),
    ...RUN,
    toolCallId: 'pay-A7',
    toolName: 'charge',
    inputDigest: digestOfToolInput({ order: 'A-7', cents: 1250 }),
    output: { receipt: 'rcpt-1' },
    source: 'payments-ledger',
    proof: { signature: 'sig-very-secret-proof' },
    ...over,
  };
}

/** What an application's verifier does: ask the ledger about exactly this call, and check the proof. */
export function ledgerVerifier(payments: Ledger, calls: ToolExecutionJournalView[] = []) {
  return async (candidate: ToolExecutionEvidence, call: ToolExecutionJournalView) => {
    calls.push(call);
    return candidate.source === 'payments-ledger' && (candidate.proof as { signature?: string }).signature === 'sig-very-secret-proof' &&
      payments.count(ledgerKey(call.toolName, call.modelStep, call.toolCallId)) === 1;
  };
}

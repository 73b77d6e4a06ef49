// A crash leaves a charge unknown; evidence from the payments ledger settles it, and the next resume goes on.
import { createInMemoryAgentRunStore, createInMemoryLeaseProvider, resumeAgent, runAgent, type AgentRunStore } from 'cairn/agent';
import { digestOfToolInput, evidenceStreamId, reconcileAgentToolExecution, toolOperationId, type ToolExecutionEvidence } from 'cairn/evidence';
import { createCrashPlan, createLedger, createMockModel, ledgerKey, ledgerTool } from 'cairn/testing';
import { createInMemoryAgentStreamJournal } from 'cairn/ui';

// The run store, the leases its executors take and a journal: what the ops stores bundle (ops.agentRuns, ops.leases, ops.journal).
const leases = createInMemoryLeaseProvider();
const store = { agentRuns: createInMemoryAgentRunStore([], { leases }), leases, journal: createInMemoryAgentStreamJournal() };

// The payments system lives outside the process: it records each charge under the call's identity.
const payments = createLedger();
const options = (agentRuns: AgentRunStore) => ({
  model: createMockModel({
    strict: false,
    responses: [
      (request) => request.messages.some((m) => m.role === 'tool')
        ? { text: 'Order A-7 is paid.' }
        : { toolCalls: [{ toolName: 'charge', toolCallId: 'pay-A7', args: { order: 'A-7', cents: 1250 } }] },
    ],
  }),
  prompt: 'Charge order A-7.',
  bindingId: 'payments-v1',
  session: { store: agentRuns, runId: 'orders', scope: 'tenant-a' },
  tools: { charge: ledgerTool(payments, 'charge', { description: 'Charge one order.', result: () => ({ receipt: 'rcpt-1' }) }) },
});

// The process dies right after the charge went through: the call has only its `executing` receipt.
const crash = createCrashPlan({ at: { kind: 'tool', toolName: 'charge', index: 1, when: 'after' } });
const doomed = options(crash.wrapStore(store.agentRuns));
await crash.race(runAgent({ ...doomed, model: crash.wrapModel(doomed.model), tools: crash.wrapTools(doomed.tools) }));
const stopped = await resumeAgent(options(store.agentRuns));
console.log(`resume: ${stopped.status} (${stopped.status === 'stopped' ? stopped.reason : ''})`);

// What the payments system confirms, bound to exactly this call.
const evidence: ToolExecutionEvidence = {
  operationId: toolOperationId('orders', 0, 'pay-A7'),
  runId: 'orders',
  scope: 'tenant-a',
  toolCallId: 'pay-A7',
  toolName: 'charge',
  inputDigest: digestOfToolInput({ order: 'A-7', cents: 1250 }),
  output: { receipt: 'rcpt-1' },
  source: 'payments-ledger',
  proof: { ledgerEntry: 'charge@0:pay-A7' },
};
const state = await reconcileAgentToolExecution({
  store,
  evidence,
  // Ask the system itself about this call; never return true unconditionally.
  verifyEvidence: async (candidate, call) =>
    candidate.source === 'payments-ledger' && payments.count(ledgerKey(call.toolName, call.modelStep, call.toolCallId)) === 1,
});
console.log(`reconciled: revision ${state.revision}, ${state.toolResults.map((r) => `${r.toolCallId} ${r.status}${r.reconciled ? ' (reconciled)' : ''}`).join(', ')}`);

const [frame] = await store.journal.read(evidenceStreamId({ runId: 'orders', scope: 'tenant-a' }), 0);
const decision = JSON.parse(frame!.body);
console.log(`journal: ${decision.decision}, previously ${decision.previous.status}, from ${decision.source}`);

// The same evidence again changes nothing; other evidence for the same operation is refused.
console.log(`again: revision ${(await reconcileAgentToolExecution({ store, evidence, verifyEvidence: () => true })).revision}`);
await reconcileAgentToolExecution({ store, evidence: { ...evidence, output: { receipt: 'rcpt-2' } }, verifyEvidence: () => true })
  .catch((error) => console.log(`other evidence: ${error.name} ${error.code}`));

// Continuation is still required: the ordinary resume answers the call from the evidence, the tool does not run again.
const done = await resumeAgent(options(store.agentRuns));
console.log(`resume: ${done.status}: ${done.text}`);
console.log(`charges: ${JSON.stringify(payments.entries())}`);

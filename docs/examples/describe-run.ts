// A stored run as plain data: where it stands in its charts, what it waits for, and its steps.
import { createInMemoryAgentRunStore, runAgent } from 'cairn/agent';
import { describeRun } from 'cairn/machines';
import { createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();
const result = await runAgent({
  model: createMockModel({
    responses: [
      { toolCalls: [{ toolName: 'lookup', args: { orderId: '7' } }] },
      { toolCalls: [{ toolName: 'refund', args: { orderId: '7', cents: 1200 } }] },
    ],
  }),
  prompt: 'Refund order 7.',
  session: { store, runId: 'refund-7', scope: 'tenant-a' },
  tools: {
    lookup: { description: 'Look an order up.', parameters: { type: 'object' as const }, execute: () => ({ status: 'delivered' }) },
    refund: { description: 'Refund an order.', parameters: { type: 'object' as const }, needsApproval: true, execute: () => 'refunded' },
  },
});
console.log(`the run: ${result.status}`);

// Only the record is read: no model, no tool, no store write.
const run = describeRun((await store.load('refund-7', { scope: 'tenant-a' }))!);
console.log(`machine ${run.machine.id} (the current version: ${run.machine.version === run.machine.storedVersion}), revision ${run.revision}, status ${run.status}`);
console.log(`run states: ${run.states.join(', ')}`);
for (const call of run.calls) {
  console.log(`open call ${call.toolName} (step ${call.modelStep}): stage ${call.stage}, states ${call.states.join(', ')}, receipt ${call.receipt ?? 'none'}`);
}
console.log(`waiting for: ${run.pendingApprovals.map((a) => `approval of ${a.toolName}`).join(', ')}`);
console.log(`receipts: ${JSON.stringify(run.receipts.byStatus)}`);
for (const step of run.steps) {
  console.log(`step ${step.step}: ${step.calls.map((c) => `${c.toolName} ${c.outcome}, receipt ${c.receipt ?? 'none'}`).join('; ')}`);
}
// The approval's token is not in the description: it is safe to show or log.
const approval = result.status === 'suspended' ? result.pendingApprovals[0]! : undefined;
console.log(`token shown: ${JSON.stringify(run).includes(approval?.token ?? '?')}`);

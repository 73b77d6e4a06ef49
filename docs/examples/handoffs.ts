// Handoffs: a triage agent hands the conversation to a billing agent, which drives every later step with its own
// model, instructions and tools. Scripted models, no API key.
import { Agent } from 'cairn';
import { createInMemoryAgentRunStore, resumeAgent, runAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const refunds: string[] = [];
const billing = new Agent({
  name: 'billing',
  handoffDescription: 'Refunds and invoices.',
  instructions: 'You are billing. Refund orders when asked.',
  model: createMockModel({ modelId: 'billing', responses: [
    { toolCalls: [{ toolName: 'refund', args: { order: 'o-1' } }] },
    { text: 'Order o-1 is refunded.' },
  ] }),
  tools: {
    refund: {
      description: 'Refund an order.',
      parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
      needsApproval: true,
      execute: async ({ order }: { order: string }) => {
        refunds.push(order);
        return { refunded: order };
      },
    },
  },
});

const triageModel = createMockModel({ modelId: 'triage', responses: [{ toolCalls: [{ toolName: 'transfer_to_billing', args: {} }] }] });
const store = createInMemoryAgentRunStore();
const options = {
  name: 'triage',
  model: triageModel,
  instructions: 'You are triage. Hand billing questions to billing.',
  prompt: 'Please refund order o-1.',
  handoffs: [billing],
  session: { store, runId: 'ticket-7', scope: 'shop' },
};

// Each target is offered to the model as a tool transfer_to_<name>.
const first = await runAgent(options);
console.log('triage was offered:', triageModel.calls[0]!.tools.map((t) => t.name).join(', '));
console.log('run:', first.status);

// The record says which agent drives the run now; billing's refund waits for a person's approval.
const record = await store.load('ticket-7', { scope: 'shop' });
console.log('active agent:', record!.activeAgent);
const [pending] = first.status === 'suspended' ? first.pendingApprovals : [];
console.log('pending:', pending!.toolName, JSON.stringify(pending!.args));

// The resume goes on with billing: triage's model is not asked again.
const done = await resumeAgent({ ...options, approvalResponses: [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }] });
console.log('run:', done.status, '-', done.text);
console.log('triage model calls:', triageModel.calls.length, '| refunds:', refunds.join(', '));

// Each receipt carries the idempotent flag of the tool that ran it.
const after = await store.load('ticket-7', { scope: 'shop' });
for (const receipt of Object.values(after!.receipts)) console.log('receipt:', receipt.toolName, receipt.status, `idempotent: ${receipt.idempotent}`);

// A cycle of handoffs is refused before any model call, and nothing is written.
const loop = { name: 'loop', model: createMockModel({ responses: [] }), handoffs: [] as unknown[] };
loop.handoffs.push(loop);
const refused = await runAgent({ model: createMockModel({ responses: [] }), prompt: 'Hi.', handoffs: [loop as never] });
console.log('cycle:', refused.status === 'failed' ? `${refused.error.name} ${refused.error.code}: ${refused.error.message}` : refused.status);

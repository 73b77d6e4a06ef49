// A plain tool whose outcome was lost stops the run until you say what happened.
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunStore } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

// The payment system keeps its own record of each charge, outside the run.
const charges = new Map<string, number>();

// A store that loses the write that would record the charge's result.
const durable = createInMemoryAgentRunStore();
let failOnce = true;
const flaky: AgentRunStore = {
  load: (runId) => durable.load(runId),
  async save(envelope) {
    if (failOnce && Object.values(envelope.receipts).some((receipt) => receipt.status === 'executed')) {
      failOnce = false;
      throw new Error('connection reset');
    }
    await durable.save(envelope);
  },
};

// One model for every leg: the script goes on where the last leg left it.
const model = createMockModel({
  responses: [{ toolCalls: [{ toolName: 'charge', args: { order: 'A-7', cents: 1250 } }] }, { text: 'Order A-7 is paid.' }],
});

const optionsWith = (store: AgentRunStore) => ({
  model,
  prompt: 'Charge order A-7.',
  session: { store, runId: 'order-A-7', scope: 'tenant-a' },
  tools: {
    charge: {
      description: 'Charge an order once.',
      parameters: { type: 'object' as const, properties: { order: { type: 'string' }, cents: { type: 'number' } } },
      execute: ({ order, cents }: { order: string; cents: number }) => {
        charges.set(order, (charges.get(order) ?? 0) + cents);
        return { charged: cents };
      },
    },
  },
});

const first = await runAgent(optionsWith(flaky));
console.log(`first leg: ${first.status}`);

// The charge started, and nobody recorded how it ended: the resume stops and writes nothing.
const stopped = await resumeAgent(optionsWith(durable));
if (stopped.status !== 'stopped' || stopped.reason !== 'tool-reconciliation-required') throw new Error('expected a stop');
const unknown = stopped.unknownEffects ?? [];
console.log(`stopped: ${stopped.reason}, unknown: ${unknown.map((r) => `${r.toolName} ${r.toolCallId} (${r.status})`).join(', ')}`);

// Look in the system the effect touched, and settle every listed call in one resume.
const landed = charges.has('A-7');
const settled = await resumeAgent({
  ...optionsWith(durable),
  ...(landed
    ? { reconciledToolResults: unknown.map((r) => ({ toolCallId: r.toolCallId, output: { charged: 1250 } })) }
    : { retryToolCallIds: unknown.map((r) => r.toolCallId) }),
});
console.log(`landed: ${landed}, resume: ${settled.status}: ${settled.text}`);
console.log(`charged in all: ${charges.get('A-7')} cents`);

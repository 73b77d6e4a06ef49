import { createInMemoryAgentRunStore, runAgent } from 'cairn/agent';
import { replayRun } from 'cairn/machines';
import { createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();
const tools = {
  refund: {
    description: 'Refund an order.',
    parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
    needsApproval: true,
    execute: ({ order }: { order: string }) => ({ refunded: order }),
  },
};
const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'refund', args: { order: 'A-7' } }] }] });
await runAgent({ model, prompt: 'Refund A-7.', tools, session: { store, runId: 'refund-1', scope: 'support' } });

// The stored run, driven again through the machines alone: no model, no tool, no store.
const stored = (await store.load('refund-1'))!;
console.log(replayRun(stored)); // reached: true, and how many turns and answers it took

// A record edited by hand is one the machines would not have made: here the arguments the person is asked to
// approve no longer match the call the model made.
const snapshot = stored.snapshot as { children: Record<string, { snapshot: { context: { args: unknown } } }> };
snapshot.children['call-0-0']!.snapshot.context.args = { order: 'A-8' };
const edited = replayRun(stored);
console.log(edited.reached, edited.divergence?.path, edited.divergence?.expected, edited.divergence?.found);
// false children.call-0-0.context.args.order A-8 A-7

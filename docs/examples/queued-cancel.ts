// A cancel queued for a run that waits on an approval: the next resume ends it, with no model call and no tool.
import { cancelAgentRun, createInMemoryAgentRunStore, reconcileAgentRun, resumeAgent, runAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();
const session = { store, runId: 'refund-3', scope: 'tenant-a' };
let refunds = 0;
const options = {
  model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'refund', args: { order: 'A-17' } }] }] }),
  prompt: 'Refund order A-17.',
  session,
  tools: { refund: { parameters: { type: 'object' as const }, needsApproval: true, execute: () => `refund ${++refunds}` } },
};

const first = await runAgent(options);
console.log(`first leg: ${first.status}`);

// Nobody drives the run now: the request is saved on its record, and nothing else of it changes.
const queued = await cancelAgentRun({ session, reason: 'The customer withdrew the request.', deps: { clock: { now: () => 1_767_225_600_000 } } });
console.log(queued.outcome, queued.status, queued.request);
console.log((await store.load('refund-3'))?.status);

// reconcileAgentRun keeps it on a run that did not end.
console.log(await reconcileAgentRun({ session }));

// The next executor ends the run with it, even with a verdict in hand.
const model = createMockModel({ responses: [] });
const approvalResponses = first.status === 'suspended'
  ? first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }))
  : [];
const ended = await resumeAgent({ ...options, model, approvalResponses });
if (ended.status === 'stopped') console.log(`${ended.status} (${ended.reason})`, ended.stopDetails);
console.log(`model calls: ${model.calls.length}, refunds: ${refunds}`);

// A cancel for a run that ended writes nothing.
console.log((await cancelAgentRun({ session })).outcome);

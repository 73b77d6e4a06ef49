// reconcileAgentRun on a run no executor drives: it takes the run's lease, reads the run, reports it, writes nothing.
import {
  AgentRunLeaseError, agentRunLeaseKey, createInMemoryAgentRunStore, createInMemoryLeaseProvider, reconcileAgentRun,
  resumeAgent, runAgent,
} from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const leases = createInMemoryLeaseProvider();
const store = createInMemoryAgentRunStore([], { leases });
const session = { store, runId: 'publish-8', scope: 'tenant-a' };
const options = {
  model: createMockModel({
    responses: [{ toolCalls: [{ toolName: 'publish', args: { slug: 'notes' } }] }, { text: 'The notes are live.' }],
  }),
  prompt: 'Publish the notes.',
  session,
  lease: { provider: leases, owner: 'worker-1' },
  tools: { publish: { parameters: { type: 'object' as const }, needsApproval: true, execute: () => 'published' } },
};

const first = await runAgent(options);
if (first.status !== 'suspended') throw new Error(`expected a suspension, got ${first.status}`);
const revision = (await store.load('publish-8'))?.revision;

// Nothing is left to settle: the answer names the run (its status is there to read), and the run is untouched.
const found = await reconcileAgentRun({ session, lease: { provider: leases, owner: 'reconciler' } });
console.log(found, found.status);
console.log(`revision unchanged: ${(await store.load('publish-8'))?.revision === revision}`);

// While an executor holds the lease, the call is refused before it reads anything.
const held = await leases.acquire(agentRunLeaseKey(session), 'worker-2', 30_000);
try {
  await reconcileAgentRun({ session, lease: { provider: leases, owner: 'reconciler' } });
} catch (error) {
  if (AgentRunLeaseError.isInstance(error)) console.log(`${error.name}: ${error.code}`);
}
await leases.release(held!);

// Unlike runAgent, a refusal rejects.
await reconcileAgentRun({ session: { ...session, runId: 'publish-404' } }).catch((error) => console.log(`${error.name}: ${error.code}`));

// The run goes on as before.
const approvalResponses = first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));
const done = await resumeAgent({ ...options, approvalResponses });
console.log(`resumed: ${done.status}: ${done.text}`);
console.log((await reconcileAgentRun({ session, lease: { provider: leases } })).status);

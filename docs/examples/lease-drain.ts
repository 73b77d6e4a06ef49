// A lease keeps a run to one executor at a time; a drain hands it over at a model-step boundary.
import {
  agentRunLeaseKey, createInMemoryAgentRunStore, createInMemoryLeaseProvider, resumeAgent, runAgent,
  type AgentRunStore,
} from 'cairn/agent';
import { createManualClock, createMockModel } from 'cairn/testing';

const clock = createManualClock(0);
const leases = createInMemoryLeaseProvider({ clock });
const store = createInMemoryAgentRunStore([], { clock, leases });
// Another process reaches the same runs through its own store handle.
const elsewhere: AgentRunStore = { load: (id, o) => store.load(id, o), save: (e, o) => store.save(e, o) };

const session = { store, runId: 'report-9', scope: 'tenant-a' };
const key = agentRunLeaseKey(session);
console.log(`lease key: ${key}`);

const tools = {
  gather: {
    parameters: { type: 'object' as const },
    execute: async () => {
      // While worker-1 holds the run, worker-2 is refused before it reads anything.
      const refused = await resumeAgent({
        model: createMockModel({ responses: [] }),
        session: { ...session, store: elsewhere },
        lease: { provider: leases, owner: 'worker-2' },
        tools,
      });
      if (refused.status === 'failed') console.log(`worker-2 while worker-1 works: ${refused.error.code}`);
      // Ask the holder to stop; a renewal (every ttlMs / 3) carries the request.
      await leases.requestDrain(key);
      await new Promise((resolve) => setTimeout(resolve, 400));
      return 'figures gathered';
    },
  },
};

const first = await runAgent({
  model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'gather', args: {} }] }] }),
  prompt: 'Write the report.',
  session,
  lease: { provider: leases, owner: 'worker-1', ttlMs: 60 },
  tools,
  deps: { clock },
});
if (first.status === 'stopped') console.log(`worker-1: ${first.status} (${first.reason}) after ${first.steps} step`);
console.log(`stored status: ${(await store.load('report-9'))?.status}`);
console.log(`lease after worker-1: ${JSON.stringify(await leases.inspect(key))}`);

// Any executor may go on with a drained run.
const second = await resumeAgent({
  model: createMockModel({ responses: [{ text: 'The report is written.' }] }),
  session,
  lease: { provider: leases, owner: 'worker-2', ttlMs: 60 },
  tools,
  deps: { clock },
});
if (second.status === 'completed') console.log(`worker-2: ${second.status}: ${second.output}`);
console.log(`stored status: ${(await store.load('report-9'))?.status}`);

// Listing runs page by page, and pruning the ones that ended long ago.
import { createInMemoryAgentRunStore, runAgent, type AgentRunListQuery } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();

// Five runs of two tenants, each at its own time (the engine stamps updatedAt from deps.clock).
const runs = [
  { runId: 'report-1', scope: 'tenant-a', at: 1_000, publish: false },
  { runId: 'report-2', scope: 'tenant-b', at: 2_000, publish: false },
  { runId: 'report-3', scope: 'tenant-a', at: 3_000, publish: true },
  { runId: 'report-4', scope: 'tenant-a', at: 4_000, publish: false },
  { runId: 'report-5', scope: 'tenant-a', at: 5_000, publish: false },
];
for (const { runId, scope, at, publish } of runs) {
  await runAgent({
    model: createMockModel({
      responses: [publish ? { toolCalls: [{ toolName: 'publish', args: {} }] } : { text: `${runId} written.` }],
    }),
    prompt: 'Write the report.',
    session: { store, runId, scope },
    tools: { publish: { parameters: { type: 'object' }, needsApproval: true, execute: () => 'published' } },
    deps: { clock: { now: () => at } },
  });
}

// Newest first, two a page; nextCursor carries on from the last run shown.
const query: AgentRunListQuery = { scope: 'tenant-a', limit: 2 };
let cursor: string | undefined;
do {
  const page = await store.list({ ...query, ...(cursor ? { cursor } : {}) });
  console.log(page.runs.map((r) => `${r.runId} ${r.status} at ${r.updatedAt}`).join(', '));
  cursor = page.nextCursor;
} while (cursor);

const [waiting] = (await store.list({ status: ['suspended', 'running'] })).runs;
console.log(`waiting: ${waiting?.runId} (${waiting?.scope}), ${waiting?.pendingApprovals} approval(s)`);

// Terminal runs last saved before 4000 go; the suspended one stays, however old.
console.log(`pruned ${await store.prune({ terminalBefore: 4_000 })}:`, store.runIds().join(', '));

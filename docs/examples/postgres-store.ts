// Runs that several machines share: a run waits for a verdict in PostgreSQL, and another store object (another process) resumes it.
import { resumeAgent, runAgent } from 'cairn/agent';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { createMockModel } from 'cairn/testing';

// The tests' database; an application passes its own connection string.
const connectionString = process.env.CAIRN_TEST_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/test';
// A tenant of its own, so that runs of earlier demos or of a parallel one never show up here.
const scope = `demo-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const runId = `publish-${scope}`;

const published: string[] = [];
const tools = {
  publish: {
    description: 'Publish a page.',
    parameters: { type: 'object' as const, properties: { slug: { type: 'string' } }, required: ['slug'] },
    needsApproval: true,
    execute: ({ slug }: { slug: string }) => {
      published.push(slug);
      return `published ${slug}`;
    },
  },
};
const model = createMockModel({
  responses: [
    { toolCalls: [{ toolName: 'publish', args: { slug: 'release-notes' } }] },
    { text: 'The release notes are live.' },
  ],
});

// First process: create the tables (idempotent), then run until the run waits for its verdict.
const ops = createPostgresOpsStore({ connectionString }, { schema: 'cairn_docs' });
await ops.setup();
const options = {
  model,
  prompt: 'Publish the release notes.',
  bindingId: 'publisher-v1',
  tools,
  session: { store: ops.agentRuns, runId, scope },
  lease: { provider: ops.leases, owner: 'worker-1' },
};
const first = await runAgent(options);
if (first.status !== 'suspended') throw new Error(`expected a suspension, got ${first.status}`);
const waiting = await ops.agentRuns.list({ status: 'suspended', scope });
for (const run of waiting.runs) console.log(`waiting: ${run.pendingApprovals} approval(s), revision ${run.revision}`);
await ops.close();

// Later, another process: its own store object and pool resume the run with the verdict.
const later = createPostgresOpsStore({ connectionString }, { schema: 'cairn_docs' });
const done = await resumeAgent({
  ...options,
  session: { ...options.session, store: later.agentRuns },
  lease: { provider: later.leases, owner: 'worker-2' },
  approvalResponses: first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true })),
});
console.log(`resumed: ${done.status}: ${done.text}`);
console.log(`published: ${published.join(', ')}`);

// Ended runs go when an operator prunes them; this one was saved moments ago.
const stored = await later.agentRuns.load(runId, { scope });
console.log(`stored: ${stored?.status}, revision ${stored?.revision}`);
await later.agentRuns.prune({ terminalBefore: Date.now() + 1 });
console.log(`after prune: ${(await later.agentRuns.list({ scope })).runs.length} run(s) left`);
await later.close();

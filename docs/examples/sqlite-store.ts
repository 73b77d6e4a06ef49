// Runs that outlive the process: a run waits for a verdict in a SQLite file, and a new store on the file resumes it.
import { resumeAgent, runAgent } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel } from 'cairn/testing';

// A scratch directory for the demo; an application passes its own path.
const { mkdtempSync, rmSync } = process.getBuiltinModule('node:fs');
const { tmpdir } = process.getBuiltinModule('node:os');
const dir = mkdtempSync(`${tmpdir()}/cairn-sqlite-demo-`);
const path = `${dir}/runs.sqlite`;

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

// First process: the run suspends on the approval; its record is in the file.
const ops = createSqliteOpsStore({ path });
const options = {
  model,
  prompt: 'Publish the release notes.',
  bindingId: 'publisher-v1',
  tools,
  session: { store: ops.agentRuns, runId: 'publish-7', scope: 'tenant-a' },
  lease: { provider: ops.leases, owner: 'worker-1' },
};
const first = await runAgent(options);
if (first.status !== 'suspended') throw new Error(`expected a suspension, got ${first.status}`);
const waiting = await ops.agentRuns.list({ status: 'suspended', scope: 'tenant-a' });
for (const run of waiting.runs) console.log(`waiting: ${run.runId}, ${run.pendingApprovals} approval(s), revision ${run.revision}`);
ops.close();

// Later, another process: a new store on the same file resumes the run with the verdict.
const later = createSqliteOpsStore({ path });
const done = await resumeAgent({
  ...options,
  session: { ...options.session, store: later.agentRuns },
  lease: { provider: later.leases, owner: 'worker-2' },
  approvalResponses: first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true })),
});
console.log(`resumed: ${done.status}: ${done.text}`);
console.log(`published: ${published.join(', ')}`);

// A consistent copy while the store is in use, then pruning of ended runs.
await later.backup(`${dir}/runs-backup.sqlite`);
const copy = createSqliteOpsStore({ path: `${dir}/runs-backup.sqlite` });
console.log(`backup holds: ${(await copy.agentRuns.load('publish-7', { scope: 'tenant-a' }))?.status}`);
copy.close();
console.log(`pruned: ${await later.agentRuns.prune({ terminalBefore: Date.now() + 1 })}`);
console.log(`left: ${(await later.agentRuns.list()).runs.length}`);
later.close();
rmSync(dir, { recursive: true, force: true });

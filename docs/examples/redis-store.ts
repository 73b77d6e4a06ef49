// Runs on Redis: a run waits for a verdict, another store object (another process) resumes it; what the store refuses.
import { resumeAgent, runAgent } from 'cairn/agent';
import { createRedisOpsStore } from 'cairn/ops/redis';
import { createMockModel } from 'cairn/testing';

// The tests' server; an application passes its own URL.
const url = process.env.CAIRN_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
// A key prefix of its own, so that keys of earlier demos or of a parallel one never show up here.
const keyPrefix = `cairn-demo:${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}:`;

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

// First process: run until the run waits for its verdict. A released lease's hash goes a minute later.
const ops = createRedisOpsStore({ url, keyPrefix, leaseRetentionMs: 60_000 });
const options = {
  model,
  prompt: 'Publish the release notes.',
  bindingId: 'publisher-v1',
  tools,
  session: { store: ops.agentRuns, runId: 'publish-1', scope: 'acme' },
  lease: { provider: ops.leases, owner: 'worker-1' },
};
const first = await runAgent(options);
if (first.status !== 'suspended') throw new Error(`expected a suspension, got ${first.status}`);
const waiting = await ops.agentRuns.list({ status: 'suspended', scope: 'acme' });
for (const run of waiting.runs) console.log(`waiting: ${run.runId}, ${run.pendingApprovals} approval(s), revision ${run.revision}`);
await ops.close();

// Later, another process: its own store object and connection resume the run with the verdict.
const later = createRedisOpsStore({ url, keyPrefix, leaseRetentionMs: 60_000 });
const done = await resumeAgent({
  ...options,
  session: { ...options.session, store: later.agentRuns },
  lease: { provider: later.leases, owner: 'worker-2' },
  approvalResponses: first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true })),
});
console.log(`resumed: ${done.status}: ${done.text}`);
console.log(`published: ${published.join(', ')}`);

// Ended runs go when an operator prunes them; this one was saved moments ago.
const stored = await later.agentRuns.load('publish-1', { scope: 'acme' });
console.log(`stored: ${stored?.status}, revision ${stored?.revision}`);
console.log(`pruned: ${await later.agentRuns.prune({ terminalBefore: Date.now() + 1 })}`);
await later.close();

// Refused at configuration: the Redis store keeps no version 3 run records.
try {
  createRedisOpsStore({ url, checkpointVersion: 3 });
} catch (error) {
  const { name, code, backend, feature } = error as { name: string; code: string; backend: string; feature: string };
  console.log(`${name}: ${code}, ${backend}, ${feature}`);
}

// A server that does not answer: a typed error within connectTimeoutMs, nothing written.
const down = createRedisOpsStore({ url: 'redis://127.0.0.1:1', connectTimeoutMs: 300 });
await down.connect().catch((error: { name: string; code: string; isRetryable: boolean }) => {
  console.log(`${error.name}: ${error.code}, retryable ${error.isRetryable}`);
});

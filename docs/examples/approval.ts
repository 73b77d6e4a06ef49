// A tool that needs a human verdict: the run suspends, the verdict comes back with resumeAgent.
import { createInMemoryAgentRunStore, resumeAgent, runAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();
const published: string[] = [];
const model = createMockModel({
  responses: [
    { toolCalls: [{ toolName: 'publish', args: { slug: 'release-notes' } }] },
    { text: 'The release notes are live.' },
  ],
});

// The same options start the run and resume it: the resume checks they still match.
const options = {
  model,
  prompt: 'Publish the release notes.',
  bindingId: 'publisher-v1',
  session: { store, runId: 'publish-7', scope: 'tenant-a' },
  tools: {
    publish: {
      description: 'Publish a page.',
      parameters: {
        type: 'object' as const,
        properties: { slug: { type: 'string' } },
        required: ['slug'],
      },
      needsApproval: true,
      execute: ({ slug }: { slug: string }) => {
        published.push(slug);
        return `published ${slug}`;
      },
    },
  },
};

const first = await runAgent(options);
if (first.status !== 'suspended') throw new Error(`expected a suspension, got ${first.status}`);
for (const request of first.pendingApprovals) {
  console.log(`waiting: ${request.toolName} ${JSON.stringify(request.args)} (call ${request.toolCallId}, step ${request.modelStep})`);
}
console.log(`published so far: ${published.length}`);

// Without a verdict the run stays suspended: an absent verdict is not a denial.
const early = await resumeAgent(options);
console.log(`resume without a verdict: ${early.status}`);

// Show the request to a person; answer with the approvalId and token the run issued.
const approvalResponses = first.pendingApprovals.map((request) => ({
  approvalId: request.approvalId,
  token: request.token,
  approved: true,
}));
const done = await resumeAgent({ ...options, approvalResponses });
console.log(`resume with the verdict: ${done.status}: ${done.text}`);
console.log(`published: ${published.join(', ')}`);

// The run has ended: a further resume returns the stored result, without a model call or an effect.
const again = await resumeAgent({ ...options, approvalResponses });
console.log(`resume after the end: ${again.status}, model calls in all: ${model.calls.length}, published ${published.length} time(s)`);

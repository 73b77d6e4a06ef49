// A durable agent run with no API key: a scripted model asks to call a tool
// that needs approval; the run suspends, is approved, and completes on resume.
import { createInMemoryAgentRunStore, resumeAgent, runAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();
let deploys = 0;
const options = {
  model: createMockModel({
    responses: [
      { text: 'I will deploy the billing service.', toolCalls: [{ toolName: 'deploy', args: { service: 'billing' } }] },
      { text: 'Deployed billing to production.' },
    ],
  }),
  prompt: 'Deploy the billing service.',
  bindingId: 'first-run-v1',
  session: { store, runId: 'first-run', scope: 'demo' },
  tools: {
    deploy: {
      description: 'Deploy a service to production.',
      parameters: { type: 'object' as const, properties: { service: { type: 'string' } }, required: ['service'] },
      needsApproval: true,
      execute: ({ service }: { service: string }) => {
        deploys++;
        return { service, version: 'v42' };
      },
    },
  },
};

const first = await runAgent(options);
console.log(`first leg: ${first.status}`);
if (first.status !== 'suspended') process.exit(1);
for (const request of first.pendingApprovals) {
  console.log(`  waiting for approval ${request.approvalId} (${request.toolName} ${JSON.stringify(request.args)})`);
}

const approvalResponses = first.pendingApprovals.map((request) => ({
  approvalId: request.approvalId,
  token: request.token,
  approved: true,
}));
const resumed = await resumeAgent({ ...options, approvalResponses });
console.log(`second leg: ${resumed.status}: ${resumed.text}`);

const again = await resumeAgent({ ...options, approvalResponses });
console.log(`resumed once more: ${again.status}, deploy ran ${deploys} time(s)`);
const stored = await store.load('first-run');
console.log(`stored revision ${stored?.revision}, status ${stored?.status}`);

// A run that waits for an approval: pending (exit 3), inspected from the store, then approved.
import { createInMemoryAgentRunStore, type AgentTools } from 'cairn/agent';
import { exitCodeFor, inspectRun, resumeHeadless, runHeadless } from 'cairn/headless';
import { createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();
const model = createMockModel({
  responses: [
    { toolCalls: [{ toolName: 'deploy', args: { env: 'prod' } }] },
    { text: 'Deployed to prod.' },
  ],
});
const tools: AgentTools = {
  deploy: {
    description: 'Deploy the build.',
    parameters: { type: 'object', properties: { env: { type: 'string' } }, required: ['env'] },
    needsApproval: true,
    execute: ({ env }: { env: string }) => ({ deployed: env }),
  },
};

const first = await runHeadless({ model, prompt: 'Deploy.', tools, store, runId: 'deploy-7' });
console.log(first.outcome, exitCodeFor(first));

// Later, perhaps in another process: read what the run waits for, decide, resume.
const waiting = await inspectRun(store, 'deploy-7');
for (const action of waiting.pending) console.log(`waiting on: ${action.kind} (answer with ${JSON.stringify(action.resumeWith)})`);
const approvalResponses = waiting.pending.flatMap((action) =>
  action.kind === 'approval' ? [{ approvalId: action.approvalId, approved: true, token: action.token }] : [],
);
const done = await resumeHeadless({ model, tools, store, runId: 'deploy-7', approvalResponses });
console.log(done.outcome, done.output, exitCodeFor(done));

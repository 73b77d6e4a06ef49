import { createInMemoryAgentRunStoreV3, streamAgent } from 'cairn/agent';
import { createRagContextSource } from 'cairn/context';
import { createMockModel } from 'cairn/testing';

const runs = createInMemoryAgentRunStoreV3();
const stream = streamAgent({
  checkpointVersion: 3,
  session: { store: runs, runId: 'deploy-1', scope: 'acme' },
  model: createMockModel({ responses: [{ text: 'Run CI, then deploy to eu-west.' }] }),
  prompt: 'How do I deploy?',
  context: {
    sources: [
      createRagContextSource({
        retrieve: async () => [{ text: 'Deploys need a green CI run.', index: 0, score: 0.9 }],
      }),
    ],
  },
  workingMemory: { create: { scope: 'acme', goal: 'Deploy the billing service.', now: Date.now() } },
});

for await (const event of stream.eventsV3) {
  if (event.type === 'context') console.log('context', event.step, event.manifest.refresh); // context 0 initial
}
const result = await stream.result;
const record = await runs.load('deploy-1');
console.log(result.status, record?.version, record?.context?.steps.length); // completed 3 1
console.log((await runs.getBlob(record!.context!.steps[0]!.blob.digest)).status); // found

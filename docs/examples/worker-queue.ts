// A worker on the PostgreSQL work queue: it starts a queued run, ends its job when the run waits for a verdict,
// and finishes the run from a resume job; a job for an agent it does not have is dead-lettered with the reason.
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { createMockModel } from 'cairn/testing';
import { createWorker, createWorkQueue, type WorkerAgent, type WorkerEvent } from 'cairn/worker';

// The tests' database; an application passes its own connection string.
const connectionString = process.env.CAIRN_TEST_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/test';
// A tenant of its own, so that runs of earlier demos never show up here.
const scope = `demo-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const runId = `notes-${scope}`;

const ops = createPostgresOpsStore({ connectionString }, { schema: 'cairn_docs_worker_ops' });
await ops.setup();
const queue = createWorkQueue({ connectionString, schema: 'cairn_docs_worker_queue' });
await queue.setup();

// An agent is a function from the job to the run's options: the same model, tools and binding on every leg.
const publisher: WorkerAgent = () => ({
  model: createMockModel({
    strict: false,
    responses: [(request) => (request.messages.some((m) => m.role === 'tool')
      ? { text: 'The release notes are live.' }
      : { toolCalls: [{ toolName: 'publish', args: { slug: 'release-notes' } }] })],
  }),
  bindingId: 'publisher-v1',
  tools: {
    publish: {
      parameters: { type: 'object' as const, properties: { slug: { type: 'string' } }, required: ['slug'] },
      needsApproval: true,
      execute: ({ slug }: { slug: string }) => `published ${slug}`,
    },
  },
});

const ends: WorkerEvent[] = [];
const worker = await createWorker({
  connectionString, schema: queue.schema, ops, agents: { publisher }, concurrency: 2,
  onEvent: (event) => { if (event.type === 'job-end') ends.push(event); },
});
const jobEnd = async (runIdOf: string, kind: string) => {
  for (;;) {
    const end = ends.find((e) => e.type === 'job-end' && e.runId === runIdOf && e.kind === kind);
    if (end && end.type === 'job-end') return end;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

await queue.enqueueRun({ agent: 'publisher', runId, scope, prompt: 'Publish the release notes.' });
const first = await jobEnd(runId, 'run');
console.log(`run job: ${first.outcome}, the run is ${first.status}; jobs in hand: ${worker.active()}`);

// A person answers; the verdict goes on the queue, and whichever worker takes it resumes the run.
const waiting = await ops.agentRuns.load(runId, { scope });
const [pending] = waiting!.pendingApprovals;
await queue.enqueueResume({
  agent: 'publisher', runId, scope,
  answers: { approvalResponses: [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }] },
});
const second = await jobEnd(runId, 'resume');
const done = await ops.agentRuns.load(runId, { scope });
console.log(`resume job: ${second.outcome}, the run is ${second.status}: ${done?.result?.text}`);

// No worker here has an agent called "translator": the job is dead-lettered, and nothing else is written.
await queue.enqueueRun({ agent: 'translator', runId: `fr-${scope}`, scope, prompt: 'Translate them.' });
await jobEnd(`fr-${scope}`, 'run');
const [dead] = await queue.listDeadJobs({ runId: `fr-${scope}` });
console.log(`dead letter: ${dead?.code}: ${dead?.reason}`);
console.log(`stored run for it: ${(await ops.agentRuns.load(`fr-${scope}`, { scope })) === undefined ? 'none' : 'some'}`);

await worker.drain();
await queue.close();
await ops.close();

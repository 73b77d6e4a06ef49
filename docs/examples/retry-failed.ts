// A run that failed on a transient model error goes on with retryFailed: true.
import { createInMemoryAgentRunStore, resumeAgent, runAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const options = {
  model: createMockModel({
    responses: [
      { error: { status: 503, message: 'The provider is overloaded.' } },
      { text: 'Ticket 9: the printer needs toner.' },
    ],
  }),
  prompt: 'Summarize ticket 9.',
  session: { store: createInMemoryAgentRunStore(), runId: 'ticket-9', scope: 'tenant-a' },
};

const first = await runAgent(options);
if (first.status === 'failed') {
  // `retry` is there only when the cause was transient.
  console.log(`first: failed, ${first.error.code}, transient cause: ${first.retry?.cause ?? 'none'}`);
}

// A failed run stays failed: a plain resume returns the stored result.
const again = await resumeAgent(options);
console.log(`plain resume: ${again.status}`);

// Once the provider answers again, retry from the last checkpoint.
const retried = await resumeAgent({ ...options, retryFailed: true });
console.log(`retryFailed: ${retried.status}: ${retried.text} (${retried.steps} model turns counted)`);

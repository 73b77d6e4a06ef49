// A run that failed on a transient model error goes on with retryFailed: true.
import { createInMemoryAgentRunStore, resumeAgent, runAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();
const options = {
  model: createMockModel({
    responses: [
      { error: { status: 503, message: 'The provider is overloaded.' } },
      { text: 'Ticket 9: the printer needs toner.' },
    ],
  }),
  prompt: 'Summarize ticket 9.',
  // Each model call is retried twice by default; with none, this 503 fails the run.
  maxRetries: 0,
  session: { store, runId: 'ticket-9', scope: 'tenant-a' },
};

const first = await runAgent(options);
if (first.status === 'failed') {
  // `retry` is there only when the cause was transient.
  console.log(`first: failed, ${first.error.code}, retry: ${JSON.stringify(first.retry)}`);
}
// The stored record says so too, with the error, and keeps the last checkpoint before the failure.
const stored = await store.load('ticket-9');
console.log(`stored: ${stored?.status}, retry: ${JSON.stringify(stored?.retry)}`);

// A failed run stays failed: a plain resume returns the stored result, without a model call.
const again = await resumeAgent(options);
console.log(`plain resume: ${again.status}, model calls so far: ${options.model.calls.length}`);

// Once the provider answers again, retry from the last checkpoint.
const retried = await resumeAgent({ ...options, retryFailed: true });
console.log(`retryFailed: ${retried.status}: ${retried.text} (${retried.steps} model turns counted)`);

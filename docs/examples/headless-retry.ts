// An open circuit breaker fails the model call before it is sent; retryFailed goes on later.
import { createInMemoryAgentRunStore } from 'cairn/agent';
import { exitCodeFor, resumeHeadless, runHeadless } from 'cairn/headless';
import { createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();
const model = createMockModel({ responses: [{ text: 'Summary ready.' }] });

// The breaker state the workers share says the provider is down for another minute.
const outage = {
  get: () => ({ failures: 5, cooldownUntil: Date.now() + 60_000 }),
  set: () => {},
};
const first = await runHeadless({ model, prompt: 'Summarize ticket 9.', store, runId: 'ticket-9', deps: { breakerStore: outage } });
console.log(first.outcome, JSON.stringify(first.retry), exitCodeFor(first));

// Once the provider answers again:
const retried = await resumeHeadless({ model, store, runId: 'ticket-9', retryFailed: true });
console.log(retried.outcome, exitCodeFor(retried));

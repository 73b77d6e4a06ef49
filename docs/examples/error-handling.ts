// Failures are results, not exceptions; errors are typed, plain and redacted.
import {
  BindingChangedError,
  CairnError,
  RevisionConflictError,
  RunIdentityError,
  createInMemoryAgentRunStore,
  resumeAgent,
  runAgent,
  serializeError,
} from 'cairn/agent';
import { inspectRun } from 'cairn/headless';
import { createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();
const options = {
  model: createMockModel({ responses: [{ text: 'Filed.' }] }),
  prompt: 'File the report.',
  bindingId: 'reports-v1',
  session: { store, runId: 'report-1', scope: 'tenant-a' },
};
const done = await runAgent(options);
console.log(`run: ${done.status}`);

// 1. A refusal is a failed result; it wrote nothing.
const revision = (await store.load('report-1'))?.revision;
const refusals = [
  await resumeAgent({ ...options, session: { ...options.session, scope: 'tenant-b' } }),
  await resumeAgent({ ...options, bindingId: 'reports-v2' }),
  await resumeAgent({ ...options, session: { ...options.session, runId: 'report-404' } }),
];
for (const refused of refusals) {
  if (refused.status === 'failed') console.log(JSON.stringify(refused.error));
}
console.log(`stored revision unchanged: ${(await store.load('report-1'))?.revision === revision}`);

// 2. A model that keeps failing: the run fails with the provider's error, as data.
const broken = await runAgent({
  model: createMockModel({ responses: [{ error: { status: 503, message: 'Service unavailable' } }] }),
  prompt: 'Anything.',
  maxRetries: 0, // no second attempt: the one scripted answer is the 503
});
if (broken.status === 'failed') console.log(JSON.stringify(broken.error));

// 3. Thrown errors (from a store, for instance) are CairnErrors with structured fields.
try {
  const stored = (await store.load('report-1'))!;
  await store.save(stored); // same revision again: fenced
} catch (error) {
  if (RevisionConflictError.isInstance(error)) {
    console.log(`${error.name} ${error.code} fault=${error.fault} expected=${error.expectedRevision} stored=${error.storedRevision}`);
  }
  // isInstance checks the class by its stable name, across copies of the package.
  console.log(`is a CairnError: ${CairnError.isInstance(error)}, is a BindingChangedError: ${BindingChangedError.isInstance(error)}`);
}

// 4. serializeError turns anything into { name, code, message } and hides credentials.
//    An error that is not Cairn's keeps its name and message; the code says where it was thrown.
const leaked = Object.assign(new Error('request failed: Authorization: Bearer sk-live-0123456789abcdef'), {
  code: 'ECONNRESET',
});
console.log(JSON.stringify(serializeError(leaked, 'tool_failed')));
console.log(JSON.stringify(serializeError(leaked)));

// 5. Where a call fails "with a TypeError", the error is a TypeError and a CairnError at once.
try {
  await inspectRun(store, 'report-404');
} catch (error) {
  if (RunIdentityError.isInstance(error)) {
    console.log(`TypeError: ${error instanceof TypeError}, CairnError: ${CairnError.isInstance(error)}, ${error.name} ${error.code}`);
  }
}

// A charge whose outcome was never recorded: the resume stops until someone says what happened.
import { createInMemoryAgentRunStore, type AgentTools } from 'cairn/agent';
import { exitCodeFor, inspectRun, resumeHeadless, runHeadless } from 'cairn/headless';
import { createCrashPlan, createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();
const script = () => createMockModel({
  strict: false,
  // Answer by what the conversation holds, so a fresh model in a later leg picks up the script.
  responses: [(request) => (request.messages.some((m) => m.role === 'tool')
    ? { text: 'Charged.' }
    : { toolCalls: [{ toolName: 'charge', args: { orderId: 'order-7' } }] })],
});
const tools: AgentTools = {
  charge: {
    description: 'Charge the order once.',
    parameters: { type: 'object', properties: { orderId: { type: 'string' } } },
    execute: () => ({ charged: true }),
  },
};

// Simulate a process that dies right after the charge went out, before its outcome was saved.
const crash = createCrashPlan({ at: { kind: 'tool', index: 1, when: 'after' } });
await crash.race(runHeadless({
  model: crash.wrapModel(script()), prompt: 'Charge order 7.', tools: crash.wrapTools(tools), store: crash.wrapStore(store), runId: 'order-7',
}));

const stuck = await inspectRun(store, 'order-7');
console.log(`status: ${stuck.status}; pending: ${stuck.pending.map((a) => a.kind).join(', ')}`);
const plain = await resumeHeadless({ model: script(), tools, store, runId: 'order-7' });
console.log(`plain resume: ${plain.outcome} (${plain.reason}), exit ${exitCodeFor(plain)}`);

// The payment system shows the charge landed: record its result, so the call never runs again.
const calls = stuck.pending.flatMap((a) => (a.kind === 'unknown-effect' ? [a.toolCallId] : []));
const done = await resumeHeadless({
  model: script(), tools, store, runId: 'order-7',
  reconciledToolResults: calls.map((toolCallId) => ({ toolCallId, output: { charged: true } })),
});
console.log(`reconciled: ${done.outcome}, "${done.output}", exit ${exitCodeFor(done)}`);

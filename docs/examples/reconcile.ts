// The process dies half-way through a step; the resume stops until each interrupted call is settled.
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunStore } from 'cairn/agent';
import { cloneStore, createCrashPlan, createLedger, createMockModel, ledgerKey, ledgerTool } from 'cairn/testing';

// The payment system: it lives outside the process, so the crash cannot touch it.
// Each charge is recorded under the call's identity, <tool>@<modelStep>:<toolCallId>.
const payments = createLedger();

// The same options in every process. The model answers from the conversation,
// so it fits wherever the run picks up again.
const options = (store: AgentRunStore) => ({
  model: createMockModel({
    strict: false,
    responses: [
      (request) =>
        request.messages.some((m) => m.role === 'tool')
          ? { text: 'Orders A-7 and B-3 are paid.' }
          : {
            toolCalls: [
              { toolName: 'charge', toolCallId: 'pay-A7', args: { order: 'A-7' } },
              { toolName: 'charge', toolCallId: 'pay-B3', args: { order: 'B-3' } },
            ],
          },
    ],
  }),
  prompt: 'Charge orders A-7 and B-3.',
  bindingId: 'payments-v1',
  session: { store, runId: 'orders', scope: 'tenant-a' },
  tools: { charge: ledgerTool(payments, 'charge', { description: 'Charge one order.', result: () => 'charged' }) },
});

// Process 1 dies just before the second charge: the first one went through, and
// neither has more than its `executing` receipt on disk.
const disk = createInMemoryAgentRunStore();
const crash = createCrashPlan({ at: { kind: 'tool', toolName: 'charge', index: 2, when: 'before' } });
const doomed = options(crash.wrapStore(disk));
const outcome = await crash.race(runAgent({ ...doomed, model: crash.wrapModel(doomed.model), tools: crash.wrapTools(doomed.tools) }));
console.log(`process 1 crashed: ${outcome.crashed}`);

// Process 2 opens the same data through a new store object.
const store = await cloneStore(disk, ['orders']);
const revision = (await store.load('orders'))?.revision;
const stopped = await resumeAgent(options(store));
if (stopped.status !== 'stopped' || stopped.reason !== 'tool-reconciliation-required') throw new Error('expected a stop');
const unknown = stopped.unknownEffects ?? [];
for (const receipt of unknown) console.log(`unknown effect: ${receipt.toolName} ${receipt.toolCallId} (${receipt.status})`);
console.log(`nothing written: ${(await store.load('orders'))?.revision === revision}`);

// Decide per call, from the system the effect touched.
const landed = unknown.filter((r) => payments.count(ledgerKey(r.toolName, r.modelStep, r.toolCallId)) > 0);
const missing = unknown.filter((r) => !landed.includes(r));
console.log(`landed: ${landed.map((r) => r.toolCallId).join(', ')}; never arrived: ${missing.map((r) => r.toolCallId).join(', ')}`);

const settled = await resumeAgent({
  ...options(store),
  // It landed: record what the tool would have returned. Nothing runs again.
  reconciledToolResults: landed.map((r) => ({ toolCallId: r.toolCallId, output: 'charged' })),
  // It never arrived: run the call once more, under the same identity.
  retryToolCallIds: missing.map((r) => r.toolCallId),
});
console.log(`resume: ${settled.status}: ${settled.text}`);

const receipts = Object.values((await store.load('orders'))!.receipts);
for (const r of receipts) console.log(`receipt ${r.key}: ${r.status}${r.reconciled ? ', reconciled' : ''}`);
console.log(`charges: ${JSON.stringify(payments.entries())}`);

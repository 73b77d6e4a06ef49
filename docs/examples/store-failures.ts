// Fail each save of a one-call run in turn, then resume through a healthy store object.
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunStore } from 'cairn/agent';
import { createFaultyStore, createLedger, createMockModel, ledgerTool, type Ledger } from 'cairn/testing';

const options = (store: AgentRunStore, payments: Ledger) => ({
  // Answers from the conversation, so it fits wherever a leg starts.
  model: createMockModel({
    strict: false,
    responses: [
      (request) =>
        request.messages.some((m) => m.role === 'tool')
          ? { text: 'Charged.' }
          : { toolCalls: [{ toolName: 'charge', toolCallId: 'c1' }] },
    ],
  }),
  prompt: 'Charge order 7.',
  session: { store, runId: 'order-7', scope: 'tenant-a' },
  tools: { charge: ledgerTool(payments, 'charge') },
});

// A run nothing goes wrong with, to see what each of its saves holds.
const healthy = createFaultyStore(createInMemoryAgentRunStore());
await runAgent(options(healthy, createLedger()));
const receiptIn = (n: number) => Object.values(healthy.history[n - 1]!.receipts)[0]?.status ?? '-';
const outcome = (r: Awaited<ReturnType<typeof runAgent>>) =>
  r.status === 'failed' ? `failed (${r.error.code})` : r.status === 'stopped' ? `stopped (${r.reason})` : r.status;

console.log(['save', 'receipt  ', 'charges', 'resume'.padEnd(38), 'charges', 'model calls'].join('  '));
for (let n = 1; n <= healthy.saves; n++) {
  const disk = createInMemoryAgentRunStore();
  const payments = createLedger();
  const first = await runAgent(options(createFaultyStore(disk, { failSave: { at: n, mode: 'reject' } }), payments));
  if (first.status !== 'failed' || first.error.code !== 'persistence_failed') throw new Error(`save ${n}: ${outcome(first)}`);
  const before = payments.total();
  const again = options(disk, payments);
  const resumed = await resumeAgent(again);
  console.log(
    [
      String(n).padEnd(4),
      receiptIn(n).padEnd(9),
      String(before).padEnd(7),
      outcome(resumed).padEnd(38),
      String(payments.total()).padEnd(7),
      again.model.calls.length,
    ].join('  '),
  );
}

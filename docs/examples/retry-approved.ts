// A person approved a refund; the process died just before it went out. The retry needs no verdict again.
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunStore } from 'cairn/agent';
import { inspectRun } from 'cairn/headless';
import { cloneStore, createCrashPlan, createLedger, createMockModel, ledgerKey, ledgerTool } from 'cairn/testing';

// The payment system, outside every process.
const payments = createLedger();
const options = (store: AgentRunStore) => ({
  model: createMockModel({
    strict: false,
    responses: [
      (request) =>
        request.messages.some((m) => m.role === 'tool')
          ? { text: 'Refund R-12 is on its way.' }
          : { toolCalls: [{ toolName: 'refund', toolCallId: 'refund-R12', args: { order: 'R-12' } }] },
    ],
  }),
  prompt: 'Refund order R-12.',
  session: { store, runId: 'refund-12', scope: 'tenant-a' },
  tools: { refund: ledgerTool(payments, 'refund', { needsApproval: true, result: () => 'refunded' }) },
});

const disk = createInMemoryAgentRunStore();
const first = await runAgent(options(disk));
if (first.status !== 'suspended') throw new Error(first.status);
const approvalResponses = first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));

// The resume that brings the verdict dies just before the refund: its `executing` receipt is on disk.
const crash = createCrashPlan({ at: { kind: 'tool', toolName: 'refund', index: 1, when: 'before' } });
const doomed = options(crash.wrapStore(disk));
await crash.race(resumeAgent({ ...doomed, tools: crash.wrapTools(doomed.tools), approvalResponses }));

// A new process: the effect is unknown, and the stopped result says it ran under an approval, and which.
const store = await cloneStore(disk, ['refund-12']);
const stopped = await resumeAgent(options(store));
if (stopped.status !== 'stopped') throw new Error(stopped.status);
for (const e of stopped.unknownEffects ?? []) {
  console.log(`unknown: ${e.toolCallId} (${e.status}), approved: ${e.approval?.approved}, approval ${e.approval?.approvalId === approvalResponses[0]!.approvalId ? 'as issued' : '?'}`);
}
const report = await inspectRun(store, 'refund-12', { scope: 'tenant-a' });
for (const p of report.pending) if (p.kind === 'unknown-effect') console.log(`inspectRun: ${p.kind} ${p.toolCallId}, approved: ${p.approval?.approved}`);

// The payment system never saw it, so run it once more. The recorded verdict passes the gate.
const missing = (stopped.unknownEffects ?? []).filter((e) => payments.count(ledgerKey(e.toolName, e.modelStep, e.toolCallId)) === 0);
const done = await resumeAgent({ ...options(store), retryToolCallIds: missing.map((e) => e.toolCallId) });
console.log(`retry: ${done.status}: ${done.text} (warnings: ${done.warnings.length})`);
console.log(`refunds: ${JSON.stringify(payments.entries())}`);

import { Agent, digestOfToolInput, runAgent, tool, type ToolExecutionEvidence, type ToolExecutionJournalView } from "cairn";
import { createInMemoryAgentRunStore, createInMemoryLeaseProvider, type AgentRunStore } from "cairn/agent";
import { createOpenAI } from "cairn/openai";
import { createInMemoryAgentStreamJournal } from "cairn/ui";
import { z } from "zod";

// The payments system: it keeps each charge under the idempotency key the tool handed it.
const charges = new Map<string, { order: string; receipt: string }>();
const externalLedger = {
  async verifyConfirmedEffect(candidate: ToolExecutionEvidence, journal: ToolExecutionJournalView) {
    const charge = charges.get(candidate.operationId);
    return charge !== undefined && candidate.inputDigest === journal.inputDigest &&
      JSON.stringify(candidate.output) === JSON.stringify({ receipt: charge.receipt });
  },
};

const charge = tool({
  name: "charge",
  schema: z.object({ order: z.string() }),
  execute: async ({ order }, context) => {
    charges.set(context.idempotencyKey, { order, receipt: "rcpt-1" });
    return { receipt: "rcpt-1" };
  },
});
const agent = new Agent({ model: createOpenAI()("gpt-6-astra"), maxSteps: 3, tools: { charge } });

// The run store with its leases and a journal (what an ops store bundles as agentRuns, leases and journal).
const leases = createInMemoryLeaseProvider();
const store = { agentRuns: createInMemoryAgentRunStore([], { leases }), leases, journal: createInMemoryAgentStreamJournal() };

// The charge goes through, then the write of its receipt fails: nobody knows from the run whether it landed.
const failingAfterTheEffect: AgentRunStore = {
  load: (runId, options) => store.agentRuns.load(runId, options),
  save: async (envelope, options) => {
    if (Object.values(envelope.receipts).some((r) => r.status !== "executing")) throw new Error("disk full");
    await store.agentRuns.save(envelope, options);
  },
};
await agent.run({ runId: "order-7", scope: "tenant-a", store: failingAfterTheEffect, prompt: "Charge order A-7." });
const stopped = await agent.run({ runId: "order-7", scope: "tenant-a", store: store.agentRuns });
console.log(stopped.status, stopped.taskOutcome);

// What the application gathered from the payments system about that call.
const [call] = stopped.result.status === "stopped" ? stopped.result.unknownEffects ?? [] : [];
const evidence: ToolExecutionEvidence = {
  operationId: [...charges.keys()][0]!,
  runId: "order-7",
  scope: "tenant-a",
  toolCallId: call!.toolCallId,
  toolName: "charge",
  inputDigest: digestOfToolInput({ order: "A-7" }),
  output: { receipt: "rcpt-1" },
  source: "payments",
  proof: { receipt: "rcpt-1" },
};

import { reconcileAgentToolExecution } from "cairn";

const state = await reconcileAgentToolExecution({
  store,
  evidence,
  verifyEvidence: async (candidate, journal) =>
    externalLedger.verifyConfirmedEffect(candidate, journal)
});
const result = await runAgent(agent, { state, maxSteps: state.currentStep + 2 });

console.log(result.status, result.taskOutcome, result.outputText);
console.log("charges:", charges.size);

import { Agent, tool } from "cairn";
import { createOpenAI } from "cairn/openai";
import { z } from "zod";

// The application's release system: it keeps each deploy by its idempotency key.
const releases = new Map<string, string>();
async function deployRelease(target: string, options: { signal?: AbortSignal; idempotencyKey?: string }) {
  if (!releases.has(options.idempotencyKey!)) releases.set(options.idempotencyKey!, target);
  return `release live in ${target}`;
}

const deploy = tool({
  name: "deploy",
  schema: z.object({ target: z.string() }),
  requiresApproval: true,
  approvalMode: "interrupt",
  approvalVersion: "2026-07-29",
  execute: async ({ target }, context) =>
    deployRelease(target, {
      signal: context?.abortSignal,
      idempotencyKey: context?.idempotencyKey
    })
});

const agent = new Agent({
  model: createOpenAI()("gpt-6-astra"),
  instructions: "Deploy what you are asked to, then confirm in one sentence.",
  tools: { deploy },
});

// The run stops before the effect: nothing is deployed yet.
const first = await agent.run({ prompt: "Deploy the release to eu-west." });
const pending = first.state.pendingApprovals[0]!;
console.log(first.status, first.taskOutcome, releases.size);
console.log(pending.toolName, pending.approvalVersion, pending.args, pending.argsDigest);

// Later (any process): the application checks who may approve, then continues the saved state.
const saved = JSON.parse(JSON.stringify(first.state));
const second = await agent.run({
  state: saved,
  approvalResponses: [{ approvalId: pending.approvalId, approved: true, token: pending.token }],
});
console.log(second.status, second.taskOutcome, [...releases.values()]);
console.log(second.outputText);

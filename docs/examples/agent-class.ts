import { Agent, tool } from "cairn";
import { createOpenAI } from "cairn/openai";
import { z } from "zod";

const openai = createOpenAI({ apiKey: process.env.OPENAI_API_KEY });

const agent = new Agent({
  model: openai("gpt-6-astra"),
  instructions: "Answer with verified account facts and keep replies short.",
  maxSteps: 3,
  tools: {
    lookupAccount: tool({
      name: "lookupAccount",
      schema: z.object({ accountId: z.string() }),
      execute: async ({ accountId }) => loadAccount(accountId)
    })
  }
});

const result = await agent.run({
  prompt: "Check account acct_123."
});

console.log(result.outputText);
console.log(result.state);

// The application's own data access (here, a fixed record).
async function loadAccount(accountId: string) {
  return { accountId, status: "active", plan: "team" };
}

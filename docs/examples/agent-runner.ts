import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent } from "cairn";
import { createOpenAI } from "cairn/openai";

// The agent of the first example, without its tool; sessions are kept in a scratch directory.
process.chdir(mkdtempSync(join(tmpdir(), "cairn-runner-")));
const openai = createOpenAI({ apiKey: process.env.OPENAI_API_KEY });
const agent = new Agent({
  model: openai("gpt-6-astra"),
  instructions: "Answer with verified account facts and keep replies short.",
  maxSteps: 3,
});

import {
  createFileSessionService,
  createRunner
} from "cairn";

const runner = createRunner({
  appName: "support-copilot",
  agent,
  sessionService: createFileSessionService({
    directory: ".cairn/sessions"
  })
});

const first = await runner.run({
  userId: "user_123",
  sessionId: "demo",
  prompt: "Remember that I prefer short answers."
});

const second = await runner.run({
  userId: "user_123",
  sessionId: first.session.sessionId,
  prompt: "Summarize the account status."
});

console.log(first.session);
console.log(second.session);
console.log(second.outputText);

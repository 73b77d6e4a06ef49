// A failed attempt the provider may have billed (a 503) stays held; the fallback is reserved on its own.
import { runAgent } from 'cairn/agent';
import { createExecutionContext } from 'cairn/policy';
import { createMockModel } from 'cairn/testing';

const execution = createExecutionContext({
  prices: { 'mock:primary': { input: 1, output: 2 }, 'mock:fallback': { input: 1, output: 2 } },
  budget: { usd: 1, estimate: { inputTokens: 1000, outputTokens: 1000 } },
});
const result = await runAgent({
  model: createMockModel({ modelId: 'primary', responses: [{ error: { status: 503 } }] }),
  fallbackModels: [createMockModel({ modelId: 'fallback', responses: [{ text: 'Answered.', usage: { inputTokens: 1000, outputTokens: 500 } }] })],
  maxRetries: 0,
  prompt: 'Go.',
  execution,
});
console.log(result.status, JSON.stringify(result.accounting));
for (const entry of await execution.ledger.entries()) console.log(entry.model, entry.status, entry.usd);

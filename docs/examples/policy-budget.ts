// A shared USD ceiling: every model attempt reserves its estimate first; a call that would pass the ceiling is never sent.
import { runAgent } from 'cairn/agent';
import { createExecutionContext } from 'cairn/policy';
import { createMockModel } from 'cairn/testing';

const execution = createExecutionContext({
  // USD per million tokens.
  prices: { 'mock:mock-model': { input: 1, output: 2 } },
  // Each call is estimated at 1000 input and 1000 output tokens: $0.003.
  budget: { usd: 0.004, estimate: { inputTokens: 1000, outputTokens: 1000 } },
});
const usage = { inputTokens: 1000, outputTokens: 500 };

// Two runs share the ceiling, each under its own child context.
const first = await runAgent({
  model: createMockModel({ responses: [{ text: 'First.', usage }] }),
  prompt: 'Go.',
  execution: execution.child({ name: 'first' }),
});
console.log(first.status, first.accounting.committed);

// $0.002 spent + $0.003 asked is more than $0.004: the second run stops before its call.
const second = await runAgent({
  model: createMockModel({ responses: [{ text: 'never', usage }] }),
  prompt: 'Go.',
  execution: execution.child({ name: 'second' }),
});
if (second.status === 'stopped') console.log(second.reason, JSON.stringify(second.stopDetails));
console.log(await execution.accounting());

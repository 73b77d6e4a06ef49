// The bundled price table prices the providers' own models: under a USD ceiling a call is reserved at every byte it sends plus its output limit, and a model with no price is refused unless the budget holds it.
import { runAgent } from 'cairn/agent';
import { createOpenAI } from 'cairn/openai';
import { createExecutionContext, PRICES_AS_OF } from 'cairn/policy';
import { createMockModel } from 'cairn/testing';

// Nothing listens on port 9: no call below is ever sent.
const openai = createOpenAI({ apiKey: 'sk-example', baseURL: 'http://127.0.0.1:9/v1' });
const execution = createExecutionContext({ budget: { usd: 0.000001 } });
console.log(`prices as of ${PRICES_AS_OF}:`, execution.priceOf(openai.chat('gpt-4.1')));

// gpt-4.1 is priced: the estimate (the request's bytes at $2, 32,768 output tokens at $8 per million) is over the ceiling.
const priced = await runAgent({ model: openai.chat('gpt-4.1'), prompt: 'Hello.', execution });
if (priced.status === 'stopped') console.log(priced.reason, JSON.stringify(priced.stopDetails));

// A model the table does not know is refused before its call.
const unpriced = await runAgent({ model: openai.chat('gpt-9-preview'), prompt: 'Hello.', execution: createExecutionContext({ budget: { usd: 5 } }) });
if (unpriced.status === 'failed') console.log(unpriced.error.name, unpriced.error.code);

// Your own price overrides the table's; unknownPrice: 'hold' lets an unpriced model run, uncounted in USD, with a warning.
const own = createExecutionContext({
  prices: { 'openai:gpt-4.1': { input: 1.5, output: 6 } },
  // Without the table every other model is unpriced, the scripted one too.
  bundledPrices: false,
  budget: { usd: 5, unknownPrice: 'hold' },
});
console.log(own.priceOf(openai.chat('gpt-4.1')), own.priceOf(openai.chat('gpt-4o')));
const held = await runAgent({ model: createMockModel({ responses: [{ text: 'Hi.' }] }), prompt: 'Hello.', execution: own });
console.log(held.status, held.warnings.map((w) => `${w.setting}: ${w.message}`));

// Text deltas as the model writes them. The run starts only when something reads the stream.
import { streamAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const model = createMockModel({
  responses: [{ text: 'Hello from a streamed run.', chunks: ['Hello', ' from a', ' streamed', ' run.'] }],
});
const stream = streamAgent({ model, prompt: 'Say hello.' });
console.log(`model calls before reading: ${model.calls.length}`);

for await (const delta of stream.textStream) console.log(`delta: ${JSON.stringify(delta)}`);

// Every view replays the run from its first event, even after the run ended.
const types: string[] = [];
for await (const event of stream.events) types.push(event.type);
console.log(types.join(' → '));

const result = await stream.result;
console.log(`${result.status}: ${result.text}`);

// Every way a tool call can end, as the stream reports it and as the model sees it.
import { streamAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const object = { type: 'object' as const, properties: {} };

const stream = streamAgent({
  model: createMockModel({
    responses: [
      {
        toolCalls: [
          { toolName: 'weather', args: { city: 'Oslo' } },
          { toolName: 'deleteEverything' }, // not one of the run's tools
          { toolName: 'shell', args: { command: 'rm -rf /' } },
          { toolName: 'flaky' },
          { toolName: 'count' },
          { toolName: 'secret' },
        ],
      },
      { text: 'Done.' },
    ],
  }),
  prompt: 'Try every tool.',
  // Guardrail: runs before the approval gate and can allow, block or rewrite a call.
  onToolCall: ({ toolName }) => (toolName === 'shell' ? { action: 'block', reason: 'no shell access' } : undefined),
  tools: {
    weather: { parameters: object, execute: ({ city }: { city: string }) => ({ city, sky: 'clear' }) },
    shell: { parameters: object, execute: () => 'ran' },
    flaky: {
      parameters: object,
      execute: () => {
        throw new Error('upstream timed out');
      },
    },
    count: {
      parameters: object,
      execute: () => 'seven',
      validateResult: (value: unknown) => {
        if (typeof value !== 'number') throw new Error('expected a number');
        return value;
      },
    },
    secret: {
      parameters: object,
      execute: () => ({ value: 'hunter2' }),
      toModelOutput: () => {
        throw new Error('cannot show this result');
      },
    },
  },
});

// Calls run concurrently, so they may end in any order; collect the reports, then print them in call order.
const outcomes = new Map<string, string>();
for await (const event of stream.events) {
  if (event.type === 'tool-call-end') outcomes.set(event.toolCallId, event.outcome ?? '(success)');
}
const result = await stream.result;
for (const message of result.messages) {
  if (message.role !== 'tool') continue;
  console.log(`${message.toolName.padEnd(16)} ${outcomes.get(message.toolCallId)!.padEnd(18)} ${JSON.stringify(message.content)}`);
}
console.log(`${result.status}: ${result.text}`);

// A client tool has no `execute`: the application answers the call, here on resume.
import { createInMemoryAgentRunStore, resumeAgent, runAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

type Choice = { color: string };

const store = createInMemoryAgentRunStore();
const options = {
  model: createMockModel({
    responses: [
      { toolCalls: [{ toolName: 'pickColor', args: { choices: ['teal', 'amber'] } }] },
      { text: 'Teal it is.' },
    ],
  }),
  prompt: 'Let me choose the theme colour.',
  session: { store, runId: 'theme-3', scope: 'tenant-a' },
  tools: {
    pickColor: {
      description: 'Ask the user to pick one of the colours.',
      parameters: {
        type: 'object' as const,
        properties: { choices: { type: 'array', items: { type: 'string' } } },
        required: ['choices'],
      },
      // No execute: the run suspends until clientToolResults answers the call.
      // The answer still goes through validation and projection, like a server tool's result.
      validateResult: (value: unknown): Choice => {
        if (typeof (value as Choice)?.color !== 'string') throw new Error('Expected { color: string }.');
        return value as Choice;
      },
      toModelOutput: (choice: Choice) => `The user picked ${choice.color}.`,
    },
  },
};

const first = await runAgent(options);
if (first.status !== 'suspended') throw new Error(`expected a suspension, got ${first.status}`);
const [call] = first.pendingClientCalls;
console.log(`the client should run ${call!.toolName} ${JSON.stringify(call!.args)}`);

// ...the browser shows the choices, the user clicks one...
const resumed = await resumeAgent({
  ...options,
  clientToolResults: [{ toolCallId: call!.toolCallId, output: { color: 'teal' } }],
});
const toolMessage = resumed.messages.find((m) => m.role === 'tool');
console.log(`the model saw: ${JSON.stringify(toolMessage?.role === 'tool' ? toolMessage.content : null)}`);
console.log(`${resumed.status}: ${resumed.text}`);

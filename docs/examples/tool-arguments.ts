// Arguments are checked against the tool's parameters before approval and effect; the model corrects itself.
import { runAgent, streamAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const sent: string[] = [];
const email = {
  description: 'Send an email.',
  parameters: {
    type: 'object' as const,
    properties: { to: { type: 'string' }, subject: { type: 'string' } },
    required: ['to', 'subject'],
    additionalProperties: false,
  },
  execute: ({ to }: { to: string; subject: string }) => {
    sent.push(to);
    return 'sent';
  },
};

const stream = streamAgent({
  model: createMockModel({
    responses: [
      { toolCalls: [{ toolName: 'email', args: { to: ['ada@example.com'], body: 'Hi' } }] },
      // Arguments that are not JSON reach the run as the text the model sent.
      { toolCalls: [{ toolName: 'email', args: '{"to": "ada@example.com", "subj' }] },
      { toolCalls: [{ toolName: 'email', args: { to: 'ada@example.com', subject: 'Hi' } }] },
      { text: 'Sent to Ada.' },
    ],
  }),
  prompt: 'Email Ada.',
  tools: { email },
});
for await (const event of stream.events) {
  if (event.type === 'tool-call-end') console.log(`${event.outcome ?? '(success)'}: ${event.output}`);
}
const result = await stream.result;
console.log(`${result.status}: ${result.text} Sent: ${sent.join(', ')}.`);

// A schema that is not a valid JSON Schema of an object is refused before anything runs.
const refused = await runAgent({
  model: createMockModel({ responses: [] }),
  prompt: 'Email Ada.',
  tools: { email: { ...email, parameters: { type: 'object', properties: { to: { type: 'text' } } } } },
});
if (refused.status === 'failed') console.log(`${refused.error.code}: ${refused.error.message}`);

// The output check asks for a repair; the verifier rejects a valid but wrong answer.
import { runAgent, streamAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

type Total = { total: number };

const stream = streamAgent<Total>({
  model: createMockModel({
    responses: [
      { text: 'The total is 12.' }, // not JSON: repaired
      { text: '{"total":11}' }, // valid, but the verifier rejects it
      { text: '{"total":12}' },
    ],
  }),
  prompt: 'Add 5 and 7. Reply as JSON.',
  output: {
    schema: { type: 'object', properties: { total: { type: 'number' } }, required: ['total'] },
    validate: (value) => {
      if (typeof (value as Total)?.total !== 'number') throw new Error('Expected { total: number }.');
      return value as Total;
    },
  },
  verify: ({ output }) =>
    output.total === 5 + 7 ? { status: 'verified' } : { status: 'rejected', feedback: '5 + 7 is not ' + output.total + '.' },
});

for await (const event of stream.events) {
  if (event.type === 'output-attempt') {
    console.log(`output attempt ${event.attempt}: ${event.valid ? 'valid' : `invalid (${event.issue})`}`);
  }
  if (event.type === 'verify-result') console.log(`verifier attempt ${event.attempt}: ${event.verdict}`);
}

const result = await stream.result;
console.log(result.status, JSON.stringify(result.status === 'completed' ? result.output : null), `in ${result.steps} model turns`);

// What the engine added to the conversation on the way:
for (const message of result.messages) {
  if (message.role === 'user' && message.content !== 'Add 5 and 7. Reply as JSON.') console.log(`> ${message.content}`);
}

// Out of attempts: the run stops instead of returning an unchecked value.
const stubborn = await runAgent<Total>({
  model: createMockModel({ responses: [{ text: 'twelve' }, { text: 'still twelve' }] }),
  prompt: 'Add 5 and 7. Reply as JSON.',
  output: { schema: {}, validate: (value) => value as Total },
  maxOutputAttempts: 2,
});
if (stubborn.status === 'stopped') console.log(stubborn.status, stubborn.reason, JSON.stringify(stubborn.stopDetails));

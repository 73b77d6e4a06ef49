// A run that must end in a typed, validated value. The scripted model needs no API key.
import { runAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

type Answer = { answer: number };

const result = await runAgent<Answer>({
  model: createMockModel({ responses: [{ text: '{"answer":42}' }] }),
  prompt: 'What is six times seven? Reply as JSON.',
  output: {
    // A raw JSON Schema describes the shape to the model; `validate` checks it at run time.
    schema: {
      type: 'object',
      properties: { answer: { type: 'number' } },
      required: ['answer'],
      additionalProperties: false,
    },
    validate(value) {
      if (typeof value !== 'object' || value === null || typeof (value as Answer).answer !== 'number') {
        throw new Error('Expected { answer: number }.');
      }
      return { answer: (value as Answer).answer };
    },
  },
  // A valid shape is not yet a right answer: the verifier decides that.
  verify: ({ output }) =>
    output.answer === 42 ? { status: 'verified' } : { status: 'rejected', feedback: 'Check the product again.' },
});

if (result.status === 'completed') {
  const answer: number = result.output.answer; // typed as number
  console.log(`answer: ${answer}`);
} else {
  console.log(`no answer: ${result.status}`);
}
console.log(`model turns: ${result.steps}, tokens: ${result.usage.totalTokens}`);

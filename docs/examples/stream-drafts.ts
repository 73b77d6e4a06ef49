// Drafts of a structured output while it is written, and the elements of an array output.
import { streamAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

type Stop = { city: string; nights: number };

const stream = streamAgent<Stop[]>({
  model: createMockModel({
    responses: [
      {
        text: '[{"city":"Lyon","nights":2},{"city":"Turin","nights":3}]',
        chunks: ['[{"city":"Ly', 'on","nights":2}', ',{"city":"Tu', 'rin","nig', 'hts":3}]'],
      },
    ],
  }),
  prompt: 'Plan a two-stop trip as a JSON array.',
  output: {
    schema: { type: 'array', items: { type: 'object' } },
    validate(value) {
      if (!Array.isArray(value)) throw new Error('Expected an array of stops.');
      return value as Stop[];
    },
  },
});

// A draft is unchecked data: show it, but do not trust its type.
for await (const draft of stream.partialOutputStream) console.log(`draft:   ${JSON.stringify(draft)}`);

// Each element once it is complete (here, each finished object of the top-level array).
for await (const element of stream.elementStream) console.log(`element: ${JSON.stringify(element)}`);

// Only the result carries the validated value, typed as Stop[].
const result = await stream.result;
if (result.status === 'completed') {
  console.log(`final:   ${result.output.map((stop) => `${stop.city} (${stop.nights})`).join(', ')}`);
}

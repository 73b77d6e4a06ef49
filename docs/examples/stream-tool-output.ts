// In `tool` output mode the answer arrives as the output tool's arguments; each attempt is one draft.
import { streamAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

type Booking = { room: string; nights: number };

const stream = streamAgent<Booking>({
  model: createMockModel({
    responses: [
      { toolCalls: [{ toolName: 'freeRooms' }] },
      { text: 'Harbour 2 is free.' }, // no tool calls: the loop is done, finalization begins
      { toolCalls: [{ toolName: 'json_output', args: { room: 'Harbour 2', nights: 'three' } }] }, // invalid: asked to repair
      { toolCalls: [{ toolName: 'json_output', args: { room: 'Harbour 2', nights: 3 } }] },
    ],
  }),
  prompt: 'Book a free room for three nights.',
  tools: { freeRooms: { parameters: { type: 'object' as const }, execute: () => ['Harbour 2'] } },
  output: {
    mode: 'tool',
    schema: {
      type: 'object',
      properties: { room: { type: 'string' }, nights: { type: 'integer' } },
      required: ['room', 'nights'],
    },
    validate(value) {
      const booking = value as Booking;
      if (typeof booking?.room !== 'string' || !Number.isInteger(booking.nights)) throw new Error('nights must be a whole number.');
      return booking;
    },
  },
});

// The forced output call shows up as a `tool-call-start` of the finalization step.
for await (const event of stream.events) {
  if (event.type === 'step-start') console.log(`step ${event.step} (${event.phase})`);
  if (event.type === 'tool-call-start') console.log(`  ${event.toolName} ${JSON.stringify(event.args)}`);
  if (event.type === 'output-attempt') console.log(`  attempt ${event.attempt}: ${event.valid ? 'valid' : event.issue}`);
}

// The same arguments, as unchecked drafts: one per finalization attempt.
for await (const draft of stream.partialOutputStream) console.log(`draft: ${JSON.stringify(draft)}`);

const result = await stream.result;
if (result.status === 'completed') console.log(`booked: ${result.output.room} for ${result.output.nights} nights`);
// The turns the engine added to the conversation on the way:
for (const message of result.messages.slice(1)) if (message.role === 'user') console.log(`> ${message.content}`);

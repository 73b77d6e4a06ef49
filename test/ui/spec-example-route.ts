// The spec's UI example (000, "Native agents in a UI"), as written, with its imports mapped to cairn.
import { streamAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { toAgentStreamResponse } from 'cairn/ui';

export function POST(): Response {
  const stream = streamAgent({
    model: createMockModel({ responses: [{ text: 'Hello' }] }),
    prompt: 'Say hello.',
  });
  // Subscribes before it returns: no event is lost, whatever the route does next.
  return toAgentStreamResponse(stream, { runId: 'demo' });
}

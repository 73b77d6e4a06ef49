import { runAgent } from 'cairn/agent';
import { createOpenAI } from 'cairn/openai';
import { createMockModel } from 'cairn/testing';

// A primary that is down: every request answers 503.
const primary = createOpenAI({
  apiKey: 'demo',
  fetch: async () => new Response('{"error":{"message":"unavailable"}}', { status: 503 }),
})('gpt-5.2');

const result = await runAgent({
  model: primary,
  fallbackModels: [createMockModel({ responses: [{ text: 'Answered by the fallback.' }] })],
  maxRetries: 0,
  prompt: 'Hello?',
});
console.log(result.status, result.text); // completed Answered by the fallback.

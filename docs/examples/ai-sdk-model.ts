import { createOpenAI } from '@ai-sdk/openai';
import { runAgent } from 'cairn/agent';
import { fromAISDK } from 'cairn/models';

// Every request gets the same short Chat Completions stream, so this runs offline.
const chunk = (delta: object, finish_reason: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 0, model: 'gpt-4o', choices: [{ index: 0, delta, finish_reason }] })}\n\n`;
const offlineFetch = async () => new Response(
  chunk({ role: 'assistant', content: 'Hello ' }) + chunk({ content: 'there.' }) + chunk({}, 'stop') + 'data: [DONE]\n\n',
  { headers: { 'content-type': 'text/event-stream' } },
);

const openai = createOpenAI({ apiKey: 'sk-offline-example', fetch: offlineFetch });
const result = await runAgent({ model: fromAISDK(openai.chat('gpt-4o')), prompt: 'Say hello.' });
console.log(result.status, result.text); // completed Hello there.

// A provider's transport limits end a call to a silent server: here a local
// server that takes every request and never answers.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runAgent } from 'cairn/agent';
import { createOpenAI } from 'cairn/openai';

let requests = 0;
const server = createServer(() => void requests++);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as AddressInfo;

const openai = createOpenAI({
  apiKey: 'sk-demo-key-000',
  baseURL: `http://127.0.0.1:${port}/v1`,
  timeouts: { firstByteMs: 1_000, stallMs: 5_000 }, // the defaults: 10 minutes and 5 minutes
});
const result = await runAgent({ model: openai('gpt-5.2'), prompt: 'Hello?', maxRetries: 1 });
if (result.status === 'failed') {
  // The attempt and its one retry each waited a second for headers that never came.
  console.log(result.error.code, result.retry?.cause, requests > 0); // transport_timeout timeout true
}

server.closeAllConnections();
server.close();

// A real MCP server over stdio, written with the SDK's server classes, for the tests, the bench and the docs example.
// Plain JavaScript so that a test starts it with `node` (no TypeScript loader, a few tens of ms).
//
// Environment:
//   MCP_EFFECTS  a file each effect appends one line to (fsync'd), so a test counts effects across processes
//   MCP_VARIANT  'v2' changes the description of add_note (a changed catalog on resume)
import { appendFileSync, closeSync, fsyncSync, openSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const effects = process.env.MCP_EFFECTS;
function effect(line) {
  if (!effects) return;
  const fd = openSync(effects, 'a');
  appendFileSync(fd, `${line}\n`);
  fsyncSync(fd);
  closeSync(fd);
}

const server = new McpServer({ name: 'notes', version: '1.0.0' });
const text = (value) => ({ content: [{ type: 'text', text: value }] });

server.registerTool('add_note', {
  description: process.env.MCP_VARIANT === 'v2' ? 'Add a note to the board (v2).' : 'Add a note to the board.',
  inputSchema: { text: z.string() },
}, async ({ text: note }) => {
  effect(`note ${note}`);
  return text(`noted: ${note}`);
});

server.registerTool('list_notes', {
  description: 'Count the notes on the board.',
  inputSchema: {},
  annotations: { readOnlyHint: true },
}, async () => text('the board has notes'));

server.registerTool('echo', {
  description: 'Return the text as it is.',
  inputSchema: { text: z.string() },
}, async ({ text: value }) => text(value));

// Writes its start, then never answers: the test kills the server (or the run) while the call is with it.
server.registerTool('charge', {
  description: 'Charge an order.',
  inputSchema: { order: z.string() },
}, async ({ order }) => {
  effect(`charge-started ${order} ${process.pid}`);
  return new Promise(() => undefined);
});

server.registerTool('weather', {
  description: 'The weather in a city.',
  inputSchema: { city: z.string() },
  outputSchema: { city: z.string(), celsius: z.number() },
}, async ({ city }) => {
  const structuredContent = { city, celsius: 21 };
  return { content: [{ type: 'text', text: JSON.stringify(structuredContent) }], structuredContent };
});

server.registerTool('fail', {
  description: 'Always fails.',
  inputSchema: {},
}, async () => ({ isError: true, content: [{ type: 'text', text: 'the printer is on fire' }] }));

// Adds a tool while the call runs: the SDK sends notifications/tools/list_changed before this call's answer.
server.registerTool('add_tool', {
  description: 'Add a tool to this server.',
  inputSchema: { name: z.string() },
}, async ({ name }) => {
  server.registerTool(name, { description: `A tool added at run time: ${name}.`, inputSchema: { text: z.string() } },
    async ({ text: value }) => {
      effect(`${name} ${value}`);
      return text(`${name}: ${value}`);
    });
  return text(`added ${name}`);
});

// Asks the client's model (sampling/createMessage) and answers with what it said.
server.registerTool('ask_model', {
  description: 'Ask the client model a question.',
  inputSchema: { question: z.string() },
}, async ({ question }) => {
  const answer = await server.server.createMessage({
    messages: [{ role: 'user', content: { type: 'text', text: question } }],
    systemPrompt: 'Answer in one word.',
    maxTokens: 50,
  });
  return text(`the model said: ${answer.content.type === 'text' ? answer.content.text : '?'}`);
});

await server.connect(new StdioServerTransport());

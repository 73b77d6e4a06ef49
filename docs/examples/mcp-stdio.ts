// A run whose tools come from an MCP server over stdio: test/mcp/servers/notes.mjs, a small server written with the
// SDK's McpServer (started from the repository's root, as `npm test` runs the examples). Needs no API key.
import { createInMemoryAgentRunStore, runAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();
const model = createMockModel({
  responses: [
    { toolCalls: [{ toolName: 'notes__add_note', args: { text: 'buy milk' } }] },
    { text: 'Noted.' },
  ],
});

const result = await runAgent({
  model,
  prompt: 'Remember to buy milk.',
  session: { store, runId: 'notes-1', scope: 'tenant-a' },
  mcp: {
    servers: [{ name: 'notes', transport: { type: 'stdio', command: process.execPath, args: ['test/mcp/servers/notes.mjs'] } }],
  },
});
console.log(result.status, result.text);

// Each of the server's tools is offered as <server>__<tool>.
console.log(model.calls[0]!.tools.map((tool) => tool.name).join(' '));

// The call went through the run's tool path: its receipt holds the raw MCP result and what the model saw.
const record = await store.load('notes-1');
const [receipt] = Object.values(record!.receipts);
console.log(receipt!.toolName, receipt!.status, `idempotent: ${receipt!.idempotent}`);
console.log(JSON.stringify(receipt!.rawResult), '->', receipt!.modelOutput);

// The servers' catalog is part of the binding: a resume whose servers list another one is refused.
console.log(record!.binding.mcp!.startsWith('sha256:'));

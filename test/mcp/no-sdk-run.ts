/**
 * For no-sdk.test.ts, with @modelcontextprotocol/sdk hidden (servers/hide-sdk.mjs): a run without mcp, then one with
 * it. Prints one JSON line: { plain: status, log: what was resolved by then, after: and after the second, withMcp }.
 */
import { readFileSync, existsSync } from 'node:fs';
import { runAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const log = process.env.HIDE_SDK_LOG!;
const plain = await runAgent({
  model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'local', args: {} }] }, { text: 'ok' }] }),
  prompt: 'x',
  tools: { local: { parameters: { type: 'object' }, execute: () => 'done' } },
});
const resolvedByThen = existsSync(log) ? readFileSync(log, 'utf8') : '';
const withMcp = await runAgent({
  model: createMockModel({ responses: [] }),
  prompt: 'x',
  mcp: { servers: [{ name: 'notes', transport: { type: 'stdio', command: process.execPath, args: ['test/mcp/servers/notes.mjs'] } }] },
});
console.log(JSON.stringify({
  plain: plain.status,
  log: resolvedByThen,
  after: existsSync(log) ? readFileSync(log, 'utf8') : '',
  withMcp: withMcp.status === 'failed' ? { status: withMcp.status, code: withMcp.error.code, message: withMcp.error.message } : { status: withMcp.status },
}));

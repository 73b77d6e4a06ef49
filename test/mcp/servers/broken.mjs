// A stdio "server" that breaks the protocol on purpose, without the SDK (what it sends is not MCP).
//
// MCP_BROKEN:
//   text       answers every line with text that is not JSON
//   jsonrpc    answers initialize with a result that is not an InitializeResult
//   silent     reads everything and never answers
//   exit       writes to stderr and exits with code 3 at once
//   hang-list  makes the handshake, then never answers tools/list
//   hang-call  makes the handshake and lists one tool, then never answers tools/call
// MCP_IDEMPOTENT=1 marks that tool idempotentHint.
import { createInterface } from 'node:readline';

const mode = process.env.MCP_BROKEN ?? 'text';
if (mode === 'exit') {
  process.stderr.write('broken server: no configuration found\n');
  process.exit(3);
}
const wait = {
  name: 'wait', description: 'Never answers.', inputSchema: { type: 'object', properties: {} },
  ...(process.env.MCP_IDEMPOTENT === '1' ? { annotations: { idempotentHint: true } } : {}),
};
const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  if (mode === 'text') {
    process.stdout.write('hello, this is not JSON-RPC\n');
    return;
  }
  if (mode === 'silent' || message.id === undefined) return;
  if (message.method === 'initialize') {
    if (mode === 'jsonrpc') {
      send({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: 42, serverInfo: 'nobody' } });
      return;
    }
    send({
      jsonrpc: '2.0', id: message.id,
      result: { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'broken', version: '1.0.0' } },
    });
    return;
  }
  if (message.method === 'tools/list') {
    if (mode === 'hang-list') return;
    send({
      jsonrpc: '2.0', id: message.id,
      result: { tools: [wait] },
    });
    return;
  }
  // tools/call and anything else: never answered.
});
lines.on('close', () => process.exit(0));

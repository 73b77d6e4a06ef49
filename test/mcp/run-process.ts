/**
 * A run in its own process for the crash test (interrupted.test.ts): a SQLite
 * store, the stdio notes server, and a model that calls `notes__charge`,
 * which never answers. The test SIGKILLs this process while the call is with
 * the server. Argument: JSON { path, runId, effects, server }.
 */
import { runAgent } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel } from 'cairn/testing';

const args = JSON.parse(process.argv[2]!) as { path: string; runId: string; effects: string; server: string };
const ops = createSqliteOpsStore({ path: args.path });
await runAgent({
  model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'notes__charge', args: { order: 'o-1' }, toolCallId: 'c1' }] }, { text: 'Charged.' }] }),
  prompt: 'Charge order o-1.',
  session: { store: ops.agentRuns, runId: args.runId, scope: 't' },
  mcp: { servers: [{ name: 'notes', transport: { type: 'stdio', command: process.execPath, args: [args.server], env: { MCP_EFFECTS: args.effects } } }] },
});
// Never reached in the test: the call never answers.
console.log('ended');

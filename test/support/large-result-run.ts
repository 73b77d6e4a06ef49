/**
 * Run in a child process by test/runtime/large-result.test.ts, so that its
 * peak RSS is the run's own: one model step calls two tools at once, each
 * returning `size` bytes (a flat string, or pages of 1 MB strings), and both
 * are over maxReceiptBytes. Prints one JSON line: the peak RSS before the run
 * and after it, the receipts as the SQLite store loads them back, and the
 * store file's size.
 *
 *   tsx test/support/large-result-run.ts <string|pages> <size> <dir>
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { runAgent, type AgentTool } from '../../src/agent/index.js';
import { createSqliteOpsStore } from '../../src/ops/sqlite/index.js';
import { createMockModel } from '../../src/testing/index.js';

const [shape = 'string', sizeArg = '50000000', dir = '.'] = process.argv.slice(2);
const size = Number(sizeArg);
const peakRss = () => process.resourceUsage().maxRSS * 1024;

/** A flat one-byte string of n characters, made without a second copy ('x'.repeat is a rope until read). */
function flat(n: number, fill: string): string {
  const text = fill.repeat(n);
  text.charCodeAt(n - 1);
  return text;
}

function result(seed: string): unknown {
  if (shape === 'string') return flat(size, seed);
  // Pages each under the limit, together over it: the check has to add them up.
  const page = 1_000_000;
  return { pages: Array.from({ length: Math.ceil(size / page) }, (_, i) => flat(page, String.fromCharCode(97 + ((seed.charCodeAt(0) + i) % 26)))) };
}

const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
const tool = (seed: string): AgentTool => ({ parameters: { type: 'object', properties: {} }, execute: () => result(seed) });
const tools = { exportA: tool('a'), exportB: tool('b') };

const options = (runId: string, toolCalls: boolean) => ({
  model: createMockModel({
    strict: false,
    responses: [(r: { messages: Array<{ role: string }> }) => (!toolCalls || r.messages.some((m) => m.role === 'tool')
      ? { text: 'Done.' }
      : { toolCalls: [{ toolName: 'exportA', toolCallId: 'a', args: {} }, { toolName: 'exportB', toolCallId: 'b', args: {} }] })],
  }),
  prompt: 'Export everything.',
  tools,
  session: { store: ops.agentRuns, runId, scope: 's' },
});

// A first run without tool calls loads and warms every module the measured run uses.
await runAgent(options('warm-up', false));
global.gc?.();
const before = peakRss();
const run = await runAgent(options('big', true));
const after = peakRss();

const stored = await ops.agentRuns.load('big', { scope: 's' });
const receipts = Object.values(stored?.receipts ?? {}).map((r) => ({
  status: r.status, code: r.error?.code, name: r.error?.name, message: r.error?.message, hasRawResult: 'rawResult' in r,
}));
ops.close();
console.log(JSON.stringify({
  status: run.status, warnings: run.warnings.map((w) => w.setting), before, after, receipts,
  fileBytes: statSync(join(dir, 'runs.sqlite')).size,
}));

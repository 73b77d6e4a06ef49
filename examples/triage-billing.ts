// A triage agent hands the conversation to a billing agent, whose refund tool lives on an MCP
// server and needs a person's approval. No API key: `npx tsx examples/triage-billing.ts`.
//
// The run goes through three processes on one SQLite file, as it would on a real deployment:
//   1. the first one starts the run: triage hands off to billing, billing asks to refund, and the
//      run suspends for approval (the process ends);
//   2. the second one approves and resumes: the refund call reaches the payment server, and the
//      process is killed (SIGKILL) while the server has the call;
//   3. the third one resumes the run: billing (not triage) goes on, and the refund, which the server
//      marks idempotent and keys by order, is not made twice.
// The payment server counts its refunds in a file, so the count below is the server's own.
//
// The same file is the payment server (`... server <ledger>`) and each process of the run (`... leg <name> <dir>`).
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [role, ...rest] = process.argv.slice(2);
const self = fileURLToPath(import.meta.url);
// Node with the loader this process runs under (tsx), so each child runs this TypeScript file too.
const node = (args: string[]) => [...process.execArgv, self, ...args];

if (role === 'server') await paymentServer(rest[0]!);
else if (role === 'leg') await leg(rest[0] as 'start' | 'approve' | 'resume', rest[1]!);
else await main();

/** The payment system's MCP server, written with the SDK's server classes, over stdio. */
async function paymentServer(ledger: string): Promise<void> {
  const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const { z } = await import('zod');
  const refunded = () => (existsSync(ledger) ? readFileSync(ledger, 'utf8').split('\n').filter(Boolean) : []);
  const server = new McpServer({ name: 'payments', version: '1.0.0' });
  server.registerTool('issue_refund', {
    description: 'Refund an order in full.',
    inputSchema: { order: z.string() },
    // Keyed by order: a second refund of the same order changes nothing, so a cut-off call may run again.
    annotations: { idempotentHint: true },
  }, async ({ order }) => {
    if (refunded().includes(order)) return { content: [{ type: 'text' as const, text: `Order ${order} was already refunded.` }] };
    appendFileSync(ledger, `${order}\n`);
    // A slow payment processor: the call stays with the server until someone kills the run's process.
    if (process.env.PAYMENTS_SLOW === '1') await new Promise(() => undefined);
    return { content: [{ type: 'text' as const, text: `Refunded order ${order}.` }] };
  });
  await server.connect(new StdioServerTransport());
}

/** One process of the run: the same agents each time, built from code, as any deployment would. */
async function leg(name: 'start' | 'approve' | 'resume', dir: string): Promise<void> {
  const { Agent } = await import('cairn');
  const { resumeAgent, runAgent } = await import('cairn/agent');
  const { createSqliteOpsStore } = await import('cairn/ops/sqlite');
  const { createMockModel } = await import('cairn/testing');
  type Request = { messages: readonly { role: string; toolName?: string }[] };

  const billing = new Agent({
    name: 'billing',
    handoffDescription: 'Refunds, invoices and payments.',
    instructions: 'You are billing. Refund orders with the payments tool.',
    // A stand-in for a real model: it reads the conversation it is sent.
    model: createMockModel({
      modelId: 'billing', strict: false, responses: [(request: Request) => (request.messages.at(-1)?.toolName === 'payments__issue_refund'
        ? { text: 'Order o-1 is refunded.' }
        : { toolCalls: [{ toolCallId: 'refund-1', toolName: 'payments__issue_refund', args: { order: 'o-1' } }] })],
    }),
    mcp: {
      servers: [{
        name: 'payments',
        transport: { type: 'stdio', command: process.execPath, args: node(['server', join(dir, 'refunds.log')]), env: name === 'approve' ? { PAYMENTS_SLOW: '1' } : {} },
        needsApproval: ['issue_refund'],
      }],
    },
  });
  const triage = {
    name: 'triage',
    instructions: 'You are triage. Hand billing questions to billing.',
    model: createMockModel({ modelId: 'triage', strict: false, responses: [{ toolCalls: [{ toolCallId: 'handoff-1', toolName: 'transfer_to_billing', args: {} }] }] }),
    prompt: 'Please refund my order o-1.',
    handoffs: [billing],
  };
  const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
  const session = { store: ops.agentRuns, runId: 'refund-o-1', scope: 'shop' };
  try {
    if (name === 'start') {
      const result = await runAgent({ ...triage, session });
      const [pending] = result.status === 'suspended' ? result.pendingApprovals : [];
      console.log(`process 1: ${result.status}; ${(await ops.agentRuns.load(session.runId, { scope: session.scope }))?.activeAgent} asks to run ${pending?.toolName} ${JSON.stringify(pending?.args)}`);
    } else if (name === 'approve') {
      // A person approved the pending call: its id and token are in the record.
      const record = await ops.agentRuns.load(session.runId, { scope: session.scope });
      const [pending] = record!.pendingApprovals;
      await resumeAgent({ ...triage, session, approvalResponses: [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }] });
    } else {
      const result = await resumeAgent({ ...triage, session });
      const record = (await ops.agentRuns.load(session.runId, { scope: session.scope }))!;
      console.log(`process 3: ${result.status}: ${result.text}`);
      console.log(`active agent: ${record.activeAgent}`);
      for (const receipt of Object.values(record.receipts)) {
        const answer = typeof receipt.modelOutput === 'string' ? `: ${receipt.modelOutput}` : '';
        console.log(`receipt: ${receipt.toolName} ${receipt.status}${receipt.idempotent ? ' (idempotent)' : ''}${answer}`);
      }
    }
  } finally {
    ops.close();
  }
}

/** Runs a leg in its own process; resolves with how it ended. */
function run(name: string, dir: string, kill?: () => boolean): Promise<string> {
  const child = spawn(process.execPath, node(['leg', name, dir]), { stdio: ['ignore', 'inherit', 'inherit'] });
  const timer = kill ? setInterval(() => { if (kill()) child.kill('SIGKILL'); }, 20) : undefined;
  return new Promise((resolve) => child.on('exit', (code, signal) => {
    clearInterval(timer);
    resolve(signal ?? `exit ${code}`);
  }));
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'triage-billing-'));
  const ledger = join(dir, 'refunds.log');
  const refunds = () => (existsSync(ledger) ? readFileSync(ledger, 'utf8').split('\n').filter(Boolean) : []);
  try {
    await run('start', dir);
    // Killed once the payment server has the refund: the run's process never learns how the call ended.
    const ended = await run('approve', dir, () => refunds().length > 0);
    console.log(`process 2: approved, then killed (${ended}) while the payment server had the refund`);
    await run('resume', dir);
    console.log(`refunds the payment server made: ${refunds().length}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

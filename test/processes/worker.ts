/**
 * One executor process for the multi-process tests. It opens the shared
 * store (SQLite file or PostgreSQL schema), runs or resumes the run with a
 * lease, and prints one JSON line with its result. Its tool appends to a
 * ledger file (fsync'd) that outlives the process. Faults on request:
 * SIGKILL itself right after the `executing` receipt is durable, or right
 * before it is written.
 */
import { appendFileSync, closeSync, fsyncSync, openSync } from 'node:fs';
import { resumeAgent, runAgent, type AgentRunEnvelope, type AgentRunStore, type LeaseProvider } from 'cairn/agent';
import { createMockModel, type MockTurn } from 'cairn/testing';

export interface WorkerArgs {
  backend: 'sqlite' | 'postgres';
  path?: string;
  url?: string;
  schema?: string;
  runId: string;
  mode: 'run' | 'resume';
  owner: string;
  ttlMs: number;
  ledger: string;
  /** Every successful save appends `revision owner` here. */
  revisions: string;
  approve?: { approvalId: string; token: string }[];
  reconcile?: { toolCallId: string; output: string }[];
  retry?: string[];
  kill?: 'after-executing-receipt' | 'before-executing-receipt';
  /** Let the tool wait this long (ms) before its effect. */
  toolDelayMs?: number;
}

function appendDurably(file: string, line: string) {
  appendFileSync(file, `${line}\n`);
  const fd = openSync(file, 'r');
  fsyncSync(fd);
  closeSync(fd);
}

async function open(args: WorkerArgs): Promise<{ store: AgentRunStore; leases: LeaseProvider; close(): Promise<void> | void }> {
  if (args.backend === 'sqlite') {
    const { createSqliteOpsStore } = await import('cairn/ops/sqlite');
    const ops = createSqliteOpsStore({ path: args.path! });
    return { store: ops.agentRuns, leases: ops.leases, close: () => ops.close() };
  }
  const { createPostgresOpsStore } = await import('cairn/ops/postgres');
  const ops = createPostgresOpsStore({ connectionString: args.url! }, { schema: args.schema });
  // Safe from many processes at once: setup takes an advisory lock.
  await ops.setup();
  return { store: ops.agentRuns, leases: ops.leases, close: () => ops.close() };
}

const script = (request: { messages: { role: string }[] }): MockTurn =>
  request.messages.some((m) => m.role === 'tool')
    ? { text: 'Charged order 7.' }
    : { toolCalls: [{ toolName: 'charge', args: { order: 7 }, toolCallId: 'c1' }] };

async function main() {
  const args = JSON.parse(process.argv[2]!) as WorkerArgs;
  const opened = await open(args);
  const inner = opened.store;
  const store: AgentRunStore = {
    load: (id, o) => inner.load(id, o),
    async save(envelope: AgentRunEnvelope, options) {
      const executing = Object.values(envelope.receipts).some((r) => r.status === 'executing');
      if (executing && args.kill === 'before-executing-receipt') process.kill(process.pid, 'SIGKILL');
      await inner.save(envelope, options);
      appendDurably(args.revisions, `${envelope.revision} ${args.owner}`);
    },
  };
  const options = {
    model: createMockModel({ strict: false, responses: [script] }),
    prompt: 'Charge order 7.',
    bindingId: 'process-test-v1',
    session: { store, runId: args.runId, scope: 'tenant-a' },
    lease: { provider: opened.leases, owner: args.owner, ttlMs: args.ttlMs },
    tools: {
      charge: {
        parameters: { type: 'object' as const },
        needsApproval: true,
        execute: async () => {
          // The executing receipt is durable before execute is called.
          if (args.kill === 'after-executing-receipt') process.kill(process.pid, 'SIGKILL');
          if (args.toolDelayMs) await new Promise((r) => setTimeout(r, args.toolDelayMs));
          appendDurably(args.ledger, `charge ${args.owner}`);
          return 'charged';
        },
      },
    },
  };
  const result = args.mode === 'run'
    ? await runAgent(options)
    : await resumeAgent({
      ...options,
      approvalResponses: (args.approve ?? []).map((a) => ({ ...a, approved: true })),
      reconciledToolResults: args.reconcile,
      retryToolCallIds: args.retry,
    });
  process.stdout.write(`${JSON.stringify(result)}\n`);
  await opened.close();
}

main().catch((error) => {
  process.stdout.write(`${JSON.stringify({ status: 'crashed', error: String(error?.stack ?? error) })}\n`);
  process.exit(1);
});

/**
 * One executor process for the multi-process tests. It opens the shared
 * store (SQLite file or PostgreSQL schema), runs or resumes the run with a
 * lease, and prints one JSON line with its result. Its tool appends to a
 * ledger file (fsync'd) that outlives the process. Faults on request:
 * SIGKILL itself right after the `executing` receipt is durable, or right
 * before it is written. And a pause on request: before the first save of a
 * given kind it prints a `saving` event line and waits for a line on stdin,
 * so the parent can set a trap for that save (see pg-terminate.test.ts).
 * A save the store refuses prints a `save-failed` event line with the error.
 */
import { appendFileSync, closeSync, fsyncSync, openSync } from 'node:fs';
import { CairnError, resumeAgent, runAgent, type AgentRunEnvelope, type AgentRunStore, type LeaseProvider } from 'cairn/agent';
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
  /**
   * Before the first save whose envelope holds an `executing` receipt, an
   * `executed` one, or a tool message in its transcript, print
   * `{"event":"saving",...}` and wait for a line on stdin.
   */
  pauseBeforeSave?: PauseAt;
}

export type PauseAt = 'executing' | 'executed' | 'tool-message';

/** The line the worker prints when it pauses before a save. */
export interface SavingEvent {
  event: 'saving';
  revision: number;
  receiptKeys: string[];
}

/** The line the worker prints when the store's save throws. */
export interface SaveFailedEvent {
  event: 'save-failed';
  revision: number;
  /** Whether the store threw a Cairn error (CairnError.isInstance). */
  typed: boolean;
  name: string;
  code: string;
  fault: string;
  message: string;
}

function matches(at: PauseAt, envelope: AgentRunEnvelope): boolean {
  if (at === 'tool-message') {
    const messages = (envelope.snapshot as { context?: { messages?: { role?: string }[] } } | null)?.context?.messages ?? [];
    return messages.some((m) => m.role === 'tool');
  }
  return Object.values(envelope.receipts).some((r) => r.status === at);
}

/** Resolves at the first line (or the end) of stdin. */
function nextStdinLine(): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      process.stdin.off('data', onData);
      process.stdin.off('end', done);
      process.stdin.pause();
      resolve();
    };
    let buffered = '';
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      if (buffered.includes('\n')) done();
    };
    process.stdin.on('data', onData);
    process.stdin.on('end', done);
  });
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
  // The application name lets a test find this worker's backends in pg_stat_activity.
  const ops = createPostgresOpsStore(
    { connectionString: args.url!, poolOptions: { application_name: `cairn-worker-${args.owner}` } },
    { schema: args.schema },
  );
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
  let paused = false;
  const store: AgentRunStore = {
    load: (id, o) => inner.load(id, o),
    async save(envelope: AgentRunEnvelope, options) {
      const executing = Object.values(envelope.receipts).some((r) => r.status === 'executing');
      if (executing && args.kill === 'before-executing-receipt') process.kill(process.pid, 'SIGKILL');
      if (args.pauseBeforeSave && !paused && matches(args.pauseBeforeSave, envelope)) {
        paused = true;
        const event: SavingEvent = { event: 'saving', revision: envelope.revision, receiptKeys: Object.values(envelope.receipts).map((r) => r.key) };
        process.stdout.write(`${JSON.stringify(event)}\n`);
        await nextStdinLine();
      }
      try {
        await inner.save(envelope, options);
      } catch (error) {
        // What the store itself threw, before the runtime wraps it.
        const e = error as { name?: unknown; code?: unknown; fault?: unknown; message?: unknown };
        const event: SaveFailedEvent = {
          event: 'save-failed', revision: envelope.revision, typed: CairnError.isInstance(error),
          name: String(e?.name), code: String(e?.code), fault: String(e?.fault), message: String(e?.message),
        };
        process.stdout.write(`${JSON.stringify(event)}\n`);
        throw error;
      }
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
        // A projection makes the run record the raw result (`executed`) in a save of its own before the step's
        // checkpoint, so a test can cut the run between the effect and its answer.
        toModelOutput: (result: string) => `${result} (order 7)`,
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

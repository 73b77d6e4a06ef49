/**
 * One worker process of the shared-budget test: it opens the shared store
 * (SQLite file or PostgreSQL schema), and runs (or, when the run has a
 * record, resumes) each run it is given at once, every one under its own
 * child of a root context whose ledger is the store's `budgets.ledger`. Its
 * scripted models log each call they answer to a file (fsync'd), and it
 * SIGKILLs itself on request in the middle of a model call or before a save.
 * It prints one JSON line per run that came to rest.
 */
import { appendFileSync, closeSync, fsyncSync, openSync } from 'node:fs';
import { resumeAgent, runAgent, type AgentRunStore, type LeaseProvider } from 'cairn/agent';
import type { LanguageModel, ModelRequest } from 'cairn/models';
import { createExecutionContext, type BudgetLedger, type PriceTable } from 'cairn/policy';
import { createMockModel, type MockTurn } from 'cairn/testing';

export interface BudgetRun {
  runId: string;
  /** `provider:modelId` of its model (`mock:<modelId>`). */
  model: string;
  /** Usage of each of its model turns: every turn but the last calls the tool. */
  turns: { inputTokens: number; outputTokens: number }[];
}

export interface BudgetWorkerArgs {
  backend: 'sqlite' | 'postgres';
  path?: string;
  url?: string;
  schema?: string;
  owner: string;
  runs: BudgetRun[];
  ceilingUsd: number;
  prices: PriceTable;
  estimate: { inputTokens: number; outputTokens: number };
  ttlMs: number;
  /** Every call a model starts appends `start <runId> <step> <owner>`, every one it answers `answer <runId> <step> <tokens> <owner>`. */
  calls: string;
  /** SIGKILL this process during this call (after its `start` line), or before this save of the run. */
  kill?: { runId: string; at: 'model-call'; step: number } | { runId: string; at: 'save'; nth: number };
}

/** What the worker prints for a run that came to rest. */
export interface BudgetRunLine {
  runId: string;
  status: string;
  reason?: string;
  error?: { code?: string };
  accounting?: { committed: { usd: number; tokens: number }; reserved: { usd: number; tokens: number }; unknown: { usd: number; tokens: number } };
}

function appendDurably(file: string, line: string) {
  appendFileSync(file, `${line}\n`);
  const fd = openSync(file, 'r');
  fsyncSync(fd);
  closeSync(fd);
}

async function open(args: BudgetWorkerArgs): Promise<{ store: AgentRunStore; leases: LeaseProvider; ledger: BudgetLedger; close(): Promise<void> | void }> {
  if (args.backend === 'sqlite') {
    const { createSqliteOpsStore } = await import('cairn/ops/sqlite');
    const ops = createSqliteOpsStore({ path: args.path!, busyTimeoutMs: 10_000 });
    return { store: ops.agentRuns, leases: ops.leases, ledger: ops.budgets.ledger('shared'), close: () => ops.close() };
  }
  const { createPostgresOpsStore } = await import('cairn/ops/postgres');
  const ops = createPostgresOpsStore({ connectionString: args.url! }, { schema: args.schema });
  await ops.setup();
  return { store: ops.agentRuns, leases: ops.leases, ledger: ops.budgets.ledger('shared'), close: () => ops.close() };
}

/** The run's scripted model: the turn it answers is the number of assistant turns in the request. */
function modelOf(args: BudgetWorkerArgs, run: BudgetRun): LanguageModel {
  const step = (request: ModelRequest) => request.messages.filter((m) => m.role === 'assistant').length;
  const script = (request: ModelRequest): MockTurn => {
    const n = step(request);
    const usage = run.turns[Math.min(n, run.turns.length - 1)]!;
    return n < run.turns.length - 1
      ? { toolCalls: [{ toolName: 'note', args: { n }, toolCallId: `c${n}` }], usage }
      : { text: `Done after ${n + 1} turns.`, usage };
  };
  const inner = createMockModel({ strict: false, modelId: run.model.slice('mock:'.length), responses: [script] });
  return {
    specificationVersion: inner.specificationVersion,
    provider: inner.provider,
    modelId: inner.modelId,
    async doGenerate(request) {
      const n = step(request);
      appendDurably(args.calls, `start ${run.runId} ${n} ${args.owner}`);
      const kill = args.kill;
      if (kill?.at === 'model-call' && kill.runId === run.runId && kill.step === n) {
        // Mid-call: the reservation is in the ledger, the answer never comes.
        await new Promise((r) => setTimeout(r, 20));
        process.kill(process.pid, 'SIGKILL');
      }
      const response = await inner.doGenerate(request);
      const usage = run.turns[Math.min(n, run.turns.length - 1)]!;
      appendDurably(args.calls, `answer ${run.runId} ${n} ${usage.inputTokens + usage.outputTokens} ${args.owner}`);
      return response;
    },
  } as LanguageModel;
}

async function main() {
  const args = JSON.parse(process.argv[2]!) as BudgetWorkerArgs;
  const opened = await open(args);
  const root = createExecutionContext({
    ledger: opened.ledger, prices: args.prices, budget: { usd: args.ceilingUsd, estimate: args.estimate },
  });
  await Promise.all(args.runs.map(async (run) => {
    let saves = 0;
    const store: AgentRunStore = {
      load: (id, o) => opened.store.load(id, o),
      async save(envelope, options) {
        saves += 1;
        const kill = args.kill;
        if (kill?.at === 'save' && kill.runId === run.runId && kill.nth === saves) process.kill(process.pid, 'SIGKILL');
        await opened.store.save(envelope, options);
      },
    };
    const options = {
      model: modelOf(args, run),
      prompt: `Take notes for ${run.runId}.`,
      bindingId: 'budget-test-v1',
      // Each run spends under a context of its own, so its record holds only its slice of the shared ledger.
      execution: root.child({ name: run.runId }),
      session: { store, runId: run.runId, scope: 'tenant-a' },
      lease: { provider: opened.leases, owner: args.owner, ttlMs: args.ttlMs },
      tools: { note: { parameters: { type: 'object' as const }, replay: 'idempotent' as const, execute: async () => 'noted' } },
    };
    const stored = await opened.store.load(run.runId);
    const result = stored ? await resumeAgent(options) : await runAgent(options);
    const line: BudgetRunLine = {
      runId: run.runId,
      status: result.status,
      ...('reason' in result && result.reason ? { reason: String(result.reason) } : {}),
      ...(result.status === 'failed' ? { error: { code: (result.error as { code?: string }).code } } : {}),
      ...(result.accounting ? { accounting: result.accounting as BudgetRunLine['accounting'] } : {}),
    };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  }));
  await opened.close();
}

main().catch((error) => {
  process.stdout.write(`${JSON.stringify({ runId: '*', status: 'crashed', error: String(error?.stack ?? error) })}\n`);
  process.exit(1);
});

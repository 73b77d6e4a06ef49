/**
 * `cairn worker`: one worker process on the PostgreSQL work queue, driving
 * the runs of the agents a module exports, until SIGTERM or SIGINT drains it
 * (no new job, the steps in flight finish, the runs are handed back to the
 * queue, the leases given back) and it exits 0.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createPostgresOpsStore } from '../ops/postgres/index.js';
import { createWorker, type WorkerAgent, type WorkerEvent } from '../worker/index.js';
import { atMost, flag, parse, positiveInt, str, UsageError, wholeNumber, type OptionSpecs } from './args.js';
import type { Io } from './context.js';

export const WORKER_HELP = `Usage: cairn worker --store <postgres-url> --agents <module> [options]

Works runs from the PostgreSQL work queue until SIGTERM or SIGINT, which
drains it: it takes no new job, lets the steps in flight finish, puts each
run it drove back on the queue for another worker, gives the leases back and
exits 0. Put runs on the queue with enqueueRun / enqueueResume (cairn/worker).

Options:
  --store <url>        postgres://... : the ops store (runs, leases) and the queue
  --agents <module>    an ES module exporting \`agents\` (or a default export):
                       { name: (job) => runAgent options without session/prompt }
  --concurrency <n>    jobs worked at once (default 4)
  --schema <name>      the queue's schema (default cairn_worker)
  --ops-schema <name>  the ops store's schema (default public)
  --lease-ttl <ms>     the run lease's time to live (default 30000)
  --json               print each worker event as a JSON line
  -h, --help           show this help
`;

const OPTIONS = {
  store: { type: 'string' },
  agents: { type: 'string' },
  concurrency: { type: 'string' },
  schema: { type: 'string' },
  'ops-schema': { type: 'string' },
  'lease-ttl': { type: 'string' },
  json: { type: 'boolean' },
} as const satisfies OptionSpecs;

/** The `--store` of the worker commands: a PostgreSQL URL. */
export function postgresStore(value: string | undefined, command: string): string {
  if (value === undefined) throw new UsageError(`cairn ${command} needs --store postgres://user@host:5432/db (the queue lives in PostgreSQL).`);
  if (!/^postgres(ql)?:\/\//.test(value)) {
    throw new UsageError(`cairn ${command} --store takes a postgres:// URL (the work queue lives in PostgreSQL), got ${JSON.stringify(value.replace(/\/\/[^@/]*@/, '//***@'))}.`);
  }
  return value;
}

interface AgentsModule {
  agents: Record<string, WorkerAgent>;
  close?: () => unknown;
}

async function loadAgents(path: string, cwd: string): Promise<AgentsModule> {
  const abs = resolve(cwd, path);
  let isFile = false;
  try {
    isFile = statSync(abs).isFile();
  } catch {
    // reported below
  }
  if (!isFile) throw new UsageError(`--agents ${path}: no such file (an ES module exporting \`agents\`).`);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(abs).href)) as Record<string, unknown>;
  } catch (error) {
    throw new UsageError(`--agents ${path}: the module failed to load: ${error instanceof Error ? error.message : String(error)}`);
  }
  const agents = mod.agents ?? mod.default;
  if (agents === null || typeof agents !== 'object' || Array.isArray(agents) || Object.values(agents).some((a) => typeof a !== 'function')) {
    throw new UsageError(`--agents ${path}: export the agents as \`export const agents = { name: (job) => ({ model, tools }) }\` or as the default export.`);
  }
  return { agents: agents as Record<string, WorkerAgent>, ...(typeof mod.close === 'function' ? { close: mod.close as () => unknown } : {}) };
}

function describe(event: WorkerEvent): string | undefined {
  if (event.type === 'job-end') {
    const what = `job ${event.jobId}${event.runId ? ` ${event.kind} ${event.runId}` : ''}${event.agent ? ` (${event.agent})` : ''}`;
    if (event.outcome === 'done') return `${what}: ${event.status}`;
    if (event.outcome === 'skipped') return `${what}: nothing to do`;
    if (event.outcome === 'handover') return `${what}: handed back to the queue`;
    return `${what}: ${event.outcome} (${event.code}) ${event.message ?? ''}`.trimEnd();
  }
  if (event.type === 'unlocked') return `handed back the jobs of stopped workers ${event.workerIds.join(', ')}`;
  if (event.type === 'error') return `error: ${event.message}`;
  return undefined;
}

export async function workerCommand(argv: string[], io: Io): Promise<number> {
  const parsed = parse(argv, OPTIONS);
  if (flag(parsed, 'help')) {
    io.stdout.write(WORKER_HELP);
    return 0;
  }
  atMost(parsed, 0, 'worker');
  const url = postgresStore(str(parsed, 'store'), 'worker');
  const agentsPath = str(parsed, 'agents');
  if (agentsPath === undefined) throw new UsageError('cairn worker needs --agents <module>: the agents it runs, by name.');
  const concurrency = positiveInt('concurrency', str(parsed, 'concurrency'), 1000) ?? 4;
  const leaseTtlMs = wholeNumber('lease-ttl', str(parsed, 'lease-ttl'), 30, 86_400_000, 'milliseconds') ?? 30_000;
  const json = flag(parsed, 'json');
  const { agents, close } = await loadAgents(agentsPath, io.cwd);

  const ops = createPostgresOpsStore({ connectionString: url }, { schema: str(parsed, 'ops-schema') ?? 'public' });
  try {
    await ops.setup();
    const worker = await createWorker({
      connectionString: url,
      ...(str(parsed, 'schema') !== undefined ? { schema: str(parsed, 'schema')! } : {}),
      ops, agents, concurrency, leaseTtlMs,
      // graphile-worker's info lines (a crontab it does not find, each job it completes) are noise here.
      log: (level, message) => {
        if (level !== 'info') io.stderr.write(`cairn worker: [queue ${level}] ${message}\n`);
      },
      onEvent: (event) => {
        if (json) io.stdout.write(`${JSON.stringify(event)}\n`);
        else {
          const line = describe(event);
          if (line) io.stdout.write(`${line}\n`);
        }
      },
    });
    const names = Object.keys(agents).join(', ') || '(none)';
    if (json) io.stdout.write(`${JSON.stringify({ type: 'worker-start', workerId: worker.workerId, agents: Object.keys(agents), concurrency })}\n`);
    else io.stdout.write(`worker ${worker.workerId}: agents ${names}; ${concurrency} at a time. SIGTERM or Ctrl-C drains it.\n`);
    let draining = false;
    // A second signal (a supervisor that repeats SIGTERM) does not cut the drain short.
    const stop = () => {
      if (!json) io.stdout.write(draining ? 'still draining.\n' : 'draining: no new jobs; the runs in flight stop at their next step and go back on the queue.\n');
      draining = true;
      void worker.drain();
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    try {
      await worker.done;
    } finally {
      process.removeListener('SIGTERM', stop);
      process.removeListener('SIGINT', stop);
    }
    if (json) io.stdout.write(`${JSON.stringify({ type: 'worker-stop', workerId: worker.workerId })}\n`);
    else io.stdout.write('drained.\n');
    return 0;
  } finally {
    await ops.close();
    await close?.();
  }
}

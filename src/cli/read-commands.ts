/**
 * `cairn inspect` and `cairn runs`: open the store read-only, so they never
 * write it, never create it or anything beside it, and work on a store the
 * user cannot write.
 */
import { existsSync } from 'node:fs';
import type { AgentRunStatus } from '../agent/types.js';
import { DEFAULT_HEADLESS_SCOPE, exitCodeFor, inspectRun } from '../headless/index.js';
import { atMost, checkId, flag, parse, positiveInt, str, strs, UsageError, type OptionSpecs } from './args.js';
import { connectionOf } from '../stores/sqlite/index.js';
import { DEFAULT_STORE, openStoreReadOnly, printJson, storeLocation, type Io } from './context.js';
import { storeHolding, v3StoreOf } from '../v3/sqlite-read.js';
import { listLimit } from '../stores/list-query.js';
import type { AgentRunSummary } from '../stores/types.js';
import { INSPECT_HELP, RUNS_HELP } from './help.js';
import { readRunMeta } from './run-meta.js';
import { formatReport } from './summary.js';

const INSPECT_OPTIONS = { store: { type: 'string' }, json: { type: 'boolean' } } as const satisfies OptionSpecs;
const RUNS_OPTIONS = {
  status: { type: 'string', multiple: true },
  limit: { type: 'string' },
  store: { type: 'string' },
  json: { type: 'boolean' },
} as const satisfies OptionSpecs;

const STATUSES: readonly AgentRunStatus[] = ['running', 'suspended', 'drained', 'completed', 'stopped', 'failed'];

export async function inspectCommand(argv: string[], io: Io): Promise<number> {
  const parsed = parse(argv, INSPECT_OPTIONS);
  if (flag(parsed, 'help')) {
    io.stdout.write(INSPECT_HELP);
    return 0;
  }
  atMost(parsed, 1, 'inspect');
  const runId = parsed.positionals[0];
  if (runId === undefined) throw new UsageError('cairn inspect needs the run id: cairn inspect <runId>.');
  checkId('The run id', runId);
  const given = str(parsed, 'store');
  const location = storeLocation(given, io.cwd);
  const ops = openStoreReadOnly(location, given);
  try {
    const scope = readRunMeta(connectionOf(ops), runId)?.scope ?? DEFAULT_HEADLESS_SCOPE;
    // The run is in the ops run store or in the V3 store of the same file.
    const store = await storeHolding(ops, runId);
    if (store === undefined) throw new UsageError(`There is no run ${runId} in ${given ?? 'the store'}.`);
    const report = await inspectRun(store, runId, { scope });
    if (flag(parsed, 'json')) printJson(io, report);
    else io.stdout.write(formatReport(report, location.ctx));
    return exitCodeFor(report);
  } finally {
    ops.close();
  }
}

const pad = (text: string, width: number) => text.padEnd(width);

export async function runsCommand(argv: string[], io: Io): Promise<number> {
  const parsed = parse(argv, RUNS_OPTIONS);
  if (flag(parsed, 'help')) {
    io.stdout.write(RUNS_HELP);
    return 0;
  }
  atMost(parsed, 0, 'runs');
  const status = strs(parsed, 'status').flatMap((s) => s.split(',')).map((s) => {
    if (!STATUSES.includes(s as AgentRunStatus)) {
      throw new UsageError(`--status takes one of ${STATUSES.join(', ')}; got ${JSON.stringify(s)}.`);
    }
    return s as AgentRunStatus;
  });
  const limit = positiveInt('limit', str(parsed, 'limit'), 1000);
  const given = str(parsed, 'store');
  const location = storeLocation(given, io.cwd);
  const json = flag(parsed, 'json');
  if (!existsSync(location.path)) {
    // No store yet means no runs; listing must not create one.
    if (json) printJson(io, { runs: [] });
    else io.stdout.write(`No runs: there is no store at ${given ?? DEFAULT_STORE} yet.\n`);
    return 0;
  }
  const ops = openStoreReadOnly(location, given);
  try {
    // The ops run store's runs and the V3 runs of the same file, in one list (a V3 run is marked as one).
    const query = { ...(status.length > 0 ? { status } : {}), ...(limit !== undefined ? { limit } : {}) };
    const [ops1, v3] = await Promise.all([ops.agentRuns.list(query), v3StoreOf(ops).list(query)]);
    const merged: (AgentRunSummary & { checkpointVersion?: 3 })[] = [...ops1.runs, ...v3.runs.map((r) => ({ ...r, checkpointVersion: 3 as const }))]
      .sort((a, b) => b.updatedAt - a.updatedAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0));
    const max = listLimit(limit);
    const page = {
      runs: merged.slice(0, max),
      ...(merged.length > max || ops1.nextCursor || v3.nextCursor ? { more: true } : {}),
    };
    if (json) {
      printJson(io, page);
      return 0;
    }
    if (page.runs.length === 0) {
      io.stdout.write('No runs.\n');
      return 0;
    }
    const idWidth = Math.max(6, ...page.runs.map((r) => r.runId.length));
    io.stdout.write(`${pad('RUN ID', idWidth)}  ${pad('STATUS', 9)}  ${pad('PENDING', 7)}  UPDATED\n`);
    for (const run of page.runs) {
      const pending = run.pendingApprovals + run.pendingClientCalls;
      const v3mark = run.checkpointVersion === 3 ? '  (V3)' : '';
      io.stdout.write(`${pad(run.runId, idWidth)}  ${pad(run.status, 9)}  ${pad(String(pending), 7)}  ${new Date(run.updatedAt).toISOString()}${v3mark}\n`);
    }
    if (page.more) io.stdout.write(`(more runs: raise --limit)\n`);
    return 0;
  } finally {
    ops.close();
  }
}

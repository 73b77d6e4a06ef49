/**
 * `cairn resume <runId>`: answers what a stored run waits for and goes on,
 * with the model, tools and skills recorded when it started (flags override
 * them). An approval's token comes from the stored run's pending list.
 */
import type { ApprovalResponse, ClientToolResult, JsonValue, ReconciledToolResult } from '../agent/types.js';
import { DEFAULT_HEADLESS_SCOPE, exitCodeFor, inspectRun, resumeHeadless } from '../headless/index.js';
import {
  atMost, checkId, flag, idEqualsJson, parse, str, strs, UsageError, type OptionSpecs,
} from './args.js';
import {
  cliLease, interruptSignal, leaseTtl, materialize, openExistingStore, printJson, safeId, skillDirs, storeLocation, type Io,
} from './context.js';
import { RESUME_HELP } from './help.js';
import { MODEL_OPTIONS, readModelFlags } from './model-flags.js';
import { createProgress, NO_PROGRESS } from './progress.js';
import { readRunMeta, type RunMeta } from './run-meta.js';
import { formatReport } from './summary.js';
import { loadToolsModule } from './tools-module.js';

const RESUME_OPTIONS = {
  approve: { type: 'string', multiple: true },
  deny: { type: 'string', multiple: true },
  reason: { type: 'string' },
  'client-result': { type: 'string', multiple: true },
  retry: { type: 'string', multiple: true },
  reconcile: { type: 'string', multiple: true },
  'reconcile-error': { type: 'string', multiple: true },
  'retry-failed': { type: 'boolean' },
  ...MODEL_OPTIONS,
  tools: { type: 'string' },
  skills: { type: 'string', multiple: true },
  store: { type: 'string' },
  'lease-ttl': { type: 'string' },
  json: { type: 'boolean' },
  quiet: { type: 'boolean' },
} as const satisfies OptionSpecs;

export async function resumeCommand(argv: string[], io: Io): Promise<number> {
  const parsed = parse(argv, RESUME_OPTIONS);
  if (flag(parsed, 'help')) {
    io.stdout.write(RESUME_HELP);
    return 0;
  }
  atMost(parsed, 1, 'resume');
  const runId = parsed.positionals[0];
  if (runId === undefined) throw new UsageError('cairn resume needs the run id: cairn resume <runId>.');
  checkId('The run id', runId);

  // Every answer is checked before the store is opened.
  const approve = strs(parsed, 'approve').map((id) => checkId('--approve', id));
  const deny = strs(parsed, 'deny').map((id) => checkId('--deny', id));
  const reason = str(parsed, 'reason');
  if (reason !== undefined && deny.length === 0) throw new UsageError('--reason goes with --deny <approvalId>.');
  const clientToolResults: ClientToolResult[] = strs(parsed, 'client-result').map((v) => {
    const { id, json } = idEqualsJson('client-result', v);
    return { toolCallId: id, output: json as JsonValue };
  });
  const reconciledToolResults: ReconciledToolResult[] = [
    ...strs(parsed, 'reconcile').map((v) => ({ ...idEqualsJson('reconcile', v), isError: false })),
    ...strs(parsed, 'reconcile-error').map((v) => ({ ...idEqualsJson('reconcile-error', v), isError: true })),
  ].map(({ id, json, isError }) => ({ toolCallId: id, output: json as JsonValue, ...(isError ? { isError } : {}) }));
  const retryToolCallIds = strs(parsed, 'retry').map((id) => checkId('--retry', id));
  const retryFailed = flag(parsed, 'retry-failed');
  const ttlMs = leaseTtl(str(parsed, 'lease-ttl'));

  // Checked here, before the store is opened; read again below against the recorded model.
  const early = readModelFlags(parsed, io.cwd);
  const toolsFlag = str(parsed, 'tools');
  const toolsModule = toolsFlag !== undefined ? await loadToolsModule(toolsFlag, io.cwd) : undefined;
  const skillsFlag = skillDirs(strs(parsed, 'skills'), io.cwd);

  const given = str(parsed, 'store');
  const location = storeLocation(given, io.cwd);
  const ops = openExistingStore(location, given);
  const interrupt = interruptSignal();
  const progress = flag(parsed, 'quiet') ? NO_PROGRESS : createProgress(io.stderr);
  try {
    const recorded = readRunMeta(location.path, runId);
    const scope = recorded?.scope ?? DEFAULT_HEADLESS_SCOPE;
    const envelope = await ops.agentRuns.load(runId);
    if (envelope === undefined) throw new UsageError(`There is no run ${runId} in ${given ?? 'the store'}.`);
    if (!recorded && !early.model) {
      throw new UsageError(`Run ${runId} was not started by cairn run, so nothing is recorded for it: pass --model (and --fallback, --tools, --skills) as its first leg used them.`);
    }
    const models = early.model ? early : readModelFlags(parsed, io.cwd, recorded!.model);
    // Each flag replaces what was recorded; the rest is the first leg's.
    const fallbacks = models.fallbacks ?? recorded?.fallbacks;
    const maxRetries = models.maxRetries ?? recorded?.maxRetries;
    const modelTimeoutMs = models.modelTimeoutMs ?? recorded?.modelTimeoutMs;
    const meta: RunMeta = {
      runId,
      scope,
      model: models.model ?? recorded!.model,
      ...(fallbacks && fallbacks.length > 0 ? { fallbacks } : {}),
      ...(maxRetries !== undefined ? { maxRetries } : {}),
      ...(modelTimeoutMs !== undefined ? { modelTimeoutMs } : {}),
      tools: toolsModule ? { kind: 'module', path: toolsModule.path } : recorded?.tools ?? null,
      skills: skillsFlag.length > 0 ? skillsFlag : recorded?.skills ?? [],
      ...(recorded?.maxSteps !== undefined ? { maxSteps: recorded.maxSteps } : {}),
      createdAt: recorded?.createdAt ?? Date.now(),
    };
    // A completed run's resume only reports the stored result: it needs no key.
    const built = await materialize(meta, io.cwd, { keys: envelope.status !== 'completed' });

    // The token of each approval comes from the stored run; an id it does not wait on goes
    // through without one, and the engine ignores it with a warning.
    const stored = await inspectRun(ops.agentRuns, runId, { scope });
    const tokens = new Map(stored.pending.flatMap((a) => (a.kind === 'approval' ? [[a.approvalId, a.token] as const] : [])));
    const verdict = (approvalId: string, approved: boolean): ApprovalResponse => ({
      approvalId,
      approved,
      ...(tokens.has(approvalId) ? { token: tokens.get(approvalId)! } : {}),
      ...(!approved && reason !== undefined ? { reason } : {}),
    });
    const approvalResponses = [...approve.map((id) => verdict(id, true)), ...deny.map((id) => verdict(id, false))];

    const report = await resumeHeadless<unknown>({
      model: built.model,
      ...(built.fallbackModels.length > 0 ? { fallbackModels: built.fallbackModels } : {}),
      ...(meta.maxRetries !== undefined ? { maxRetries: meta.maxRetries } : {}),
      ...(meta.modelTimeoutMs !== undefined ? { modelTimeoutMs: meta.modelTimeoutMs } : {}),
      ...(built.tools ? { tools: built.tools } : {}),
      ...(built.skills.length > 0 ? { skills: built.skills } : {}),
      ...(meta.maxSteps !== undefined ? { maxSteps: meta.maxSteps } : {}),
      store: ops.agentRuns,
      runId,
      scope,
      lease: cliLease(ops, ttlMs),
      ...(approvalResponses.length > 0 ? { approvalResponses } : {}),
      ...(clientToolResults.length > 0 ? { clientToolResults } : {}),
      ...(retryToolCallIds.length > 0 ? { retryToolCallIds } : {}),
      ...(reconciledToolResults.length > 0 ? { reconciledToolResults } : {}),
      ...(retryFailed ? { retryFailed } : {}),
      abortSignal: interrupt.signal,
      onEvent: (event) => progress.onEvent(event),
      deps: { generateId: safeId },
    });
    progress.stop();
    if (flag(parsed, 'json')) printJson(io, report);
    else io.stdout.write(formatReport(report, location.ctx));
    return exitCodeFor(report);
  } finally {
    progress.stop();
    interrupt.dispose();
    ops.close();
  }
}

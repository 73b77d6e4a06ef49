/**
 * `cairn resume <runId>`: answers what a stored run waits for and goes on,
 * with the model, tools and skills recorded when it started (flags override
 * them). The answers are checked before the store is opened (resume-answers.ts);
 * a refusal of a run that still waits says so, and a busy run says when the
 * holder's lease lapses.
 */
import { agentRunLeaseKey } from '../agent/index.js';
import { DEFAULT_HEADLESS_SCOPE, exitCodeFor, inspectRun, resumeHeadless, type HeadlessReport } from '../headless/index.js';
import type { SqliteOpsStore } from '../ops/sqlite/index.js';
import { connectionOf } from '../stores/sqlite/index.js';
import { atMost, checkId, flag, parse, str, strs, UsageError, type OptionSpecs } from './args.js';
import {
  cliLease, drainRun, interruptHandler, leaseTtl, materialize, openExistingStore, printJson, safeId, skillDirs, storeLocation,
  type Interrupt, type Io,
} from './context.js';
import { RESUME_HELP } from './help.js';
import { MODEL_OPTIONS, readModelFlags } from './model-flags.js';
import { progressFor } from './progress.js';
import { ANSWER_OPTIONS, approvalResponses, readAnswers } from './resume-answers.js';
import { readRunMeta, type RunMeta } from './run-meta.js';
import { formatBusy, formatRefusal, formatReport, resumeCommand as resumeLine, type CommandContext } from './summary.js';
import { loadToolsModule } from './tools-module.js';

const RESUME_OPTIONS = {
  ...ANSWER_OPTIONS,
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
  const answers = readAnswers(parsed);
  const ttlMs = leaseTtl(str(parsed, 'lease-ttl'));

  // Checked here, before the store is opened; read again below against the recorded model.
  const early = readModelFlags(parsed, io.cwd);
  const toolsFlag = str(parsed, 'tools');
  const toolsModule = toolsFlag !== undefined ? await loadToolsModule(toolsFlag, io.cwd) : undefined;
  const skillsFlag = skillDirs(strs(parsed, 'skills'), io.cwd);

  const given = str(parsed, 'store');
  const location = storeLocation(given, io.cwd);
  const ops = openExistingStore(location, given);
  const progress = progressFor(flag(parsed, 'quiet'), io.stderr);
  let interrupt: Interrupt | undefined;
  try {
    const recorded = readRunMeta(connectionOf(ops), runId);
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

    const stored = await inspectRun(ops.agentRuns, runId, { scope });
    const verdicts = approvalResponses(answers, stored, (args) => resumeLine(location.ctx, runId, args));
    const { clientToolResults, reconciledToolResults, retryToolCallIds, retryFailed } = answers;

    const legInterrupt = interruptHandler(drainRun(ops, scope, runId), (text) => progress.note(text));
    interrupt = legInterrupt;
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
      ...(verdicts.length > 0 ? { approvalResponses: verdicts } : {}),
      ...(clientToolResults.length > 0 ? { clientToolResults } : {}),
      ...(retryToolCallIds.length > 0 ? { retryToolCallIds } : {}),
      ...(reconciledToolResults.length > 0 ? { reconciledToolResults } : {}),
      ...(retryFailed ? { retryFailed } : {}),
      abortSignal: legInterrupt.signal,
      onEvent: (event) => {
        if (event.type === 'run-start') legInterrupt.started();
        progress.onEvent(event);
      },
      deps: { generateId: safeId },
    });
    progress.stop();
    if (flag(parsed, 'json')) printJson(io, report);
    else io.stdout.write(await summary(report, { ops, runId, scope, revision: envelope.revision, ctx: location.ctx }));
    return exitCodeFor(report);
  } finally {
    progress.stop();
    interrupt?.dispose();
    ops.close();
  }
}

/**
 * The human summary of a leg. A failure that wrote nothing to a run that
 * still waits is a refusal, and says so; a busy run says when the holder's
 * lease lapses.
 */
async function summary(
  report: HeadlessReport<unknown>,
  leg: { ops: SqliteOpsStore; runId: string; scope: string; revision: number; ctx: CommandContext },
): Promise<string> {
  const { ops, runId, scope } = leg;
  if (report.outcome === 'busy') {
    const lease = await ops.leases.inspect(agentRunLeaseKey({ scope, runId }));
    return formatReport(report, leg.ctx) + formatBusy(lease, Date.now());
  }
  if (report.outcome === 'failed' && (await ops.agentRuns.load(runId))?.revision === leg.revision) {
    const stored = await inspectRun(ops.agentRuns, runId, { scope });
    if (stored.outcome === 'pending') return formatRefusal(report, stored, leg.ctx);
  }
  return formatReport(report, leg.ctx);
}

/**
 * `cairn run` and `cairn demo`: check every argument, then open the store,
 * record what the run uses (so `cairn resume` needs no repeated flags), and
 * drive the first leg with progress on stderr and the report on stdout.
 */
import { dirname, join, resolve } from 'node:path';
import type { AgentTools } from '../agent/types.js';
import {
  DEFAULT_HEADLESS_SCOPE, exitCodeFor, loadProjectInstructions, runHeadless, type HeadlessReport,
} from '../headless/index.js';
import type { LanguageModel } from '../models/types.js';
import { atMost, checkId, flag, parse, positiveInt, str, strs, UsageError, type OptionSpecs } from './args.js';
import { MODEL_OPTIONS, readModelFlags } from './model-flags.js';
import { MODEL_PREFIXES } from './model-spec.js';
import {
  cliLease, drainRun, interruptHandler, leaseTtl, materialize, openStoreForWrite, printJson, safeId, skillDirs, storeLocation,
  type Io, type StoreLocation,
} from './context.js';
import { DEMO_LOG_NAME, DEMO_PROMPT } from './demo.js';
import { DEMO_HELP, RUN_HELP } from './help.js';
import { progressFor } from './progress.js';
import { openRunMeta, type RunMeta } from './run-meta.js';
import { formatReport, resumeCommand, flagArgs } from './summary.js';
import { loadToolsModule } from './tools-module.js';

const RUN_OPTIONS = {
  ...MODEL_OPTIONS,
  tools: { type: 'string' },
  skills: { type: 'string', multiple: true },
  'project-dir': { type: 'string' },
  'run-id': { type: 'string' },
  'max-steps': { type: 'string' },
  store: { type: 'string' },
  'lease-ttl': { type: 'string' },
  json: { type: 'boolean' },
  quiet: { type: 'boolean' },
} as const satisfies OptionSpecs;

const DEMO_OPTIONS = {
  store: { type: 'string' },
  'lease-ttl': { type: 'string' },
  'run-id': { type: 'string' },
  json: { type: 'boolean' },
  quiet: { type: 'boolean' },
} as const satisfies OptionSpecs;

async function readStdin(stdin: Io['stdin']): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

async function promptOf(positionals: string[], io: Io): Promise<string> {
  if (positionals.length > 0) {
    const prompt = positionals.join(' ');
    if (prompt.trim() === '') throw new UsageError('The prompt is empty.');
    return prompt;
  }
  if (io.stdin.isTTY) throw new UsageError('cairn run needs a prompt: pass it as an argument, or pipe it on stdin.');
  const prompt = (await readStdin(io.stdin)).trim();
  if (prompt === '') throw new UsageError('cairn run needs a prompt: stdin was empty.');
  return prompt;
}

/** A directory of project instructions; loaded once here so a mistyped path fails before any write. */
async function checkProjectDir(dir: string | undefined, cwd: string): Promise<string | undefined> {
  if (dir === undefined) return undefined;
  const abs = resolve(cwd, dir);
  try {
    await loadProjectInstructions(abs);
  } catch (error) {
    if (error instanceof TypeError) throw new UsageError(`--project-dir ${dir}: ${error.message}`);
    throw error;
  }
  return abs;
}

interface FirstLeg {
  meta: RunMeta;
  model: LanguageModel;
  fallbackModels?: LanguageModel[];
  tools: AgentTools | undefined;
  prompt: string;
  projectDir?: string;
  location: StoreLocation;
  /** `--store` as given, for messages. */
  givenStore: string | undefined;
  leaseTtlMs: number;
  json: boolean;
  quiet: boolean;
  /** Printed after the summary (the demo's explanation). */
  epilogue?: (report: HeadlessReport<unknown>) => string;
}

/** Opens the store, records the run, drives its first leg and prints the report. */
async function firstLeg(io: Io, leg: FirstLeg): Promise<number> {
  const ops = openStoreForWrite(leg.location, leg.givenStore);
  const table = (() => {
    try {
      return openRunMeta(leg.location.path);
    } catch (error) {
      ops.close();
      throw error;
    }
  })();
  const progress = progressFor(leg.quiet, io.stderr);
  const { runId, scope } = leg.meta;
  const interrupt = interruptHandler(drainRun(ops, scope, runId), (text) => progress.note(text));
  try {
    if ((await ops.agentRuns.load(runId)) !== undefined) {
      throw new UsageError(`Run ${runId} already exists in this store; go on with it with: ${resumeCommand(leg.location.ctx, runId)}`);
    }
    table.put(leg.meta);
    const report = await runHeadless<unknown>({
      model: leg.model,
      ...(leg.fallbackModels && leg.fallbackModels.length > 0 ? { fallbackModels: leg.fallbackModels } : {}),
      ...(leg.meta.maxRetries !== undefined ? { maxRetries: leg.meta.maxRetries } : {}),
      ...(leg.meta.modelTimeoutMs !== undefined ? { modelTimeoutMs: leg.meta.modelTimeoutMs } : {}),
      prompt: leg.prompt,
      ...(leg.tools ? { tools: leg.tools } : {}),
      ...(leg.meta.skills.length > 0 ? { skills: leg.meta.skills } : {}),
      ...(leg.projectDir ? { projectDir: leg.projectDir } : {}),
      ...(leg.meta.maxSteps !== undefined ? { maxSteps: leg.meta.maxSteps } : {}),
      store: ops.agentRuns,
      runId,
      scope,
      lease: cliLease(ops, leg.leaseTtlMs),
      abortSignal: interrupt.signal,
      onEvent: (event) => {
        if (event.type === 'run-start') interrupt.started();
        progress.onEvent(event);
      },
      deps: { generateId: safeId },
    });
    // A leg refused before its first save leaves no run: its record goes too.
    if ((await ops.agentRuns.load(runId)) === undefined) table.delete(runId);
    progress.stop();
    if (leg.json) printJson(io, report);
    else io.stdout.write(formatReport(report, leg.location.ctx) + (leg.epilogue?.(report) ?? ''));
    return exitCodeFor(report);
  } catch (error) {
    if (error instanceof TypeError && !(error instanceof UsageError)) {
      // runHeadless rejects a bad option (a project dir gone since it was checked) before it writes.
      if ((await ops.agentRuns.load(runId).catch(() => undefined)) === undefined) table.delete(runId);
      throw new UsageError(error.message);
    }
    throw error;
  } finally {
    progress.stop();
    interrupt.dispose();
    table.close();
    ops.close();
  }
}

function runIdOf(given: string | undefined): string {
  return given === undefined ? `run-${safeId()}` : checkId('--run-id', given);
}

export async function runCommand(argv: string[], io: Io): Promise<number> {
  const parsed = parse(argv, RUN_OPTIONS);
  if (flag(parsed, 'help')) {
    io.stdout.write(RUN_HELP);
    return 0;
  }
  const models = readModelFlags(parsed, io.cwd);
  if (models.model === undefined) {
    throw new UsageError(`cairn run needs --model: a provider model (${MODEL_PREFIXES.map((p) => `${p}:<model>`).join(', ')}) or a scripted model file ({ "turns": [...] }). Try \`cairn demo\` for a run without one.`);
  }
  const toolsPath = str(parsed, 'tools');
  const tools = toolsPath !== undefined ? await loadToolsModule(toolsPath, io.cwd) : undefined;
  const skills = skillDirs(strs(parsed, 'skills'), io.cwd);
  const projectDir = await checkProjectDir(str(parsed, 'project-dir'), io.cwd);
  const maxSteps = positiveInt('max-steps', str(parsed, 'max-steps'));
  const leaseTtlMs = leaseTtl(str(parsed, 'lease-ttl'));
  const runId = runIdOf(str(parsed, 'run-id'));
  const givenStore = str(parsed, 'store');
  const location = storeLocation(givenStore, io.cwd);
  const prompt = await promptOf(parsed.positionals, io);
  const meta: RunMeta = {
    runId,
    scope: DEFAULT_HEADLESS_SCOPE,
    model: models.model,
    ...(models.fallbacks ? { fallbacks: models.fallbacks } : {}),
    ...(models.maxRetries !== undefined ? { maxRetries: models.maxRetries } : {}),
    ...(models.modelTimeoutMs !== undefined ? { modelTimeoutMs: models.modelTimeoutMs } : {}),
    tools: tools ? { kind: 'module', path: tools.path } : null,
    skills,
    ...(maxSteps !== undefined ? { maxSteps } : {}),
    createdAt: Date.now(),
  };
  const built = await materialize(meta, io.cwd);
  return firstLeg(io, {
    meta, model: built.model, fallbackModels: built.fallbackModels, tools: tools?.tools, prompt, location, givenStore, leaseTtlMs,
    ...(projectDir ? { projectDir } : {}),
    json: flag(parsed, 'json'), quiet: flag(parsed, 'quiet'),
  });
}

export async function demoCommand(argv: string[], io: Io): Promise<number> {
  const parsed = parse(argv, DEMO_OPTIONS);
  if (flag(parsed, 'help')) {
    io.stdout.write(DEMO_HELP);
    return 0;
  }
  atMost(parsed, 0, 'demo');
  const given = str(parsed, 'store');
  const location = storeLocation(given, io.cwd);
  const leaseTtlMs = leaseTtl(str(parsed, 'lease-ttl'));
  const runId = runIdOf(str(parsed, 'run-id'));
  const log = join(dirname(location.path), DEMO_LOG_NAME);
  const meta: RunMeta = {
    runId, scope: DEFAULT_HEADLESS_SCOPE, model: { kind: 'demo' }, tools: { kind: 'demo', log }, skills: [], createdAt: Date.now(),
  };
  const built = await materialize(meta, io.cwd);
  const shownLog = join(dirname(given ?? '.cairn/runs.sqlite'), DEMO_LOG_NAME);
  const epilogue = (report: HeadlessReport<unknown>): string => {
    const approval = report.pending.find((a) => a.kind === 'approval');
    if (report.outcome !== 'pending' || approval?.kind !== 'approval') return '';
    return [
      '',
      'The demo agent checked the build and wants to deploy web to production.',
      'Deploys wait for a human. Approve this one with:',
      '',
      `  ${resumeCommand(location.ctx, runId, flagArgs('approve', approval.approvalId))}`,
      '',
      `Each deploy appends a line to ${shownLog}; approving twice deploys once.`,
      '',
    ].join('\n');
  };
  return firstLeg(io, {
    meta, model: built.model, tools: built.tools, prompt: DEMO_PROMPT, location, givenStore: given, leaseTtlMs,
    json: flag(parsed, 'json'), quiet: flag(parsed, 'quiet'), epilogue,
  });
}

/**
 * runHeadless and resumeHeadless: one leg of a native run, reported as plain
 * JSON. Everything that happens to the run is in the report; a leg rejects only
 * when the project instructions cannot be loaded, a tool takes a skill tool's
 * name, or onEvent threw.
 */
import { nanoid } from 'nanoid';
import { refusal, resumeStreamAgent, streamAgent } from '../agent/run-agent.js';
import type { AgentDeps, AgentEvent, AgentModel, AgentOptions, AgentResult, AgentTools, Message, ResumeOptions } from '../agent/types.js';
import { BudgetError, CairnTypeError, InvalidOptionsError, RunIdentityError } from '../errors/index.js';
import { emptyUsage, type LanguageModel, type Usage } from '../models/types.js';
import type { ExecutionContext } from '../policy/index.js';
import { costOf, DEFAULT_HEADLESS_SCOPE, storedPending } from './inspect.js';
import { headlessExecution } from './budget.js';
import { toCairnModel } from '../models/resolve.js';
import { bundledPriceProvider, priceOrNull } from './prices.js';
import { loadProjectInstructions } from './project-instructions.js';
import { reportOf } from './report.js';
import { assertNoSkillToolCollision, createSkillTools, resolveSkillSources } from './skills.js';
import type {
  HeadlessCommon, HeadlessReport, HeadlessResumeOptions, HeadlessRunOptions, HeadlessWarning, PendingAction, PriceProvider,
} from './types.js';

/** Options that belong to the headless layer and never reach the engine. */
const HEADLESS_KEYS = ['store', 'runId', 'scope', 'skills', 'onEvent', 'budget', 'deps', 'lease', 'projectDir', 'projectInstructions'] as const;

interface Prepared<T> {
  runId: string;
  scope: string;
  priceProvider: PriceProvider;
  tools: AgentTools;
  skillsText: string | undefined;
  warnings: HeadlessWarning[];
  /** Set when the leg is refused before anything is read or written. */
  refusal?: unknown;
  /** The leg's model as a Cairn model. */
  model?: LanguageModel;
  /** The execution context the budget runs on (its ledger admits each model call). */
  execution?: ExecutionContext;
  onEvent: ((event: AgentEvent<T>) => void) | undefined;
}

function checkBudget(budget: unknown): void {
  if (budget === undefined) return;
  if (budget === null || typeof budget !== 'object') throw new InvalidOptionsError('budget must be an object: { usd?, tokens?, unknownPrice? }.');
  const { usd, tokens, unknownPrice } = budget as Record<string, unknown>;
  if (usd !== undefined && (typeof usd !== 'number' || !Number.isFinite(usd) || usd <= 0)) {
    throw new InvalidOptionsError(`budget.usd must be a positive number of US dollars, got ${JSON.stringify(usd)}.`);
  }
  if (tokens !== undefined && (typeof tokens !== 'number' || !Number.isInteger(tokens) || tokens <= 0)) {
    throw new InvalidOptionsError(`budget.tokens must be a positive integer, got ${JSON.stringify(tokens)}.`);
  }
  if (unknownPrice !== undefined && unknownPrice !== 'warn' && unknownPrice !== 'reject') {
    throw new InvalidOptionsError("budget.unknownPrice must be 'warn' or 'reject'.");
  }
}

/** What a resumed run's record says about its budget: whether it checkpointed a ledger, and what it used. */
interface StoredBudget {
  ledger: boolean;
  usage: Usage;
  runId: string;
}

/**
 * What both legs share: skill tools (rejecting on a name collision) and the
 * execution context the budget runs on. Shape errors become a refusal.
 */
async function prepare<T>(options: HeadlessCommon<T> & { model: AgentModel; tools?: AgentTools }, runId: string, storedBudget: () => Promise<StoredBudget | undefined>): Promise<Prepared<T>> {
  let sources: ReturnType<typeof resolveSkillSources> = [];
  let badSkills: unknown;
  try {
    sources = resolveSkillSources(options.skills);
  } catch (error) {
    // A malformed skills option is a refusal like any other bad option (the leg does not reject for it).
    badSkills = new InvalidOptionsError(error instanceof Error ? error.message : String(error));
  }
  if (sources.length > 0) assertNoSkillToolCollision(options.tools);
  const skills = sources.length > 0 ? await createSkillTools(sources) : undefined;
  const deps = options.deps ?? {};
  const prepared: Prepared<T> = {
    runId,
    scope: options.scope ?? DEFAULT_HEADLESS_SCOPE,
    priceProvider: deps.priceProvider ?? bundledPriceProvider,
    tools: { ...(options.tools ?? {}), ...(skills?.tools ?? {}) },
    skillsText: skills?.systemText,
    warnings: (skills?.shadowed ?? []).map(({ id, source }) => ({
      code: 'skill-shadowed',
      message: `Skill "${id}" of skills source ${source} is hidden by a skill of the same id in an earlier source.`,
    })),
    onEvent: options.onEvent,
  };
  try {
    if (badSkills !== undefined) throw badSkills;
    if (options.onEvent !== undefined && typeof options.onEvent !== 'function') throw new InvalidOptionsError('onEvent must be a function.');
    if (deps.priceProvider !== undefined && typeof deps.priceProvider !== 'function') throw new InvalidOptionsError('deps.priceProvider must be a function.');
    checkBudget(options.budget);
    let model: LanguageModel;
    try {
      model = toCairnModel(options.model);
    } catch {
      return prepared; // the engine refuses it with its own message
    }
    prepared.model = model;
    const budget = options.budget;
    const priced = (await priceOrNull(prepared.priceProvider, model, emptyUsage())) !== null;
    if (budget?.usd !== undefined && !priced) {
      const name = `${model.provider}:${model.modelId}`;
      if (budget.unknownPrice === 'reject') {
        throw new BudgetError('unpriced_model', `Model ${name} has no price, so a USD budget cannot count its calls; price it with deps.priceProvider or drop budget.unknownPrice: 'reject'.`);
      }
      prepared.warnings.push({
        code: 'unpriced-model',
        message: `Model ${name} has no price: the USD budget does not count its calls (token limits still apply).`,
      });
    }
    const own = (options as { execution?: unknown }).execution;
    if (own !== undefined && budget !== undefined) {
      throw new InvalidOptionsError('budget and execution cannot both be set: give the execution context the budget instead.');
    }
    if (own === undefined) {
      const execution = await headlessExecution({
        budget, model, priceProvider: prepared.priceProvider, clock: deps.clock, stored: await storedBudget(),
      });
      if (execution) prepared.execution = execution;
    }
  } catch (error) {
    prepared.refusal = error;
  }
  return prepared;
}

/** Agent options without the headless layer's own keys. */
function engineOptions<O extends object>(options: O): Record<string, unknown> {
  const out = { ...options } as Record<string, unknown>;
  for (const key of HEADLESS_KEYS) delete out[key];
  return out;
}

function engineDeps(options: HeadlessCommon<unknown>) {
  const deps = options.deps;
  if (!deps) return undefined;
  const out: AgentDeps = {};
  for (const key of ['clock', 'generateId', 'breakerStore', 'breaker', 'sleep'] as const) {
    if (deps[key] !== undefined) (out as Record<string, unknown>)[key] = deps[key];
  }
  return out;
}

/** Runs the stream, handing each event to onEvent; a throwing onEvent aborts the leg, which then rejects. */
async function drive<T>(
  start: (signal: AbortSignal | undefined) => ReturnType<typeof streamAgent<T>>,
  onEvent: ((event: AgentEvent<T>) => void) | undefined,
  userSignal: AbortSignal | undefined,
): Promise<AgentResult<T>> {
  if (!onEvent) return start(userSignal).consume();
  const stop = new AbortController();
  const signal = userSignal ? AbortSignal.any([userSignal, stop.signal]) : stop.signal;
  const stream = start(signal);
  let thrown: { error: unknown } | null = null;
  for await (const event of stream.events) {
    if (thrown) continue;
    try {
      onEvent(event);
    } catch (error) {
      thrown = { error };
      stop.abort(error);
    }
  }
  const result = await stream.result;
  if (thrown) throw thrown.error;
  return result;
}

async function finish<T>(
  result: AgentResult<T>,
  prepared: Prepared<T>,
  model: Pick<LanguageModel, 'provider' | 'modelId'> | undefined,
  store: HeadlessCommon<T>['store'],
): Promise<HeadlessReport<T>> {
  const warnings = [...prepared.warnings];
  let drainedPending: PendingAction[] | undefined;
  if (result.status === 'stopped' && result.reason === 'drained') {
    try {
      const stored = await store.load(prepared.runId, { scope: prepared.scope });
      if (!stored) throw new RunIdentityError('run_not_found', prepared.runId);
      drainedPending = storedPending(stored);
    } catch {
      drainedPending = [];
      warnings.push({ code: 'pending-unreadable', message: 'The drained run could not be read back, so what it waits for is not listed; inspectRun shows it.' });
    }
  }
  const cost = model && typeof model.provider === 'string'
    ? await costOf(prepared.priceProvider, model, result.usage, result.usageByModel)
    : { usd: 0, complete: false };
  return reportOf(result, { cost, warnings, ...(drainedPending ? { drainedPending } : {}) });
}

const INSTRUCTION_SKIP_CODES: Record<string, string> = {
  'outside-root': 'instructions-outside-root',
  'over-cap': 'instructions-truncated',
  unreadable: 'instructions-unreadable',
};

/** Skipped or cut instruction files worth telling: a link out of the root, the byte cap, a file that could not be read. */
function instructionWarnings(
  skipped: Array<{ relativePath: string; reason: string; detail?: string }>,
  files: Array<{ relativePath: string; truncated: boolean }>,
): HeadlessWarning[] {
  const out: HeadlessWarning[] = [];
  for (const skip of skipped) {
    const code = INSTRUCTION_SKIP_CODES[skip.reason];
    if (code) out.push({ code, message: skip.detail ?? `${skip.relativePath} was not loaded (${skip.reason}).` });
  }
  for (const file of files) {
    if (file.truncated) out.push({ code: 'instructions-truncated', message: `${file.relativePath} was cut at the instructions' byte cap.` });
  }
  return out;
}

/**
 * Starts a run and drives it to rest. Takes runAgent's options (without
 * `session`) plus a store; the run id defaults to a generated one and the scope
 * to 'headless'.
 */
export async function runHeadless<T = string>(options: HeadlessRunOptions<T>): Promise<HeadlessReport<T>> {
  if (options === null || typeof options !== 'object') throw new CairnTypeError('invalid_options', 'runHeadless takes an options object.');
  const runId = options.runId ?? options.deps?.generateId?.() ?? nanoid();
  // Loaded first: a bad projectDir or option rejects the leg before anything else.
  if (options.projectInstructions !== undefined && options.projectDir === undefined) {
    throw new CairnTypeError('invalid_options', 'projectInstructions needs projectDir: the directory to load the instruction files from.');
  }
  const project = options.projectDir !== undefined
    ? await loadProjectInstructions(options.projectDir, options.projectInstructions ?? {})
    : undefined;
  const prepared = await prepare<T>(options, runId, async () => undefined);
  if (prepared.refusal !== undefined) return finish(refusal<T>(runId, prepared.refusal), prepared, undefined, options.store);
  if (project) prepared.warnings.push(...instructionWarnings(project.skipped, project.files));

  // Your instructions first, then the project's files, then the skills list.
  const systemParts: string[] = [];
  const own = options.system ?? options.instructions;
  if (own !== undefined) systemParts.push(own);
  const messages: Message[] = [];
  if (project?.message?.role === 'user') messages.push({ role: 'user', content: project.message.content });
  else if (project?.message) systemParts.push(project.message.content);
  if (prepared.skillsText) systemParts.push(prepared.skillsText);
  if (options.messages) messages.push(...options.messages);

  const agentOptions = {
    ...engineOptions(options),
    model: options.model,
    ...(prepared.execution ? { execution: prepared.execution } : {}),
    tools: prepared.tools,
    ...(systemParts.length > 0 ? { system: systemParts.join('\n\n') } : {}),
    ...(messages.length > 0 ? { messages } : {}),
    session: { store: options.store, runId, scope: prepared.scope },
    ...(options.lease ? { lease: options.lease } : {}),
    deps: engineDeps(options as HeadlessCommon<unknown>),
  } as AgentOptions<T>;
  delete (agentOptions as { instructions?: string }).instructions;
  const result = await drive<T>(
    (signal) => streamAgent<T>({ ...agentOptions, ...(signal ? { abortSignal: signal } : {}) }),
    prepared.onEvent,
    options.abortSignal,
  );
  return finish(result, prepared, prepared.model, options.store);
}

/**
 * Goes on with a stored run: answers what it waits for, or returns the stored
 * result of a run that ended. Pass the same model, tools, skills and output as
 * the first leg: the run's binding refuses a change.
 */
export async function resumeHeadless<T = string>(options: HeadlessResumeOptions<T>): Promise<HeadlessReport<T>> {
  if (options === null || typeof options !== 'object') throw new CairnTypeError('invalid_options', 'resumeHeadless takes an options object.');
  const runId = options.runId;
  const scope = options.scope ?? DEFAULT_HEADLESS_SCOPE;
  const storedBudget = async (): Promise<StoredBudget | undefined> => {
    try {
      const stored = await options.store.load(runId, { scope });
      if (!stored) return undefined;
      const usage = (stored.snapshot as { context?: { usage?: Usage } } | undefined)?.context?.usage;
      return { ledger: stored.ledger !== undefined, usage: usage ? { ...usage } : emptyUsage(), runId };
    } catch {
      return undefined; // the resume itself reports why the run cannot be read
    }
  };
  const prepared = await prepare<T>(options, typeof runId === 'string' ? runId : '', storedBudget);
  if (prepared.refusal !== undefined) return finish(refusal<T>(prepared.runId, prepared.refusal), prepared, undefined, options.store);
  const agentOptions = {
    ...engineOptions(options),
    model: options.model,
    ...(prepared.execution ? { execution: prepared.execution } : {}),
    tools: prepared.tools,
    session: { store: options.store, runId, scope },
    ...(options.lease ? { lease: options.lease } : {}),
    deps: engineDeps(options as HeadlessCommon<unknown>),
  } as ResumeOptions<T>;
  const result = await drive<T>(
    (signal) => resumeStreamAgent<T>({ ...agentOptions, ...(signal ? { abortSignal: signal } : {}) }),
    prepared.onEvent,
    options.abortSignal,
  );
  return finish(result, prepared, prepared.model, options.store);
}

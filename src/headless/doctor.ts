/**
 * `doctor(options)`: why a configuration will not work, found before any run
 * and without a network call. It reads the options, the environment and the
 * Node version; the only user code it calls is `deps.priceProvider` (once).
 */
import { canonicalProvider, EFFORT_LEVELS, modelProfile, type ModelCapabilities } from '../models/profiles.js';
import { bundledPrice, priceUsage } from './prices.js';
import { Findings } from './doctor-codes.js';
import { checkOutput, checkSkills, checkToolChoice, checkTools, hasSkills, isRecord, show } from './doctor-tools.js';
import type { DoctorOptions, DoctorReport, DoctorSeverity, HeadlessResumeOptions, HeadlessRunOptions, PriceProvider } from './types.js';

export { DOCTOR_CODES, type DoctorCode } from './doctor-codes.js';
export {
  EFFORT_LEVELS, MODEL_PROFILES, modelProfile,
  type EffortLevel, type ModelCapabilities, type ModelProfile, type PromptCachingSupport,
} from '../models/profiles.js';

/**
 * The variable each provider's key is usually read from. For Google the
 * first is Google's own name; the Vercel AI SDK's name is accepted too.
 */
export const PROVIDER_API_KEY_ENV: Readonly<Record<string, readonly string[]>> = Object.freeze({
  anthropic: ['ANTHROPIC_API_KEY'],
  openai: ['OPENAI_API_KEY'],
  google: ['GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GENERATIVE_AI_API_KEY'],
});

/** The smallest Node major each store kind runs on (better-sqlite3 12 ships no build for Node 21). */
const STORE_NODE: Record<string, { need: string; ok: (major: number) => boolean }> = {
  memory: { need: 'Node 20 or later', ok: (m) => m >= 20 },
  postgres: { need: 'Node 20 or later', ok: (m) => m >= 20 },
  sqlite: { need: 'Node 20, or 22 and later (better-sqlite3 12 has no build for Node 21)', ok: (m) => m === 20 || m >= 22 },
};

const PRICE_TIMEOUT_MS = 5_000;

/** Options of runs and resumes, and the doctor's own: not worth an `option-unknown`. */
const KNOWN_OPTIONS = new Set([
  'model', 'prompt', 'messages', 'system', 'instructions', 'tools', 'toolsContext', 'output', 'verify', 'maxSteps',
  'maxOutputAttempts', 'maxVerifyAttempts', 'prepareStep', 'onToolCall', 'onToolResult', 'session', 'bindingId',
  'abortSignal', 'deadline', 'lease', 'deps', 'store', 'runId', 'scope', 'skills', 'onEvent', 'budget', 'projectDir',
  'projectInstructions', 'approvalResponses', 'clientToolResults', 'retryToolCallIds', 'reconciledToolResults',
  'retryFailed', 'effort', 'temperature', 'topP', 'toolChoice', 'promptCaching', 'capabilities', 'env', 'nodeVersion',
  'apiKeyEnv',
  // Named by the spec for areas still to come.
  'memory', 'chat', 'fallbackModels', 'mcp', 'handoffs', 'checkpointVersion', 'context',
]);
const LEGACY_OPTIONS = ['verifyStep', 'doneWhen', 'falseFinishGuard'];

interface ModelRef { provider: string; modelId: string }

/**
 * Checks a run's options without running anything. Never throws: a bad option is a finding.
 *
 * @example
 * const report = await doctor({ model, tools, budget: { usd: 2 } });
 * for (const f of report.findings) console.log(f.severity, f.code, f.message);
 * process.exitCode = exitCodeFor(report); // 8 when a finding is an error
 */
export async function doctor(
  options: DoctorOptions | HeadlessRunOptions<any> | HeadlessResumeOptions<any>,
): Promise<DoctorReport> {
  const out = new Findings();
  try {
    await examine(options as unknown, out);
  } catch (error) {
    // A getter or proxy in the options threw: that is a finding too.
    out.add('options-invalid', `Reading the options threw (${error instanceof Error ? error.message : String(error)}): pass plain values.`);
  }
  const rank: Record<DoctorSeverity, number> = { error: 0, warning: 1, info: 2 };
  const findings = out.list.map((f, i) => [f, i] as const).sort(([a, i], [b, j]) => rank[a.severity] - rank[b.severity] || i - j).map(([f]) => f);
  return { kind: 'doctor', ok: !findings.some((f) => f.severity === 'error'), findings };
}

async function examine(options: unknown, out: Findings): Promise<void> {
  if (!isRecord(options)) {
    out.add('options-invalid', `Pass doctor the run's options as an object, got ${show(options)}.`);
    return;
  }
  checkShape(options, out);
  const model = checkModel(options.model, out);
  const skills = hasSkills(options.skills);
  const toolNames = checkTools(options.tools, skills, out);
  await checkSkills(options.skills, out);
  checkOutput(options.output, toolNames, skills, out);
  checkToolChoice(options.toolChoice, toolNames, skills, out);
  checkNode(options, out);
  const deps = checkDeps(options.deps, out);
  const budget = checkBudget(options.budget, out);
  if (!model) return;
  checkApiKey(model, options, out);
  await checkPrice(model, deps.priceProvider, budget, out);
  checkProfile(model, options, out);
}

function checkShape(options: Record<string, unknown>, out: Findings): void {
  for (const key of Object.keys(options)) {
    if (LEGACY_OPTIONS.includes(key)) {
      if (options[key] !== undefined) out.add('option-legacy', `Remove ${key}: the native engine does not run legacy completion hooks; use verify instead.`, key);
    } else if (!KNOWN_OPTIONS.has(key)) {
      out.add('option-unknown', `Option "${key}" is not one Cairn reads; check its spelling, or remove it.`, key);
    }
  }
  for (const key of ['maxSteps', 'maxOutputAttempts', 'maxVerifyAttempts']) {
    const v = options[key];
    if (v !== undefined && !(typeof v === 'number' && Number.isInteger(v) && v >= 1)) {
      out.add('option-invalid', `Set ${key} to a positive integer, got ${show(v)}.`, key);
    }
  }
  const typed: Array<[string, string, string]> = [
    ['prompt', 'string', 'a string'], ['system', 'string', 'a string'], ['instructions', 'string', 'a string'],
    ['bindingId', 'string', 'a string'], ['projectDir', 'string', 'a directory path'],
    ['verify', 'function', 'a function'], ['onEvent', 'function', 'a function'], ['prepareStep', 'function', 'a function'],
    ['onToolCall', 'function', 'a function'], ['onToolResult', 'function', 'a function'],
  ];
  for (const [key, type, what] of typed) {
    if (options[key] !== undefined && typeof options[key] !== type) out.add('option-invalid', `Set ${key} to ${what}, got ${show(options[key])}.`, key);
  }
  if (options.messages !== undefined && !Array.isArray(options.messages)) out.add('option-invalid', 'Set messages to an array of messages.', 'messages');
  if (options.runId !== undefined && (typeof options.runId !== 'string' || options.runId === '')) {
    out.add('option-invalid', `Set runId to a non-empty string, got ${show(options.runId)}.`, 'runId');
  }
  if (options.deadline !== undefined && !(typeof options.deadline === 'number' && Number.isFinite(options.deadline))) {
    out.add('option-invalid', 'Set deadline to an absolute time in milliseconds since the epoch.', 'deadline');
  }
}

function checkModel(model: unknown, out: Findings): ModelRef | undefined {
  if (model === undefined || model === null) {
    out.add('model-missing', 'Pass a model: a provider model, or createMockModel from cairn/testing to run without a key.', 'model');
    return undefined;
  }
  if (!isRecord(model) && typeof model !== 'function') {
    out.add('model-invalid', `model must be a model object, got ${show(model)}. A model id string is not enough: create the model with its provider.`, 'model');
    return undefined;
  }
  const m = model as Record<string, unknown>;
  const missing: string[] = [];
  if (m.specificationVersion !== 'cairn-model-1') missing.push(`specificationVersion 'cairn-model-1' (got ${show(m.specificationVersion)})`);
  if (typeof m.provider !== 'string' || m.provider === '') missing.push('a provider name');
  if (typeof m.modelId !== 'string' || m.modelId === '') missing.push('a modelId');
  if (typeof m.doGenerate !== 'function') missing.push('a doGenerate function');
  if (missing.length) {
    out.add('model-invalid', `model does not implement the Cairn model spec: it needs ${missing.join(', ')}. Create it with a Cairn provider or createMockModel.`, 'model');
    return undefined;
  }
  return { provider: m.provider as string, modelId: m.modelId as string };
}

function checkNode(options: Record<string, unknown>, out: Findings): void {
  const raw = options.nodeVersion ?? process.versions.node;
  const match = typeof raw === 'string' ? /^v?(\d+)\.\d+/.exec(raw.trim()) : null;
  if (!match) {
    out.add('option-invalid', `Set nodeVersion to a version such as '20.11.1', got ${show(raw)}.`, 'nodeVersion');
    return;
  }
  const major = Number(match[1]);
  const store = options.store;
  if (store !== undefined && typeof store !== 'string' && !isRecord(store)) {
    out.add('option-invalid', `Set store to a store object or one of 'sqlite', 'postgres', 'memory', got ${show(store)}.`, 'store');
  }
  if (typeof store === 'string' && !(store in STORE_NODE)) {
    out.add('option-invalid', `Set store to 'sqlite', 'postgres' or 'memory' (or pass a store object), got ${show(store)}.`, 'store');
    return;
  }
  const rule = typeof store === 'string' ? STORE_NODE[store]! : STORE_NODE.memory!;
  if (!rule.ok(major)) {
    const what = typeof store === 'string' ? `the ${store} store needs` : 'Cairn needs';
    out.add('node-version-unsupported', `Node ${raw} is too old or unsupported: ${what} ${rule.need}. Upgrade Node.`, typeof store === 'string' ? 'store' : 'nodeVersion');
  }
}

function checkDeps(deps: unknown, out: Findings): { priceProvider?: PriceProvider } {
  if (deps === undefined) return {};
  if (!isRecord(deps)) {
    out.add('option-invalid', `Set deps to an object of injected dependencies, got ${show(deps)}.`, 'deps');
    return {};
  }
  for (const key of ['priceProvider', 'generateId']) {
    if (deps[key] !== undefined && typeof deps[key] !== 'function') out.add('option-invalid', `Set deps.${key} to a function.`, `deps.${key}`);
  }
  if (deps.clock !== undefined && !(isRecord(deps.clock) && typeof deps.clock.now === 'function')) {
    out.add('option-invalid', 'Set deps.clock to an object with a now() method.', 'deps.clock');
  }
  if (deps.breakerStore !== undefined && !(isRecord(deps.breakerStore) && typeof deps.breakerStore.get === 'function' && typeof deps.breakerStore.set === 'function')) {
    out.add('option-invalid', 'Set deps.breakerStore to an object with get and set methods.', 'deps.breakerStore');
  }
  if (deps.breaker !== undefined) {
    if (!isRecord(deps.breaker)) out.add('option-invalid', 'Set deps.breaker to { threshold?, cooldownMs? }.', 'deps.breaker');
    else {
      for (const key of ['threshold', 'cooldownMs']) {
        const v = deps.breaker[key];
        if (v !== undefined && !(typeof v === 'number' && Number.isInteger(v) && v >= 1)) out.add('option-invalid', `Set deps.breaker.${key} to a positive integer, got ${show(v)}.`, `deps.breaker.${key}`);
      }
    }
  }
  return typeof deps.priceProvider === 'function' ? { priceProvider: deps.priceProvider as PriceProvider } : {};
}

interface Budget { usd?: number; reject: boolean }

function checkBudget(budget: unknown, out: Findings): Budget {
  if (budget === undefined) return { reject: false };
  if (!isRecord(budget)) {
    out.add('option-invalid', `Set budget to { usd?, tokens?, unknownPrice? }, got ${show(budget)}.`, 'budget');
    return { reject: false };
  }
  const result: Budget = { reject: budget.unknownPrice === 'reject' };
  if (budget.usd !== undefined) {
    if (typeof budget.usd === 'number' && Number.isFinite(budget.usd) && budget.usd > 0) result.usd = budget.usd;
    else out.add('option-invalid', `Set budget.usd to a positive number of dollars, got ${show(budget.usd)}.`, 'budget.usd');
  }
  if (budget.tokens !== undefined && !(typeof budget.tokens === 'number' && Number.isInteger(budget.tokens) && budget.tokens > 0)) {
    out.add('option-invalid', `Set budget.tokens to a positive integer, got ${show(budget.tokens)}.`, 'budget.tokens');
  }
  if (budget.unknownPrice !== undefined && budget.unknownPrice !== 'warn' && budget.unknownPrice !== 'reject') {
    out.add('option-invalid', `Set budget.unknownPrice to 'warn' or 'reject', got ${show(budget.unknownPrice)}.`, 'budget.unknownPrice');
  }
  return result;
}

function checkApiKey(model: ModelRef, options: Record<string, unknown>, out: Findings): void {
  const provider = canonicalProvider(model.provider);
  if (provider === 'mock') return;
  const env = options.env ?? process.env;
  if (!isRecord(env)) {
    out.add('option-invalid', 'Set env to an object of environment variables (it defaults to process.env).', 'env');
    return;
  }
  let names: readonly string[] | undefined = PROVIDER_API_KEY_ENV[provider];
  if (options.apiKeyEnv !== undefined) {
    if (typeof options.apiKeyEnv !== 'string' || options.apiKeyEnv.trim() === '') {
      out.add('option-invalid', `Set apiKeyEnv to the name of an environment variable, got ${show(options.apiKeyEnv)}.`, 'apiKeyEnv');
      return;
    }
    names = [options.apiKeyEnv];
  }
  if (!names) {
    out.add('api-key-unchecked', `Cairn does not know which variable holds a key for provider "${model.provider}": pass apiKeyEnv to have it checked.`, 'apiKeyEnv');
    return;
  }
  // Only whether the value is set is looked at: it never enters a message.
  const set = names.some((name) => typeof env[name] === 'string' && (env[name] as string).trim() !== '');
  if (!set) {
    const which = names.length === 1 ? names[0] : `one of ${names.join(', ')}`;
    out.add('api-key-missing', `Set ${which} to your ${model.provider} API key${options.apiKeyEnv === undefined ? ', or pass apiKeyEnv naming the variable that holds it' : ''}.`, options.apiKeyEnv === undefined ? 'env' : 'apiKeyEnv');
  }
}

async function checkPrice(model: ModelRef, priceProvider: PriceProvider | undefined, budget: Budget, out: Findings): Promise<void> {
  let priced: boolean;
  if (priceProvider) {
    let timer: NodeJS.Timeout | undefined;
    try {
      const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
      const timeout = new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), PRICE_TIMEOUT_MS); });
      const answer = await Promise.race([priceUsage(priceProvider, model, usage), timeout]);
      if (answer === 'timeout') {
        out.add('price-provider-failed', `deps.priceProvider did not answer within ${PRICE_TIMEOUT_MS / 1000} s: it is called for every model call, so make it answer from local data.`, 'deps.priceProvider');
        return;
      }
      priced = answer !== null;
    } catch (error) {
      out.add('price-provider-failed', `deps.priceProvider threw (${error instanceof Error ? error.message : String(error)}): return undefined for a model it has no price for instead.`, 'deps.priceProvider');
      return;
    } finally {
      clearTimeout(timer);
    }
  } else {
    priced = bundledPrice(model.provider, model.modelId) !== undefined;
  }
  if (priced) return;
  const source = priceProvider ? 'deps.priceProvider' : 'The bundled price table';
  const name = `${model.provider}:${model.modelId}`;
  if (budget.usd === undefined) {
    out.add('unpriced-model', `${source} has no price for ${name}: reports will show cost.complete false. Pass deps.priceProvider to price it.`, 'model', 'info');
  } else if (budget.reject) {
    out.add('unpriced-model', `${source} has no price for ${name}, and budget.unknownPrice 'reject' refuses such a run: pass deps.priceProvider that prices it, or use a priced model.`, 'budget.unknownPrice', 'error');
  } else {
    out.add('unpriced-model', `${source} has no price for ${name}: the USD budget will not count its calls (token limits still apply). Pass deps.priceProvider, or set budget.unknownPrice: 'reject' to refuse it.`, 'budget.usd', 'warning');
  }
}

const CAPABILITY_KEYS = ['temperature', 'topP', 'oneSampler', 'samplingOnlyAtEffort', 'effort', 'defaultEffort', 'promptCaching'] as const;

/** The `capabilities` override, keeping only well-formed fields. */
function readCapabilities(value: unknown, out: Findings): Partial<ModelCapabilities> {
  if (value === undefined) return {};
  if (!isRecord(value)) {
    out.add('option-invalid', `Set capabilities to an object of model capabilities ({ temperature, topP, effort, ... }), got ${show(value)}.`, 'capabilities');
    return {};
  }
  const caps: Record<string, unknown> = {};
  const levels = (v: unknown) => Array.isArray(v) && v.every((e) => (EFFORT_LEVELS as readonly unknown[]).includes(e));
  const valid: Record<(typeof CAPABILITY_KEYS)[number], (v: unknown) => boolean> = {
    temperature: (v) => v === null || (isRecord(v) && typeof v.min === 'number' && typeof v.max === 'number' && v.min <= v.max),
    topP: (v) => typeof v === 'boolean',
    oneSampler: (v) => typeof v === 'boolean',
    samplingOnlyAtEffort: (v) => v === null || levels(v),
    effort: (v) => v === null || levels(v),
    defaultEffort: (v) => v === null || (EFFORT_LEVELS as readonly unknown[]).includes(v),
    promptCaching: (v) => v === 'explicit' || v === 'automatic' || v === 'none',
  };
  for (const [key, v] of Object.entries(value)) {
    const check = valid[key as keyof typeof valid];
    if (!check) out.add('option-unknown', `capabilities.${key} is not a capability Cairn knows (${CAPABILITY_KEYS.join(', ')}).`, `capabilities.${key}`);
    else if (v !== undefined && !check(v)) out.add('option-invalid', `capabilities.${key} has the wrong shape (${show(v)}); see ModelCapabilities.`, `capabilities.${key}`);
    else if (v !== undefined) caps[key] = v;
  }
  return caps as Partial<ModelCapabilities>;
}

function checkProfile(model: ModelRef, options: Record<string, unknown>, out: Findings): void {
  const { effort, temperature, topP, promptCaching } = options;
  // Shape first: these hold for every model.
  const effortOk = effort === undefined || (EFFORT_LEVELS as readonly unknown[]).includes(effort);
  if (!effortOk) out.add('option-invalid', `Set effort to one of ${EFFORT_LEVELS.join(', ')}, got ${show(effort)}.`, 'effort');
  const tempOk = temperature === undefined || (typeof temperature === 'number' && Number.isFinite(temperature));
  if (!tempOk) out.add('option-invalid', `Set temperature to a number, got ${show(temperature)}.`, 'temperature');
  const topPOk = topP === undefined || (typeof topP === 'number' && Number.isFinite(topP));
  if (!topPOk) out.add('option-invalid', `Set topP to a number in [0, 1], got ${show(topP)}.`, 'topP');
  else if (typeof topP === 'number' && (topP < 0 || topP > 1)) out.add('top-p-out-of-range', `Set topP within [0, 1], got ${topP}.`, 'topP');
  if (promptCaching !== undefined && typeof promptCaching !== 'boolean' && !isRecord(promptCaching)) {
    out.add('option-invalid', `Set promptCaching to true or false, got ${show(promptCaching)}.`, 'promptCaching');
  }
  const override = readCapabilities(options.capabilities, out);
  if (canonicalProvider(model.provider) === 'mock') return; // the scripted model ignores request parameters
  const profile = modelProfile(model.provider, model.modelId);
  if (!profile && Object.keys(override).length === 0) {
    out.add('model-unknown', `Cairn has no profile for ${model.provider}:${model.modelId}, so sampling, effort and caching were not checked. Pass capabilities to describe the model.`, 'model');
    return;
  }
  const caps: Partial<ModelCapabilities> = { ...profile, ...override };
  const name = profile ? `${profile.family} (${model.modelId})` : model.modelId;

  if (effortOk && effort !== undefined && caps.effort !== undefined) {
    if (caps.effort === null) {
      out.add('effort-unsupported', `${name} takes no effort parameter: remove effort.`, 'effort');
    } else if (!caps.effort.includes(effort as never)) {
      out.add('effort-unsupported', `${name} does not accept effort '${String(effort)}': use one of ${caps.effort.join(', ')}, or leave effort out.`, 'effort');
    }
  }
  const effective = (effortOk ? (effort as string | undefined) : undefined) ?? caps.defaultEffort ?? undefined;
  const sampling: Array<[string, boolean]> = [
    ['temperature', tempOk && temperature !== undefined],
    ['topP', topPOk && topP !== undefined],
  ];
  for (const [param, given] of sampling) {
    if (!given) continue;
    const refused = param === 'temperature' ? caps.temperature === null : caps.topP === false;
    if (refused) {
      out.add('sampling-unsupported', `${name} refuses ${param}: remove it (the model samples at its own setting).`, param);
    } else if (caps.samplingOnlyAtEffort && !(effective !== undefined && caps.samplingOnlyAtEffort.includes(effective as never))) {
      out.add('sampling-unsupported', `${name} accepts ${param} only at effort ${caps.samplingOnlyAtEffort.join(' or ')}: remove ${param}, or set effort to '${caps.samplingOnlyAtEffort[0]}'.`, param);
    } else if (param === 'temperature' && caps.temperature) {
      const { min, max } = caps.temperature;
      if ((temperature as number) < min || (temperature as number) > max) {
        out.add('temperature-out-of-range', `${name} takes temperature from ${min} to ${max}, got ${String(temperature)}.`, 'temperature');
      }
    }
  }
  if (caps.oneSampler && sampling.every(([, given]) => given) && caps.temperature !== null && caps.topP !== false) {
    out.add('sampling-conflict', `${name} takes temperature or topP, not both: remove one of them.`, 'topP');
  }
  if (promptCaching !== undefined && promptCaching !== false && caps.promptCaching === 'none') {
    out.add('prompt-caching-unsupported', `${name} does not cache prompts: promptCaching will have no effect; remove it or pick a model that caches.`, 'promptCaching');
  }
}

/**
 * `doctor(options)`: why a configuration will not work, found before any run
 * and without a network call. It reads the options, the environment and the
 * Node version; the only user code it calls is `deps.priceProvider` (once per
 * model of the run) and each model's own `keyStatus` (no network call either).
 */
import { bundledPrice, priceUsage } from './prices.js';
import { Findings } from './doctor-codes.js';
import { checkApiKeys, checkCallOptions, checkModels, type CheckedModel } from './doctor-models.js';
import { checkProfile, readSettings } from './doctor-profile.js';
import { checkOutput, checkSkills, checkToolChoice, checkTools, hasSkills, isRecord, show } from './doctor-tools.js';
import type { DoctorOptions, DoctorReport, DoctorSeverity, HeadlessResumeOptions, HeadlessRunOptions, PriceProvider } from './types.js';

export { DOCTOR_CODES, type DoctorCode } from './doctor-codes.js';
export {
  EFFORT_LEVELS, MODEL_PROFILES, modelProfile,
  type EffortLevel, type ModelCapabilities, type ModelProfile, type PromptCachingSupport,
} from '../models/profiles.js';

export { PROVIDER_API_KEY_ENV } from './doctor-models.js';

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
  'apiKeyEnv', 'fallbackModels', 'maxRetries', 'modelTimeoutMs', 'maxOutputTokens', 'providerOptions',
  // Named by the spec for areas still to come.
  'memory', 'chat', 'mcp', 'handoffs', 'checkpointVersion', 'context',
  // The run's own agent's name and its description as a handoff target (docs/delegation.md#handoffs).
  'name', 'handoffDescription',
]);
const LEGACY_OPTIONS = ['verifyStep', 'doneWhen', 'falseFinishGuard'];

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
  const models = checkModels(options, out);
  checkCallOptions(options, models, out);
  const skills = hasSkills(options.skills);
  const toolNames = checkTools(options.tools, skills, out);
  await checkSkills(options.skills, out);
  checkOutput(options.output, toolNames, skills, out);
  checkToolChoice(options.toolChoice, toolNames, skills, out);
  checkNode(options, out);
  const deps = checkDeps(options.deps, out);
  const budget = checkBudget(options.budget, out);
  checkApiKeys(models, options, out);
  for (const model of models) {
    // A price provider that fails is reported once, not once per model.
    if (!(await checkPrice(model, deps.priceProvider, budget, out))) break;
  }
  const settings = readSettings(options, out);
  for (const model of models) checkProfile(model, settings, out);
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

/** Whether the model has a price; false when the price provider failed (reported once). */
async function checkPrice(model: CheckedModel, priceProvider: PriceProvider | undefined, budget: Budget, out: Findings): Promise<boolean> {
  let priced: boolean;
  if (priceProvider) {
    let timer: NodeJS.Timeout | undefined;
    try {
      const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
      const timeout = new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), PRICE_TIMEOUT_MS); });
      const answer = await Promise.race([priceUsage(priceProvider, model, usage), timeout]);
      if (answer === 'timeout') {
        out.add('price-provider-failed', `deps.priceProvider did not answer within ${PRICE_TIMEOUT_MS / 1000} s: it is called for every model call, so make it answer from local data.`, 'deps.priceProvider');
        return false;
      }
      priced = answer !== null;
    } catch (error) {
      out.add('price-provider-failed', `deps.priceProvider threw (${error instanceof Error ? error.message : String(error)}): return undefined for a model it has no price for instead.`, 'deps.priceProvider');
      return false;
    } finally {
      clearTimeout(timer);
    }
  } else {
    priced = bundledPrice(model.provider, model.modelId) !== undefined;
  }
  if (priced) return true;
  const source = priceProvider ? 'deps.priceProvider' : 'The bundled price table';
  const name = `${model.provider}:${model.modelId}`;
  if (model.path !== 'model') {
    // Reports price a run's whole usage with its model's price (turns do not keep their usage apart), so this is only worth knowing.
    out.add('unpriced-model', `${source} has no price for ${name} (${model.path}); a report prices the run's usage with the price of its model, so calls this fallback answers are counted at that price.`, model.path, 'info');
  } else if (budget.usd === undefined) {
    out.add('unpriced-model', `${source} has no price for ${name}: reports will show cost.complete false. Pass deps.priceProvider to price it.`, 'model', 'info');
  } else if (budget.reject) {
    out.add('unpriced-model', `${source} has no price for ${name}, and budget.unknownPrice 'reject' refuses such a run: pass deps.priceProvider that prices it, or use a priced model.`, 'budget.unknownPrice', 'error');
  } else {
    out.add('unpriced-model', `${source} has no price for ${name}: the USD budget will not count its calls (token limits still apply). Pass deps.priceProvider, or set budget.unknownPrice: 'reject' to refuse it.`, 'budget.usd', 'warning');
  }
  return true;
}

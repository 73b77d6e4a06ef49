/**
 * The execution context: what runs under it may do (models, tools, approvals,
 * depth, deadline) and the budget ledger they spend from. A child context
 * only narrows its parent; it charges the same ledger under its own scope, so
 * every ceiling on its path counts its calls.
 */
import { parseModelKey } from '../models/resolve.js';
import { ExecutionPolicyError, InvalidOptionsError } from '../errors/index.js';
import { createInMemoryLedger, totalsOf } from './ledger.js';
import { bundledPrice, contextPriceOf } from './prices.js';
import type {
  BudgetLedger, BudgetOptions, Ceiling, ChildContextOptions, EstimateRequest, ExecutionContextOptions, LedgerTotals, ModelPrice,
  PriceTable, RequireApproval, UsageEstimate,
} from './types.js';

const CONTEXT = Symbol.for('cairn.execution-context');
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
/** Output tokens an estimate assumes when the run sets no maxOutputTokens and the model's output limit is unknown. */
export const DEFAULT_ESTIMATED_OUTPUT_TOKENS = 1024;

/** The policy a context enforces, with everything it inherited resolved. */
export interface ExecutionPolicy {
  allowedModels: readonly string[] | null;
  allowedTools: readonly string[] | null;
  requireApproval: true | readonly string[];
  /** Levels of children still allowed below this context (null: unlimited). */
  maxDepth: number | null;
  deadline: number | null;
  /** The ceilings on the path, root first. */
  ceilings: readonly Ceiling[];
}

export interface ExecutionContext {
  /** The context's scope in the ledger: its name and its parents' (`root/research`). */
  readonly path: string;
  /** 0 for a root context, one more for each `.child()`. */
  readonly depth: number;
  readonly parent: ExecutionContext | null;
  readonly policy: ExecutionPolicy;
  readonly ledger: BudgetLedger;
  /** The root's own `prices` (they override the bundled table). */
  readonly prices: Readonly<PriceTable>;
  /** Whether models `prices` does not list take the bundled table's price. */
  readonly bundledPrices: boolean;
  readonly budget: Readonly<BudgetOptions>;
  readonly now: () => number;
  /** A context that narrows this one (a widening option is refused with ExecutionPolicyError `policy_widened`). */
  child(options?: ChildContextOptions): ExecutionContext;
  allowsModel(model: { provider: string; modelId: string } | string): boolean;
  allowsTool(name: string): boolean;
  /** The context holds calls of this tool for a verdict. */
  requiresApproval(toolName: string): boolean;
  /** USD per million tokens of the model (its own `prices` entry, else the bundled table's), or null when it has no price. */
  priceOf(model: { provider: string; modelId: string }): ModelPrice | null;
  /** What one call of the model is expected to use: what its admission reserves. */
  estimate(input: EstimateRequest): UsageEstimate;
  /** The ledger's totals under this context's scope (its children included). */
  accounting(): Promise<LedgerTotals>;
}

/** True for a context made by {@link createExecutionContext} (or its `.child()`), from any copy of the package. */
export function isExecutionContext(value: unknown): value is ExecutionContext {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[CONTEXT] === true;
}

const widened = (what: string) => new ExecutionPolicyError('policy_widened', `A child context cannot widen its parent: ${what}.`);

function names(label: string, value: unknown): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v !== '')) {
    throw new InvalidOptionsError(`${label} must be an array of non-empty strings.`);
  }
  return Object.freeze([...new Set(value as string[])]);
}

function positive(label: string, value: unknown, integer: boolean): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (integer && !Number.isInteger(value))) {
    throw new InvalidOptionsError(`${label} must be a ${integer ? 'whole number' : 'number'} of at least 0, got ${JSON.stringify(value)}.`);
  }
  return value;
}

function checkApproval(value: unknown): RequireApproval | undefined {
  if (value === undefined || typeof value === 'boolean') return value;
  return names('requireApproval', value);
}

function checkBudget(budget: unknown, child: boolean): BudgetOptions {
  if (budget === undefined) return {};
  if (!budget || typeof budget !== 'object' || Array.isArray(budget)) throw new InvalidOptionsError('budget must be { usd?, tokens?, estimate?, unknownPrice? }.');
  const b = budget as BudgetOptions;
  if (child && (b as { estimate?: unknown }).estimate !== undefined) throw new InvalidOptionsError('budget.estimate is set on the root context; a child uses it.');
  const usd = positive('budget.usd', b.usd, false);
  const tokens = positive('budget.tokens', b.tokens, true);
  if (b.unknownPrice !== undefined && b.unknownPrice !== 'hold' && b.unknownPrice !== 'reject') {
    throw new InvalidOptionsError("budget.unknownPrice must be 'hold' or 'reject'.");
  }
  const estimate = b.estimate;
  if (estimate !== undefined && typeof estimate !== 'function') {
    if (!estimate || typeof estimate !== 'object') throw new InvalidOptionsError('budget.estimate must be a function or { inputTokens?, outputTokens? }.');
    positive('budget.estimate.inputTokens', estimate.inputTokens, true);
    positive('budget.estimate.outputTokens', estimate.outputTokens, true);
  }
  return {
    ...(usd !== undefined ? { usd } : {}),
    ...(tokens !== undefined ? { tokens } : {}),
    ...(b.unknownPrice !== undefined ? { unknownPrice: b.unknownPrice } : {}),
    ...(estimate !== undefined ? { estimate } : {}),
  };
}

function checkPrices(prices: unknown): PriceTable {
  if (prices === undefined) return {};
  if (!prices || typeof prices !== 'object' || Array.isArray(prices)) throw new InvalidOptionsError('prices must be an object of { input, output } by model.');
  const out: PriceTable = {};
  for (const [model, price] of Object.entries(prices as Record<string, ModelPrice>)) {
    positive(`prices["${model}"].input`, price?.input, false);
    positive(`prices["${model}"].output`, price?.output, false);
    if (price?.input === undefined || price.output === undefined) throw new InvalidOptionsError(`prices["${model}"] needs input and output (USD per million tokens).`);
    const cacheRead = positive(`prices["${model}"].cacheRead`, price.cacheRead, false);
    const cacheWrite = positive(`prices["${model}"].cacheWrite`, price.cacheWrite, false);
    const limit = positive(`prices["${model}"].maxOutputTokens`, price.maxOutputTokens, true);
    if (limit === 0) throw new InvalidOptionsError(`prices["${model}"].maxOutputTokens must be at least 1.`);
    out[model] = Object.freeze({
      input: price.input,
      output: price.output,
      ...(cacheRead !== undefined ? { cacheRead } : {}),
      ...(cacheWrite !== undefined ? { cacheWrite } : {}),
      ...(limit !== undefined ? { maxOutputTokens: limit } : {}),
    });
  }
  return Object.freeze(out);
}

/**
 * The price of a model under a root's tables: its own entry (by
 * `provider:modelId`, then bare `modelId`), which keeps the bundled output
 * limit when it sets none, else the bundled entry.
 */
function lookUpPrice(prices: PriceTable, bundled: boolean, provider: string, modelId: string): ModelPrice | null {
  const own = prices[`${provider}:${modelId}`] ?? prices[modelId];
  const listed = bundled ? bundledPrice(provider, modelId) : undefined;
  if (own) {
    // The output limit is a fact of the model, not of its price: an override without one keeps the table's.
    const limit = own.maxOutputTokens ?? listed?.maxOutputTokens;
    return limit !== undefined && own.maxOutputTokens === undefined ? { ...own, maxOutputTokens: limit } : own;
  }
  return listed ? contextPriceOf(listed) : null;
}

/** `model` matches an allowlist entry: `provider:modelId`, a bare `modelId`, or `provider:*`. */
function modelMatches(entry: string, provider: string, modelId: string): boolean {
  if (entry === `${provider}:${modelId}` || entry === modelId) return true;
  return entry.endsWith(':*') && entry.slice(0, -2) === provider;
}

function splitModel(model: { provider: string; modelId: string } | string): { provider: string; modelId: string } {
  return typeof model === 'string' ? parseModelKey(model) : model;
}

interface Resolved {
  path: string;
  depth: number;
  parent: ExecutionContext | null;
  policy: ExecutionPolicy;
  ledger: BudgetLedger;
  prices: PriceTable;
  bundledPrices: boolean;
  budget: BudgetOptions;
  now: () => number;
}

function build(resolved: Resolved): ExecutionContext {
  let children = 0;
  const context: ExecutionContext & { [CONTEXT]: true } = {
    [CONTEXT]: true,
    path: resolved.path,
    depth: resolved.depth,
    parent: resolved.parent,
    policy: resolved.policy,
    ledger: resolved.ledger,
    prices: resolved.prices,
    bundledPrices: resolved.bundledPrices,
    budget: resolved.budget,
    now: resolved.now,
    child(options = {}) {
      children += 1;
      return build(narrow(context, options, children));
    },
    allowsModel(model) {
      const { provider, modelId } = splitModel(model);
      const list = resolved.policy.allowedModels;
      return list === null || list.some((entry) => modelMatches(entry, provider, modelId));
    },
    allowsTool(name) {
      const list = resolved.policy.allowedTools;
      return list === null || list.includes(name);
    },
    requiresApproval(toolName) {
      const rule = resolved.policy.requireApproval;
      return rule === true || rule.includes(toolName);
    },
    priceOf(model) {
      return lookUpPrice(resolved.prices, resolved.bundledPrices, model.provider, model.modelId);
    },
    estimate(request) {
      const { provider, modelId } = splitModel(request.model);
      const outputLimit = lookUpPrice(resolved.prices, resolved.bundledPrices, provider, modelId)?.maxOutputTokens ?? null;
      const input = { ...request, requestBytes: request.requestBytes ?? request.requestChars, outputLimit };
      const rule = resolved.budget.estimate;
      if (typeof rule === 'function') {
        const out = rule(input);
        return { inputTokens: Math.max(0, Math.ceil(out.inputTokens)), outputTokens: Math.max(0, Math.ceil(out.outputTokens)) };
      }
      // Every byte of what is sent as at most one token, and the most the call may write: see docs/policy.md, "Estimates".
      return {
        inputTokens: rule?.inputTokens ?? Math.ceil(input.requestBytes),
        outputTokens: rule?.outputTokens ?? input.maxOutputTokens ?? outputLimit ?? DEFAULT_ESTIMATED_OUTPUT_TOKENS,
      };
    },
    async accounting() {
      return totalsOf(await resolved.ledger.entries(resolved.path), resolved.path);
    },
  };
  return Object.freeze(context);
}

/**
 * Binds model and tool allowlists, approval requirements, a maximum depth, a
 * deadline and a budget (USD and tokens, with prices) for every run given it
 * as `execution`, and for every context made from it with `.child()`.
 *
 * Prices come from the bundled table (`BUNDLED_PRICES`); `prices` overrides
 * it per model. Under a USD ceiling, a model with no price is refused before
 * its call unless `budget.unknownPrice` is `'hold'`.
 *
 * @example
 * const execution = createExecutionContext({
 *   allowedTools: ['search'],
 *   budget: { usd: 0.5 },
 *   // Your negotiated price for one model; every other model keeps the bundled one.
 *   prices: { 'openai:gpt-5.2': { input: 1.25, output: 10 } },
 * });
 * await runAgent({ model, prompt, tools, execution });
 */
export function createExecutionContext(options: ExecutionContextOptions = {}): ExecutionContext {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('createExecutionContext takes an options object.');
  const name = options.name ?? 'root';
  if (typeof name !== 'string' || !NAME.test(name)) throw new InvalidOptionsError(`name must match ${NAME}, got ${JSON.stringify(name)}.`);
  const budget = checkBudget(options.budget, false);
  const maxDepth = positive('maxDepth', options.maxDepth, true);
  const deadline = options.deadline;
  if (deadline !== undefined && (typeof deadline !== 'number' || !Number.isFinite(deadline))) {
    throw new InvalidOptionsError('deadline must be an absolute time in milliseconds.');
  }
  const ledger = options.ledger ?? createInMemoryLedger(name);
  if (typeof ledger?.admit !== 'function' || typeof ledger.settle !== 'function' || typeof ledger.entries !== 'function' || typeof ledger.restore !== 'function') {
    throw new InvalidOptionsError('ledger must implement admit, settle, entries and restore.');
  }
  const clock = options.clock;
  if (clock !== undefined && typeof clock?.now !== 'function') throw new InvalidOptionsError('clock must have now().');
  const approval = checkApproval(options.requireApproval);
  if (options.bundledPrices !== undefined && typeof options.bundledPrices !== 'boolean') throw new InvalidOptionsError('bundledPrices must be a boolean.');
  return build({
    path: name,
    depth: 0,
    parent: null,
    policy: Object.freeze({
      allowedModels: names('allowedModels', options.allowedModels) ?? null,
      allowedTools: names('allowedTools', options.allowedTools) ?? null,
      requireApproval: approval === true ? true : approval === false || approval === undefined ? Object.freeze([]) : approval,
      maxDepth: maxDepth ?? null,
      deadline: deadline ?? null,
      ceilings: Object.freeze(budget.usd !== undefined || budget.tokens !== undefined ? [{ scope: name, ...ceilingOf(budget) }] : []),
    }),
    ledger,
    prices: checkPrices(options.prices),
    bundledPrices: options.bundledPrices ?? true,
    budget,
    now: clock ? () => clock.now() : () => Date.now(),
  });
}

const ceilingOf = (b: BudgetOptions) => ({ ...(b.usd !== undefined ? { usd: b.usd } : {}), ...(b.tokens !== undefined ? { tokens: b.tokens } : {}) });

/** The child's policy, or a refusal when any option would widen what the parent allows. */
function narrow(parent: ExecutionContext, options: ChildContextOptions, index: number): Resolved {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('child takes an options object.');
  for (const key of ['ledger', 'prices', 'bundledPrices', 'clock'] as const) {
    if ((options as Record<string, unknown>)[key] !== undefined) throw widened(`${key} belongs to the root context`);
  }
  const p = parent.policy;
  if (p.maxDepth !== null && p.maxDepth < 1) throw new ExecutionPolicyError('max_depth_exceeded', `Context ${parent.path} allows no child contexts (maxDepth reached).`);
  const name = options.name ?? `c${index}`;
  if (typeof name !== 'string' || !NAME.test(name)) throw new InvalidOptionsError(`name must match ${NAME}, got ${JSON.stringify(name)}.`);
  const models = names('allowedModels', options.allowedModels);
  if (models && p.allowedModels) {
    const extra = models.filter((m) => !p.allowedModels!.some((entry) => entry === m || (m.includes(':') && !m.endsWith(':*') && modelMatches(entry, ...splitPair(m)))));
    if (extra.length > 0) throw widened(`allowedModels adds ${extra.join(', ')}`);
  }
  const tools = names('allowedTools', options.allowedTools);
  if (tools && p.allowedTools) {
    const extra = tools.filter((t) => !p.allowedTools!.includes(t));
    if (extra.length > 0) throw widened(`allowedTools adds ${extra.join(', ')}`);
  }
  const approval = checkApproval(options.requireApproval);
  if (approval !== undefined && p.requireApproval === true && approval !== true) throw widened('requireApproval drops approvals the parent requires');
  // A child's list adds to the parent's: it can hold more tools, never fewer.
  if (approval === false && p.requireApproval !== true && p.requireApproval.length > 0) throw widened('requireApproval: false drops approvals the parent requires');
  const maxDepth = positive('maxDepth', options.maxDepth, true);
  const inherited = p.maxDepth === null ? null : p.maxDepth - 1;
  if (maxDepth !== undefined && inherited !== null && maxDepth > inherited) throw widened(`maxDepth ${maxDepth} is more than the ${inherited} left`);
  const deadline = options.deadline;
  if (deadline !== undefined && (typeof deadline !== 'number' || !Number.isFinite(deadline))) throw new InvalidOptionsError('deadline must be an absolute time in milliseconds.');
  if (deadline !== undefined && p.deadline !== null && deadline > p.deadline) throw widened('deadline is later than the parent\'s');
  const budget = checkBudget(options.budget, true);
  for (const unit of ['usd', 'tokens'] as const) {
    const own = budget[unit];
    const above = [...p.ceilings].reverse().find((c) => c[unit] !== undefined)?.[unit];
    if (own !== undefined && above !== undefined && own > above) throw widened(`budget.${unit} ${own} is more than the ${above} above it`);
  }
  // Unset means 'reject': a child cannot hold what its parent never opted into holding.
  if (budget.unknownPrice === 'hold' && (parent.budget.unknownPrice ?? 'reject') === 'reject') throw widened("budget.unknownPrice 'hold' where the parent rejects");
  const path = `${parent.path}/${name}`;
  const ceilings = [...p.ceilings];
  if (budget.usd !== undefined || budget.tokens !== undefined) ceilings.push({ scope: path, ...ceilingOf(budget) });
  return {
    path,
    depth: parent.depth + 1,
    parent,
    policy: Object.freeze({
      allowedModels: models ?? p.allowedModels,
      allowedTools: tools ?? p.allowedTools,
      requireApproval: approval === true ? true : Array.isArray(approval) ? Object.freeze([...new Set([...p.requireApproval as string[], ...approval])]) : p.requireApproval,
      maxDepth: maxDepth ?? inherited,
      deadline: deadline ?? p.deadline,
      ceilings: Object.freeze(ceilings),
    }),
    ledger: parent.ledger,
    prices: parent.prices,
    bundledPrices: parent.bundledPrices,
    budget: { ...parent.budget, ...(budget.unknownPrice !== undefined ? { unknownPrice: budget.unknownPrice } : {}) },
    now: parent.now,
  };
}

function splitPair(model: string): [string, string] {
  const { provider, modelId } = splitModel(model);
  return [provider, modelId];
}

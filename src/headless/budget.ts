/**
 * The headless `budget` as an execution context: the leg's model calls are
 * admitted by the engine's budget ledger (docs/policy.md), not by a model
 * wrapper of headless's own. The ledger is the context's in-memory one; the
 * run checkpoints it with its record and a resume restores it, so the budget
 * counts every leg.
 *
 * Each call is admitted with an estimate of one input token, so a call is
 * refused once the run has spent its budget (or more), as the headless budget
 * always did, instead of refusing a call whose full estimate might pass it.
 *
 * Prices: with the bundled price provider (the default) the context prices
 * from the same bundled table, every model of the run (fallbacks included)
 * and its cached input at the cache prices, so the ledger and the report's
 * cost agree. A price provider of your own is read for the run's model per
 * million input, output, cache-read and cache-write tokens, and the bundled
 * table is then not used at all, so the ledger never prices a model the
 * provider does not.
 */
import { createExecutionContext, type ExecutionContext, type ModelPrice, type PriceTable } from '../policy/index.js';
import type { LanguageModel, Usage } from '../models/types.js';
import { bundledPrice, bundledPriceProvider, priceOrNull } from './prices.js';
import type { HeadlessBudget, PriceProvider } from './types.js';

/** The context's name, and so the scope of the run's ledger in its record. */
export const HEADLESS_CONTEXT = 'headless';

const usageOf = (inputTokens: number, outputTokens: number): Usage => ({ inputTokens, outputTokens, totalTokens: inputTokens + outputTokens });

const M = 1_000_000;

/** The model's price read from a price provider (USD per million tokens of each kind), or an empty table when it has none. */
async function priceTableOf(priceProvider: PriceProvider, model: LanguageModel): Promise<PriceTable> {
  const input = await priceOrNull(priceProvider, model, usageOf(M, 0));
  const output = await priceOrNull(priceProvider, model, usageOf(0, M));
  if (input === null || output === null) return {};
  const cacheRead = await priceOrNull(priceProvider, model, { ...usageOf(M, 0), cacheReadTokens: M });
  const cacheWrite = await priceOrNull(priceProvider, model, { ...usageOf(M, 0), cacheWriteTokens: M });
  const price: ModelPrice = {
    input, output, ...(cacheRead !== null ? { cacheRead } : {}), ...(cacheWrite !== null ? { cacheWrite } : {}),
  };
  return { [`${model.provider}:${model.modelId}`]: price };
}

/** Whether the leg's model has a price: the bundled table's, or the provider's. */
async function isPriced(priceProvider: PriceProvider, model: LanguageModel): Promise<boolean> {
  if (priceProvider === bundledPriceProvider) return bundledPrice(model.provider, model.modelId) !== undefined;
  return (await priceOrNull(priceProvider, model, usageOf(M, M))) !== null;
}

export interface HeadlessExecutionOptions {
  budget: HeadlessBudget | undefined;
  model: LanguageModel;
  priceProvider: PriceProvider;
  clock: { now(): number } | undefined;
  /** The stored run this leg resumes: whether its record holds a ledger, and what it used before. */
  stored?: { ledger: boolean; usage: Usage; runId: string } | undefined;
}

/**
 * The leg's execution context, or undefined when the leg needs none: no
 * budget, and no ledger in the stored run (a run that checkpointed one must
 * resume under a context of the same scope, budget or not).
 */
export async function headlessExecution(options: HeadlessExecutionOptions): Promise<ExecutionContext | undefined> {
  const { budget, model, stored, priceProvider } = options;
  if (!budget && !stored?.ledger) return undefined;
  const bundled = priceProvider === bundledPriceProvider;
  // An unpriced model has no USD to count: the leg already warned (unpriced-model) or was refused ('reject', in run.ts) for it,
  // so its context carries no USD ceiling to hold its calls against, and only its tokens are counted.
  const usd = budget?.usd !== undefined && (await isPriced(priceProvider, model)) ? budget.usd : undefined;
  const execution = createExecutionContext({
    name: HEADLESS_CONTEXT,
    ...(bundled ? {} : { prices: await priceTableOf(priceProvider, model), bundledPrices: false }),
    budget: {
      ...(usd !== undefined ? { usd } : {}),
      ...(budget?.tokens !== undefined ? { tokens: budget.tokens } : {}),
      // A fallback the prices do not know is held (its tokens counted), and the engine warns on the stream.
      unknownPrice: 'hold',
      estimate: { inputTokens: 1, outputTokens: 0 },
    },
    ...(options.clock ? { clock: options.clock } : {}),
  });
  // A run whose earlier legs ran without a budget has no ledger: what they used is what the budget starts from.
  if (stored && !stored.ledger && stored.usage.totalTokens + stored.usage.inputTokens + stored.usage.outputTokens > 0) {
    const spent = await priceOrNull(priceProvider, model, stored.usage);
    const tokens = stored.usage.inputTokens + stored.usage.outputTokens;
    await execution.ledger.restore([{
      id: `${stored.runId}:before-budget`, scope: HEADLESS_CONTEXT, runId: stored.runId, model: `${model.provider}:${model.modelId}`,
      status: 'committed', estimate: { usd: spent, tokens }, usd: spent, tokens, at: execution.now(),
    }]);
  }
  return execution;
}

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
 * Prices come from the price provider, read per million input and output
 * tokens; the report's cost is still priced by the provider itself.
 */
import { createExecutionContext, type ExecutionContext, type PriceTable } from '../policy/index.js';
import type { LanguageModel, Usage } from '../models/types.js';
import { priceOrNull } from './prices.js';
import type { HeadlessBudget, PriceProvider } from './types.js';

/** The context's name, and so the scope of the run's ledger in its record. */
export const HEADLESS_CONTEXT = 'headless';

const usageOf = (inputTokens: number, outputTokens: number): Usage => ({ inputTokens, outputTokens, totalTokens: inputTokens + outputTokens });

/** USD per million input and output tokens of the model, or null when the provider does not price it. */
async function priceTableOf(priceProvider: PriceProvider, model: LanguageModel): Promise<PriceTable> {
  const input = await priceOrNull(priceProvider, model, usageOf(1_000_000, 0));
  const output = await priceOrNull(priceProvider, model, usageOf(0, 1_000_000));
  if (input === null || output === null || !(input >= 0) || !(output >= 0)) return {};
  return { [`${model.provider}:${model.modelId}`]: { input, output } };
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
  const { budget, model, stored } = options;
  if (!budget && !stored?.ledger) return undefined;
  const execution = createExecutionContext({
    name: HEADLESS_CONTEXT,
    prices: await priceTableOf(options.priceProvider, model),
    budget: {
      ...(budget?.usd !== undefined ? { usd: budget.usd } : {}),
      ...(budget?.tokens !== undefined ? { tokens: budget.tokens } : {}),
      // 'reject' refuses the leg before anything is written (see run.ts); an unpriced model is held here, its tokens counted.
      unknownPrice: 'hold',
      estimate: { inputTokens: 1, outputTokens: 0 },
    },
    ...(options.clock ? { clock: options.clock } : {}),
  });
  // A run whose earlier legs ran without a budget has no ledger: what they used is what the budget starts from.
  if (stored && !stored.ledger && stored.usage.totalTokens + stored.usage.inputTokens + stored.usage.outputTokens > 0) {
    const usd = await priceOrNull(options.priceProvider, model, stored.usage);
    const tokens = stored.usage.inputTokens + stored.usage.outputTokens;
    await execution.ledger.restore([{
      id: `${stored.runId}:before-budget`, scope: HEADLESS_CONTEXT, runId: stored.runId, model: `${model.provider}:${model.modelId}`,
      status: 'committed', estimate: { usd, tokens }, usd, tokens, at: execution.now(),
    }]);
  }
  return execution;
}

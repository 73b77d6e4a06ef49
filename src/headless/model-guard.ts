/**
 * Wraps a leg's model with the headless budget check. The wrapper keeps the
 * model's provider, id and protocol, so the run's binding does not see it.
 * (The circuit breaker lives in the model layer: `deps.breakerStore` is passed
 * on to the engine.)
 */
import { BudgetError } from '../errors/index.js';
import {
  addUsage, emptyUsage, type LanguageModel, type ModelRequest, type ModelResponse, type ModelStreamPart, type Usage,
} from '../models/types.js';
import { priceOrNull } from './prices.js';
import type { HeadlessBudget, PriceProvider } from './types.js';

export interface GuardOptions {
  budget: HeadlessBudget | undefined;
  /** Whether the price provider prices this model; a USD budget does not count an unpriced model's calls. */
  priced: boolean;
  priceProvider: PriceProvider;
  /** The run's usage before this leg. */
  usageBefore: Usage;
  now: () => number;
}

/** The leg's model behind the breaker and the budget; it keeps the inner model's provider and id. */
export function guardModel(inner: LanguageModel, options: GuardOptions): LanguageModel {
  let leg = emptyUsage();
  const { budget } = options;

  async function admit(): Promise<void> {
    if (!budget) return;
    const used = addUsage(options.usageBefore, leg);
    if (budget.tokens !== undefined && used.totalTokens >= budget.tokens) {
      throw new BudgetError('budget_exceeded', `The run used ${used.totalTokens} tokens of its budget of ${budget.tokens}; no further model call starts.`);
    }
    if (budget.usd !== undefined && options.priced) {
      const usd = await priceOrNull(options.priceProvider, inner, used);
      if (usd !== null && usd >= budget.usd) {
        throw new BudgetError('budget_exceeded', `The run spent $${usd.toFixed(6)} of its budget of $${budget.usd}; no further model call starts.`);
      }
    }
  }

  const model: LanguageModel = {
    specificationVersion: inner.specificationVersion,
    provider: inner.provider,
    modelId: inner.modelId,
    ...(inner.protocol !== undefined ? { protocol: inner.protocol } : {}),
    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      await admit();
      const response = await inner.doGenerate(request);
      if (response && typeof response === 'object' && response.usage) leg = addUsage(leg, response.usage);
      return response;
    },
  };
  if (inner.doStream) {
    const stream = inner.doStream.bind(inner);
    (model as { doStream?: LanguageModel['doStream'] }).doStream = async function* (request: ModelRequest): AsyncIterable<ModelStreamPart> {
      await admit();
      for await (const part of stream(request)) {
        if (part?.type === 'finish' && part.usage) leg = addUsage(leg, part.usage);
        yield part;
      }
    };
  }
  return model;
}

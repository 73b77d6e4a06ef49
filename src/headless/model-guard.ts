/**
 * Wraps a leg's model with the headless admission checks: the circuit breaker
 * the workers share, and the run's budget. The wrapper keeps the model's
 * provider and id, so the run's binding does not see it.
 */
import { BreakerOpenError, BudgetError } from '../errors/index.js';
import { transientCause } from '../models/transient.js';
import {
  addUsage, emptyUsage, type LanguageModel, type ModelRequest, type ModelResponse, type ModelStreamPart, type Usage,
} from '../models/types.js';
import { priceOrNull } from './prices.js';
import type { BreakerState, BreakerStore, HeadlessBudget, PriceProvider } from './types.js';

export const DEFAULT_BREAKER_THRESHOLD = 5;
export const DEFAULT_BREAKER_COOLDOWN_MS = 60_000;

export interface GuardOptions {
  budget: HeadlessBudget | undefined;
  /** Whether the price provider prices this model; a USD budget does not count an unpriced model's calls. */
  priced: boolean;
  priceProvider: PriceProvider;
  /** The run's usage before this leg. */
  usageBefore: Usage;
  breakerStore: BreakerStore | undefined;
  breaker: { threshold: number; cooldownMs: number };
  now: () => number;
}

/** The leg's model behind the breaker and the budget; it keeps the inner model's provider and id. */
export function guardModel(inner: LanguageModel, options: GuardOptions): LanguageModel {
  let leg = emptyUsage();
  const key = `${inner.provider}:${inner.modelId}`;
  const { budget, breakerStore } = options;

  async function admit(): Promise<void> {
    if (breakerStore) {
      const state = await breakerStore.get(key);
      const until = state?.cooldownUntil;
      if (typeof until === 'number' && until > options.now()) throw new BreakerOpenError(key, until);
    }
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

  async function settle(error: unknown | null, midStream: boolean): Promise<void> {
    if (!breakerStore) return;
    if (error === null) {
      await breakerStore.set(key, { failures: 0 });
      return;
    }
    if (error instanceof BreakerOpenError || transientCause(error, midStream) === null) return;
    const state: BreakerState | null | undefined = await breakerStore.get(key);
    const failures = (state?.failures ?? 0) + 1;
    await breakerStore.set(key, failures >= options.breaker.threshold
      ? { failures, cooldownUntil: options.now() + options.breaker.cooldownMs }
      : { failures });
  }

  const model: LanguageModel = {
    specificationVersion: inner.specificationVersion,
    provider: inner.provider,
    modelId: inner.modelId,
    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      await admit();
      let response: ModelResponse;
      try {
        response = await inner.doGenerate(request);
      } catch (error) {
        await settle(error, false);
        throw error;
      }
      leg = addUsage(leg, response.usage);
      await settle(null, false);
      return response;
    },
  };
  if (inner.doStream) {
    const stream = inner.doStream.bind(inner);
    (model as { doStream?: LanguageModel['doStream'] }).doStream = async function* (request: ModelRequest): AsyncIterable<ModelStreamPart> {
      await admit();
      let began = false;
      try {
        for await (const part of stream(request)) {
          began = true;
          if (part.type === 'finish') leg = addUsage(leg, part.usage);
          yield part;
        }
      } catch (error) {
        await settle(error, began);
        throw error;
      }
      await settle(null, began);
    };
  }
  return model;
}

/**
 * Pricing of a headless run's usage. The table is the one every execution
 * context uses (src/policy/prices.ts, where each price says where it was read
 * and when): headless re-exports it, so a report's cost and a context's ledger
 * price a model the same. A deployment that bills on other prices passes its
 * own `deps.priceProvider`.
 *
 * A run that failed over is priced per model: the run keeps its usage by the
 * model that answered (docs/headless.md, "Cost and budgets").
 */
import { BUNDLED_PRICES, bundledPrice, contextPriceOf, usdAt } from '../policy/prices.js';
import type { Usage } from '../models/types.js';
import type { ModelPrice, PriceProvider } from './types.js';

export { BUNDLED_PRICES, bundledPrice };

/**
 * USD for `usage` at `price`. Cache reads and writes are part of
 * `inputTokens`: they are charged at their own prices and the rest of the
 * input at the input price. Reasoning tokens are part of `outputTokens` and
 * cost what output costs, so they are not added again.
 *
 * @example
 * priceOf({ inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3 },
 *   { inputTokens: 1_000_000, cacheReadTokens: 800_000, outputTokens: 0, totalTokens: 1_000_000 }); // 0.84
 */
export function priceOf(price: ModelPrice, usage: Usage): number {
  return usdAt(contextPriceOf(price), usage);
}

/** The price provider used when `deps.priceProvider` is not given. */
export const bundledPriceProvider: PriceProvider = ({ provider, modelId, usage }) => {
  const price = bundledPrice(provider, modelId);
  return price ? priceOf(price, usage) : undefined;
};

/** USD for `usage`, or null when the provider has no price for the model (or returned something that is not a finite amount ≥ 0). Rejects when the provider throws (the doctor reports that). */
export async function priceUsage(
  provider: PriceProvider,
  model: { provider: string; modelId: string },
  usage: Usage,
): Promise<number | null> {
  const usd = await provider({ provider: model.provider, modelId: model.modelId, usage: { ...usage } });
  return typeof usd === 'number' && Number.isFinite(usd) && usd >= 0 ? usd : null;
}

/** Like {@link priceUsage}, for a run: a price provider that throws (a pricing service that is down) prices nothing, and the run goes on. */
export function priceOrNull(
  provider: PriceProvider,
  model: { provider: string; modelId: string },
  usage: Usage,
): Promise<number | null> {
  return priceUsage(provider, model, usage).catch(() => null);
}

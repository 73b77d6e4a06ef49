/**
 * The bundled price table and the pricing of a run's usage. Prices are USD per
 * million tokens, as providers list them for standard (non-batch) calls; they
 * change, so a deployment that bills on them should pass its own
 * `deps.priceProvider`.
 */
import type { Usage } from '../models/types.js';
import type { ModelPrice, PriceProvider } from './types.js';

/**
 * Keyed by `provider:modelId`; a key ending in `*` matches every model id with
 * that prefix. The scripted model costs nothing, so keyless runs are fully priced.
 */
export const BUNDLED_PRICES: Readonly<Record<string, ModelPrice>> = Object.freeze({
  'mock:*': { inputPerMTok: 0, outputPerMTok: 0 },
  'anthropic:claude-opus-4*': { inputPerMTok: 15, outputPerMTok: 75 },
  'anthropic:claude-sonnet-4*': { inputPerMTok: 3, outputPerMTok: 15 },
  'anthropic:claude-haiku-4*': { inputPerMTok: 1, outputPerMTok: 5 },
  'openai:gpt-4.1': { inputPerMTok: 2, outputPerMTok: 8 },
  'openai:gpt-4.1-mini': { inputPerMTok: 0.4, outputPerMTok: 1.6 },
  'openai:gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10 },
  'openai:gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 },
  'openai:gpt-5': { inputPerMTok: 1.25, outputPerMTok: 10 },
  'openai:gpt-5-mini': { inputPerMTok: 0.25, outputPerMTok: 2 },
  'google:gemini-2.5-pro': { inputPerMTok: 1.25, outputPerMTok: 10 },
  'google:gemini-2.5-flash': { inputPerMTok: 0.3, outputPerMTok: 2.5 },
});

/** The bundled price of a model, or undefined when the table does not list it. */
export function bundledPrice(provider: string, modelId: string): ModelPrice | undefined {
  const key = `${provider}:${modelId}`;
  const exact = BUNDLED_PRICES[key];
  if (exact) return exact;
  let best: { prefix: string; price: ModelPrice } | undefined;
  for (const [pattern, price] of Object.entries(BUNDLED_PRICES)) {
    if (!pattern.endsWith('*')) continue;
    const prefix = pattern.slice(0, -1);
    if (key.startsWith(prefix) && (!best || prefix.length > best.prefix.length)) best = { prefix, price };
  }
  return best?.price;
}

/** The price provider used when `deps.priceProvider` is not given. */
export const bundledPriceProvider: PriceProvider = ({ provider, modelId, usage }) => {
  const price = bundledPrice(provider, modelId);
  if (!price) return undefined;
  return (usage.inputTokens * price.inputPerMTok + usage.outputTokens * price.outputPerMTok) / 1_000_000;
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

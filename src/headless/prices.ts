/**
 * The bundled price table and the pricing of a run's usage. Prices are USD per
 * million tokens, as the providers list them for standard (non-batch,
 * non-priority) calls at the shortest context tier.
 *
 * They change, often, and none is checked live: a deployment that bills on
 * them should pass its own `deps.priceProvider`. Each group says where its
 * numbers were read (December 2026):
 *
 * - OpenAI: https://developers.openai.com/api/docs/pricing and each model's page
 *   (https://developers.openai.com/api/docs/models/<id>). Cached input is
 *   listed per model; OpenAI charges nothing extra to write its cache, so a
 *   cache write costs the input price.
 * - Anthropic: https://platform.claude.com/docs/en/about-claude/pricing. Cache
 *   writes are priced at the 5-minute rate (1.25x input), the default cache
 *   lifetime; 1-hour writes (2x input) are not told apart in `Usage`. Sonnet's
 *   long-context tier (prompts over 200K tokens) is not modelled.
 * - Google: https://ai.google.dev/gemini-api/docs/pricing. Cached input at the
 *   context-caching rate for prompts up to 200K tokens; the hourly storage of an
 *   explicit cache and Gemini 2.5 Pro's higher rate above 200K tokens are not
 *   modelled; no write surcharge.
 *
 * A run that failed over is priced per model: the run keeps its usage by the
 * model that answered (docs/headless.md, "Cost and budgets").
 */
import { canonicalProvider } from '../models/profiles.js';
import type { Usage } from '../models/types.js';
import type { ModelPrice, PriceProvider } from './types.js';

/** A price whose cache writes cost the input price (OpenAI, Google). */
const plain = (inputPerMTok: number, cacheReadPerMTok: number, outputPerMTok: number): ModelPrice => ({
  inputPerMTok, outputPerMTok, cacheReadPerMTok, cacheWritePerMTok: inputPerMTok,
});

/** Anthropic's shape: cache reads at 0.1x and 5-minute writes at 1.25x the input price. */
const claude = (inputPerMTok: number, outputPerMTok: number): ModelPrice => ({
  inputPerMTok, outputPerMTok, cacheReadPerMTok: inputPerMTok / 10, cacheWritePerMTok: inputPerMTok * 1.25,
});

/**
 * Keyed by `provider:modelId`. A dated snapshot (`gpt-4o-2024-08-06`,
 * `claude-sonnet-4-5-20250929`) takes the price of its alias; a key ending in
 * `*` matches every model id with that prefix. The scripted model costs
 * nothing, so keyless runs are fully priced.
 */
export const BUNDLED_PRICES: Readonly<Record<string, ModelPrice>> = Object.freeze({
  'mock:*': { inputPerMTok: 0, outputPerMTok: 0 },

  // ---- Anthropic. Opus dropped from $15/$75 to $5/$25 with 4.5.
  'anthropic:claude-opus-4-8': claude(5, 25),
  'anthropic:claude-opus-4-7': claude(5, 25),
  'anthropic:claude-opus-4-6': claude(5, 25),
  'anthropic:claude-opus-4-5': claude(5, 25),
  'anthropic:claude-opus-4-1': claude(15, 75),
  'anthropic:claude-opus-4-0': claude(15, 75),
  'anthropic:claude-opus-4': claude(15, 75),
  'anthropic:claude-sonnet-4-6': claude(3, 15),
  'anthropic:claude-sonnet-4-5': claude(3, 15),
  'anthropic:claude-sonnet-4-0': claude(3, 15),
  'anthropic:claude-sonnet-4': claude(3, 15),
  'anthropic:claude-haiku-4-5': claude(1, 5),

  // ---- OpenAI. The GPT-5 family caches at 0.1x, GPT-4.1 and o3/o4-mini at 0.25x, GPT-4o at 0.5x.
  'openai:gpt-5.2': plain(1.75, 0.175, 14),
  'openai:gpt-5.1': plain(1.25, 0.125, 10),
  'openai:gpt-5': plain(1.25, 0.125, 10),
  'openai:gpt-5-mini': plain(0.25, 0.025, 2),
  'openai:gpt-5-nano': plain(0.05, 0.005, 0.4),
  'openai:gpt-4.1': plain(2, 0.5, 8),
  'openai:gpt-4.1-mini': plain(0.4, 0.1, 1.6),
  'openai:gpt-4.1-nano': plain(0.1, 0.025, 0.4),
  'openai:gpt-4o': plain(2.5, 1.25, 10),
  // The first GPT-4o snapshot kept its launch price and predates prompt caching.
  'openai:gpt-4o-2024-05-13': { inputPerMTok: 5, outputPerMTok: 15 },
  'openai:gpt-4o-mini': plain(0.15, 0.075, 0.6),
  'openai:o3': plain(2, 0.5, 8),
  'openai:o3-mini': plain(1.1, 0.55, 4.4),
  'openai:o4-mini': plain(1.1, 0.275, 4.4),

  // ---- Google (prompts up to 200K tokens).
  'google:gemini-2.5-pro': plain(1.25, 0.125, 10),
  'google:gemini-2.5-flash': plain(0.3, 0.03, 2.5),
  'google:gemini-2.5-flash-lite': plain(0.1, 0.01, 0.4),
});

/** The alias of a dated snapshot id, or the id itself. */
function aliasOf(provider: string, modelId: string): string {
  const id = provider === 'google' ? modelId.replace(/^models\//, '') : modelId;
  return id.replace(/-\d{4}-\d{2}-\d{2}$/, '').replace(/-\d{8}$/, '');
}

/** The bundled price of a model, or undefined when the table does not list it. */
export function bundledPrice(provider: string, modelId: string): ModelPrice | undefined {
  const exact = BUNDLED_PRICES[`${provider}:${modelId}`];
  if (exact) return exact;
  const canonical = canonicalProvider(provider);
  const key = `${canonical}:${aliasOf(canonical, modelId)}`;
  const alias = BUNDLED_PRICES[key];
  if (alias) return alias;
  let best: { prefix: string; price: ModelPrice } | undefined;
  for (const [pattern, price] of Object.entries(BUNDLED_PRICES)) {
    if (!pattern.endsWith('*')) continue;
    const prefix = pattern.slice(0, -1);
    if (key.startsWith(prefix) && (!best || prefix.length > best.prefix.length)) best = { prefix, price };
  }
  return best?.price;
}

const count = (n: number | undefined) => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : 0);

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
  const read = count(usage.cacheReadTokens);
  const write = count(usage.cacheWriteTokens);
  // A provider that reports more cached tokens than input is charged for what it reported as cached.
  const fresh = Math.max(0, count(usage.inputTokens) - read - write);
  const usd = fresh * price.inputPerMTok
    + read * (price.cacheReadPerMTok ?? price.inputPerMTok)
    + write * (price.cacheWritePerMTok ?? price.inputPerMTok)
    + count(usage.outputTokens) * price.outputPerMTok;
  return usd / 1_000_000;
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

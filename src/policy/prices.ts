/**
 * The price table Cairn ships: what an execution context reserves and commits
 * at (docs/policy.md, "Prices") and what cairn/headless prices its reports
 * with (docs/headless.md, "Cost and budgets"). One table, so the two never
 * disagree about a model.
 *
 * Prices are USD per million tokens, as the providers list them for standard
 * (non-batch, non-priority) calls at the shortest context tier, and each
 * model's output limit is the most output tokens the provider lets one call
 * produce. None is checked live: they change, and a deployment that bills on
 * them should pass its own (`prices` of a context, `deps.priceProvider` of a
 * headless run). Where each group was read, in {@link PRICES_AS_OF}:
 *
 * - OpenAI: https://developers.openai.com/api/docs/pricing and each model's page
 *   (https://developers.openai.com/api/docs/models/<id>), which also gives its
 *   max output tokens. Cached input is listed per model; OpenAI charges nothing
 *   extra to write its cache, so a cache write costs the input price.
 * - Anthropic: https://platform.claude.com/docs/en/about-claude/pricing, and the
 *   max output of each model's overview page. Cache writes are priced at the
 *   5-minute rate (1.25x input), the default cache lifetime; 1-hour writes (2x
 *   input) are not told apart in `Usage`. Long-context tiers are not modelled.
 * - Google: https://ai.google.dev/gemini-api/docs/pricing and
 *   https://ai.google.dev/gemini-api/docs/models (output token limit). Cached
 *   input at the context-caching rate for prompts up to 200K tokens; the hourly
 *   storage of an explicit cache and Gemini 2.5 Pro's higher rate above 200K
 *   tokens are not modelled; no write surcharge.
 */
import { canonicalProvider } from '../models/profiles.js';
import type { ModelPrice } from './types.js';

/** The month the bundled prices and output limits were read from the providers' pages. */
export const PRICES_AS_OF = '2026-12';

/** One model of the bundled table: USD per million tokens, and the model's documented output limit. */
export interface ListedPrice {
  inputPerMTok: number;
  outputPerMTok: number;
  /** Input tokens read from the provider's prompt cache. @default inputPerMTok */
  cacheReadPerMTok?: number;
  /** Input tokens written to the prompt cache. @default inputPerMTok */
  cacheWritePerMTok?: number;
  /** The most output tokens the provider lets one call of the model produce. */
  maxOutputTokens?: number;
}

/** A price whose cache writes cost the input price (OpenAI, Google). */
const plain = (inputPerMTok: number, cacheReadPerMTok: number, outputPerMTok: number, maxOutputTokens: number): ListedPrice => ({
  inputPerMTok, outputPerMTok, cacheReadPerMTok, cacheWritePerMTok: inputPerMTok, maxOutputTokens,
});

/** Anthropic's shape: cache reads at 0.1x and 5-minute writes at 1.25x the input price. */
const claude = (inputPerMTok: number, outputPerMTok: number, maxOutputTokens: number): ListedPrice => ({
  inputPerMTok, outputPerMTok, cacheReadPerMTok: inputPerMTok / 10, cacheWritePerMTok: inputPerMTok * 1.25, maxOutputTokens,
});

/**
 * Keyed as the providers' models name themselves: `${model.provider}:${model.modelId}`
 * (`openai:gpt-4.1` for `createOpenAI().chat('gpt-4.1')` and `.responses('gpt-4.1')`,
 * `anthropic:claude-sonnet-4-5`, `google:gemini-2.5-flash`). A dated snapshot
 * (`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`) takes the price of its
 * alias; a key ending in `*` matches every model id with that prefix. The
 * scripted model costs nothing and has no output limit.
 */
export const BUNDLED_PRICES: Readonly<Record<string, ListedPrice>> = Object.freeze({
  'mock:*': { inputPerMTok: 0, outputPerMTok: 0 },

  // ---- Anthropic. Opus dropped from $15/$75 to $5/$25 with 4.5; the 4.6 models write up to 128K tokens.
  'anthropic:claude-opus-4-8': claude(5, 25, 128_000),
  'anthropic:claude-opus-4-7': claude(5, 25, 128_000),
  'anthropic:claude-opus-4-6': claude(5, 25, 128_000),
  'anthropic:claude-opus-4-5': claude(5, 25, 64_000),
  'anthropic:claude-opus-4-1': claude(15, 75, 32_000),
  'anthropic:claude-opus-4-0': claude(15, 75, 32_000),
  'anthropic:claude-opus-4': claude(15, 75, 32_000),
  'anthropic:claude-sonnet-4-6': claude(3, 15, 128_000),
  'anthropic:claude-sonnet-4-5': claude(3, 15, 64_000),
  'anthropic:claude-sonnet-4-0': claude(3, 15, 64_000),
  'anthropic:claude-sonnet-4': claude(3, 15, 64_000),
  'anthropic:claude-haiku-4-5': claude(1, 5, 64_000),

  // ---- OpenAI. The GPT-5 family caches at 0.1x, GPT-4.1 and o3/o4-mini at 0.25x, GPT-4o at 0.5x.
  'openai:gpt-5.2': plain(1.75, 0.175, 14, 128_000),
  'openai:gpt-5.1': plain(1.25, 0.125, 10, 128_000),
  'openai:gpt-5': plain(1.25, 0.125, 10, 128_000),
  'openai:gpt-5-mini': plain(0.25, 0.025, 2, 128_000),
  'openai:gpt-5-nano': plain(0.05, 0.005, 0.4, 128_000),
  'openai:gpt-4.1': plain(2, 0.5, 8, 32_768),
  'openai:gpt-4.1-mini': plain(0.4, 0.1, 1.6, 32_768),
  'openai:gpt-4.1-nano': plain(0.1, 0.025, 0.4, 32_768),
  'openai:gpt-4o': plain(2.5, 1.25, 10, 16_384),
  // The first GPT-4o snapshot kept its launch price, predates prompt caching and writes at most 4,096 tokens.
  'openai:gpt-4o-2024-05-13': { inputPerMTok: 5, outputPerMTok: 15, maxOutputTokens: 4_096 },
  'openai:gpt-4o-mini': plain(0.15, 0.075, 0.6, 16_384),
  'openai:o3': plain(2, 0.5, 8, 100_000),
  'openai:o3-mini': plain(1.1, 0.55, 4.4, 100_000),
  'openai:o4-mini': plain(1.1, 0.275, 4.4, 100_000),

  // ---- Google (prompts up to 200K tokens).
  'google:gemini-2.5-pro': plain(1.25, 0.125, 10, 65_536),
  'google:gemini-2.5-flash': plain(0.3, 0.03, 2.5, 65_536),
  'google:gemini-2.5-flash-lite': plain(0.1, 0.01, 0.4, 65_536),
});

/** The alias of a dated snapshot id, or the id itself. */
function aliasOf(provider: string, modelId: string): string {
  const id = provider === 'google' ? modelId.replace(/^models\//, '') : modelId;
  return id.replace(/-\d{4}-\d{2}-\d{2}$/, '').replace(/-\d{8}$/, '');
}

/**
 * The bundled entry of a model, or undefined when the table does not list it.
 *
 * @example
 * bundledPrice('openai', 'gpt-4.1-2025-04-14')?.maxOutputTokens // 32768, the alias's entry
 */
export function bundledPrice(provider: string, modelId: string): ListedPrice | undefined {
  const exact = BUNDLED_PRICES[`${provider}:${modelId}`];
  if (exact) return exact;
  const canonical = canonicalProvider(provider);
  const key = `${canonical}:${aliasOf(canonical, modelId)}`;
  const alias = BUNDLED_PRICES[key];
  if (alias) return alias;
  let best: { prefix: string; price: ListedPrice } | undefined;
  for (const [pattern, price] of Object.entries(BUNDLED_PRICES)) {
    if (!pattern.endsWith('*')) continue;
    const prefix = pattern.slice(0, -1);
    if (key.startsWith(prefix) && (!best || prefix.length > best.prefix.length)) best = { prefix, price };
  }
  return best?.price;
}

/** A bundled entry in the shape a context's `prices` take. */
export function contextPriceOf(listed: ListedPrice): ModelPrice {
  return {
    input: listed.inputPerMTok,
    output: listed.outputPerMTok,
    ...(listed.cacheReadPerMTok !== undefined ? { cacheRead: listed.cacheReadPerMTok } : {}),
    ...(listed.cacheWritePerMTok !== undefined ? { cacheWrite: listed.cacheWritePerMTok } : {}),
    ...(listed.maxOutputTokens !== undefined ? { maxOutputTokens: listed.maxOutputTokens } : {}),
  };
}

/** The token counts a price is applied to (a `Usage`, or an estimate). */
export interface PricedUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

const count = (n: number | undefined) => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : 0);

/**
 * USD for `usage` at `price`. Cache reads and writes are part of
 * `inputTokens`: they are charged at their own prices and the rest of the
 * input at the input price. Reasoning tokens are part of `outputTokens` and
 * cost what output costs, so they are not added again.
 *
 * @example
 * usdAt({ input: 3, output: 15, cacheRead: 0.3 }, { inputTokens: 1_000_000, cacheReadTokens: 800_000, outputTokens: 0 }); // 0.84
 */
export function usdAt(price: ModelPrice, usage: PricedUsage): number {
  const read = count(usage.cacheReadTokens);
  const write = count(usage.cacheWriteTokens);
  // A provider that reports more cached tokens than input is charged for what it reported as cached.
  const fresh = Math.max(0, count(usage.inputTokens) - read - write);
  const usd = fresh * price.input
    + read * (price.cacheRead ?? price.input)
    + write * (price.cacheWrite ?? price.input)
    + count(usage.outputTokens) * price.output;
  return usd / 1_000_000;
}

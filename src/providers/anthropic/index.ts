/**
 * `cairn/anthropic`: Claude models over the Anthropic Messages API, with
 * `fetch` only (no SDK).
 *
 * @example
 * import { createAnthropic } from 'cairn/anthropic';
 * const anthropic = createAnthropic({ apiKey: process.env.ANTHROPIC_API_KEY });
 * const model = anthropic('claude-sonnet-4-5');
 */
import type { LanguageModel } from '../../models/types.js';
import { rememberKey, resolveTimeouts, type FetchFunction, type TransportTimeouts } from '../utils/index.js';
import { AnthropicMessagesModel } from './anthropic-language-model.js';

export interface AnthropicProviderSettings {
  /** The API key, sent as `x-api-key`. @default process.env.ANTHROPIC_API_KEY, read at each call */
  apiKey?: string;
  /** @default 'https://api.anthropic.com/v1' */
  baseURL?: string;
  /** Extra headers on every request (`anthropic-beta`, for example). */
  headers?: Record<string, string>;
  /** A `fetch` to use instead of the global one (a proxy, a test double). */
  fetch?: FetchFunction;
  /** The `anthropic-version` header. @default '2023-06-01' */
  version?: string;
  /**
   * Limits on a silent server: `firstByteMs` (request sent, no response
   * headers) and `stallMs` (the longest silence between two pieces of the
   * body). Past either the attempt fails with `transport_timeout`, which is
   * retried like a 5xx. Separate from a run's `modelTimeoutMs`.
   * @default { firstByteMs: 600000, stallMs: 300000 }
   */
  timeouts?: TransportTimeouts;
}

/** A callable provider: `anthropic(modelId)` is the same as `anthropic.messages(modelId)`. */
export interface AnthropicProvider {
  (modelId: string): LanguageModel;
  /** A model over the Messages API (POST /messages). */
  messages(modelId: string): LanguageModel;
}

export const DEFAULT_ANTHROPIC_BASE_URL = 'https://api.anthropic.com/v1';
export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

/**
 * A provider of Claude models.
 *
 * @example
 * const anthropic = createAnthropic({ apiKey: 'sk-ant-...', baseURL: 'https://proxy.example/v1' });
 * const result = await runAgent({ model: anthropic('claude-opus-4-5'), prompt: 'Hi', effort: 'medium' });
 */
export function createAnthropic(settings: AnthropicProviderSettings = {}): AnthropicProvider {
  rememberKey(settings.apiKey);
  const config = {
    apiKey: settings.apiKey,
    baseURL: (settings.baseURL ?? DEFAULT_ANTHROPIC_BASE_URL).replace(/\/+$/, ''),
    headers: { ...settings.headers },
    version: settings.version ?? DEFAULT_ANTHROPIC_VERSION,
    fetch: settings.fetch,
    timeouts: resolveTimeouts(settings.timeouts, 'createAnthropic'),
  };
  const messages = (modelId: string): LanguageModel => new AnthropicMessagesModel(modelId, config);
  const provider = ((modelId: string) => messages(modelId)) as AnthropicProvider;
  provider.messages = messages;
  return provider;
}

/** The default provider: key from ANTHROPIC_API_KEY, the public endpoint. */
export const anthropic: AnthropicProvider = createAnthropic();

export { AnthropicMessagesModel } from './anthropic-language-model.js';
export {
  THINKING_BUDGETS, ANSWER_ROOM_TOKENS, MIN_THINKING_BUDGET, claudeFamily, type ClaudeFamily, type ThinkingMode,
} from './anthropic-models.js';

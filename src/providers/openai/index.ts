/**
 * `cairn/openai`: OpenAI's models on the Responses wire (the default) or on
 * Chat Completions, over `fetch`.
 *
 * @example
 * const openai = createOpenAI({ apiKey: process.env.MY_KEY });
 * const model = openai('gpt-5.2');          // Responses
 * const chat = openai.chat('gpt-4.1-mini'); // Chat Completions
 */
import type { LanguageModel } from '../../models/types.js';
import { keyStatusOf, loadApiKey, rememberKey } from '../utils/api-key.js';
import type { FetchFunction } from '../utils/http.js';
import { resolveTimeouts, type TransportTimeouts } from '../utils/transport.js';
import { createChatModel } from '../openai-compatible/chat-model.js';
import { isReasoningModel } from './reasoning-models.js';
import { createResponsesModel } from './responses-model.js';

export { isReasoningModel } from './reasoning-models.js';

export interface OpenAIProviderSettings {
  /** The API key. @default process.env.OPENAI_API_KEY, read at each call */
  apiKey?: string;
  /** @default process.env.OPENAI_BASE_URL (read when the provider is created), else 'https://api.openai.com/v1' */
  baseURL?: string;
  /** Sent as `openai-organization` when set. */
  organization?: string;
  /** Sent as `openai-project` when set. */
  project?: string;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** @default globalThis.fetch */
  fetch?: FetchFunction;
  /**
   * Asks reasoning models on the Responses wire for a summary of their
   * thinking (`reasoning.summary`), which the reasoning parts then carry as
   * text. Off by default: some organizations must be verified to get summaries.
   */
  reasoningSummary?: 'auto' | 'concise' | 'detailed';
  /**
   * Sends `strict: true` on tools and on the structured-output schema. Strict
   * schemas must list every property as required and close every object
   * (`additionalProperties: false`). @default false
   */
  strictJsonSchema?: boolean;
  /**
   * Limits on a silent server: `firstByteMs` (request sent, no response
   * headers) and `stallMs` (the longest silence between two pieces of the
   * body). Past either the attempt fails with `transport_timeout`, which is
   * retried like a 5xx. Separate from a run's `modelTimeoutMs`.
   * @default { firstByteMs: 600000, stallMs: 300000 }
   */
  timeouts?: TransportTimeouts;
}

/** `openai(modelId)` and `openai.responses(modelId)`: a Responses model; `openai.chat(modelId)`: a Chat Completions model. */
export interface OpenAIProvider {
  (modelId: string): LanguageModel;
  responses(modelId: string): LanguageModel;
  chat(modelId: string): LanguageModel;
}

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/**
 * Creates an OpenAI provider. The key is read at each call, so a missing key is a MissingAPIKeyError there.
 * Throws InvalidOptionsError for `timeouts` that are not whole milliseconds from 1 to 2^31-1.
 */
export function createOpenAI(settings: OpenAIProviderSettings = {}): OpenAIProvider {
  rememberKey(settings.apiKey);
  const timeouts = resolveTimeouts(settings.timeouts, 'createOpenAI');
  // As OpenAI's own SDK does: an explicit baseURL wins, then OPENAI_BASE_URL (an empty one counts as unset).
  const baseURL = settings.baseURL ?? (process.env.OPENAI_BASE_URL || undefined) ?? DEFAULT_BASE_URL;
  const headers = () => ({
    ...settings.headers,
    authorization: `Bearer ${loadApiKey({ apiKey: settings.apiKey, envVars: ['OPENAI_API_KEY'], provider: 'openai' })}`,
    'openai-organization': settings.organization,
    'openai-project': settings.project,
  });
  const strictJsonSchema = settings.strictJsonSchema ?? false;
  const keyStatus = keyStatusOf(settings.apiKey, ['OPENAI_API_KEY']);
  const common = { provider: 'openai', baseURL, headers, keyStatus, ...(settings.fetch ? { fetch: settings.fetch } : {}), strictJsonSchema, timeouts };

  const responses = (modelId: string) => createResponsesModel({
    ...common,
    modelId,
    reasoning: isReasoningModel(modelId),
    ...(settings.reasoningSummary ? { reasoningSummary: settings.reasoningSummary } : {}),
  });
  const chat = (modelId: string) => createChatModel({
    ...common,
    modelId,
    maxTokensField: 'max_completion_tokens',
    systemRole: isReasoningModel(modelId) ? 'developer' : 'system',
  });
  return Object.assign((modelId: string) => responses(modelId), { responses, chat });
}

/** The default provider: its key comes from OPENAI_API_KEY at each call. */
export const openai: OpenAIProvider = createOpenAI();

/**
 * `cairn/openai-compatible`: Chat Completions models of any server that speaks
 * OpenAI's wire — Ollama, vLLM, LM Studio, the llama.cpp server, OpenRouter.
 *
 * @example
 * const ollama = createOpenAICompatible({ name: 'ollama', baseURL: 'http://localhost:11434/v1' });
 * const model = ollama('llama3.2');
 */
import { InvalidOptionsError } from '../../errors/index.js';
import type { LanguageModel } from '../../models/types.js';
import { keyStatusOf, loadOptionalApiKey, rememberKey } from '../utils/api-key.js';
import type { FetchFunction } from '../utils/http.js';
import { resolveTimeouts, type TransportTimeouts } from '../utils/transport.js';
import { createChatModel } from './chat-model.js';

export interface OpenAICompatibleSettings {
  /** The provider's name: the models' `provider` (prices, profiles and the breaker key it) and its key in `providerOptions`. */
  name: string;
  /** The API's base URL, up to and without `/chat/completions` (for example `http://localhost:11434/v1`). */
  baseURL: string;
  /** Sent as `authorization: Bearer <key>` when set. Local servers need none. */
  apiKey?: string;
  /** An environment variable to read the key from when `apiKey` is not passed (read at each call). */
  apiKeyEnv?: string;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** @default globalThis.fetch */
  fetch?: FetchFunction;
  /** Sends `strict: true` on tools and the structured-output schema (the server must support it). @default false */
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

/** A callable provider: `provider(modelId)` and `provider.chat(modelId)` give the same Chat Completions model. */
export interface OpenAICompatibleProvider {
  (modelId: string): LanguageModel;
  chat(modelId: string): LanguageModel;
}

/** Creates a provider for an OpenAI-compatible server. Throws InvalidOptionsError for a missing name or baseURL, or bad `timeouts`. */
export function createOpenAICompatible(settings: OpenAICompatibleSettings): OpenAICompatibleProvider {
  if (typeof settings?.name !== 'string' || settings.name.trim() === '') {
    throw new InvalidOptionsError('createOpenAICompatible needs a name (the provider the models report, for example "ollama").');
  }
  if (typeof settings.baseURL !== 'string' || settings.baseURL.trim() === '') {
    throw new InvalidOptionsError(`createOpenAICompatible (${settings.name}) needs a baseURL, for example http://localhost:11434/v1.`);
  }
  rememberKey(settings.apiKey);
  const { name } = settings;
  const timeouts = resolveTimeouts(settings.timeouts, `createOpenAICompatible (${name})`);
  const headers = () => {
    const key = loadOptionalApiKey({ apiKey: settings.apiKey, envVars: settings.apiKeyEnv ? [settings.apiKeyEnv] : [], provider: name });
    return { ...settings.headers, ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}) };
  };
  const chat = (modelId: string) => createChatModel({
    provider: name,
    modelId,
    baseURL: settings.baseURL,
    headers,
    // A key is optional here: local servers take none.
    keyStatus: keyStatusOf(settings.apiKey, settings.apiKeyEnv ? [settings.apiKeyEnv] : [], false),
    ...(settings.fetch ? { fetch: settings.fetch } : {}),
    maxTokensField: 'max_tokens',
    systemRole: 'system',
    strictJsonSchema: settings.strictJsonSchema ?? false,
    timeouts,
  });
  return Object.assign((modelId: string) => chat(modelId), { chat });
}

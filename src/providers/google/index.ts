/**
 * cairn/google: Google's Gemini API (generateContent and
 * streamGenerateContent) as a Cairn model, over `fetch` alone.
 *
 * @example
 * import { createGoogle } from 'cairn/google';
 * const google = createGoogle({ apiKey: process.env.GEMINI_API_KEY });
 * const model = google('gemini-2.5-flash');
 */
import type { LanguageModel } from '../../models/types.js';
import { rememberKey, resolveTimeouts, type FetchFunction, type TransportTimeouts } from '../utils/index.js';
import { GoogleLanguageModel } from './google-language-model.js';

export { GOOGLE_API_KEY_ENV_VARS, GoogleLanguageModel } from './google-language-model.js';
export type { GoogleReasoningMetadata, GoogleToolCallMetadata } from './google-messages.js';

/** Model ids Google documents; any other id is passed on as it is. */
export type GoogleModelId =
  | 'gemini-2.5-pro'
  | 'gemini-2.5-flash'
  | 'gemini-2.5-flash-lite'
  | 'gemini-3-pro-preview'
  | 'gemini-3-flash-preview'
  | (string & {});

export interface GoogleProviderSettings {
  /**
   * The API key, sent in the `x-goog-api-key` header.
   * @default the first set of GEMINI_API_KEY, GOOGLE_API_KEY, GOOGLE_GENERATIVE_AI_API_KEY, read at each call
   */
  apiKey?: string;
  /** @default 'https://generativelanguage.googleapis.com/v1beta' */
  baseURL?: string;
  /** Headers added to every request. */
  headers?: Record<string, string>;
  /** @default globalThis.fetch */
  fetch?: FetchFunction;
  /**
   * Limits on a silent server: `firstByteMs` (request sent, no response
   * headers) and `stallMs` (the longest silence between two pieces of the
   * body). Past either the attempt fails with `transport_timeout`, which is
   * retried like a 5xx. Separate from a run's `modelTimeoutMs`.
   * @default { firstByteMs: 600000, stallMs: 300000 }
   */
  timeouts?: TransportTimeouts;
}

/** Call it with a model id, or use {@link GoogleProvider.generativeAI}: both give the same model. */
export interface GoogleProvider {
  (modelId: GoogleModelId): LanguageModel;
  /** A Gemini model over generateContent (protocol `generate-content`). */
  generativeAI(modelId: GoogleModelId): LanguageModel;
}

export const GOOGLE_BASE_URL = 'https://generativelanguage.googleapis.com/v1beta';

/**
 * A Gemini provider. A missing key is a MissingAPIKeyError at the first call,
 * not here.
 *
 * @example
 * const google = createGoogle({ apiKey: 'AIza...' });
 * const result = await runAgent({ model: google('gemini-2.5-flash'), prompt: 'Hello' });
 */
export function createGoogle(settings: GoogleProviderSettings = {}): GoogleProvider {
  rememberKey(settings.apiKey);
  const config = {
    baseURL: (settings.baseURL ?? GOOGLE_BASE_URL).replace(/\/+$/, ''),
    apiKey: settings.apiKey,
    headers: settings.headers,
    fetch: settings.fetch,
    timeouts: resolveTimeouts(settings.timeouts, 'createGoogle'),
  };
  const generativeAI = (modelId: GoogleModelId): LanguageModel => new GoogleLanguageModel(modelId, config);
  return Object.assign((modelId: GoogleModelId) => generativeAI(modelId), { generativeAI });
}

/** The default provider: its key comes from the environment at each call. */
export const google: GoogleProvider = createGoogle();

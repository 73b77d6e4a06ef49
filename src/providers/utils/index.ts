/** Helpers for people who write a model adapter: the HTTP call and its errors, SSE, API keys, argument parsing. */
export { isSendableHeaderValue, keyStatusOf, loadApiKey, loadOptionalApiKey, rememberKey, type ApiKeySource } from './api-key.js';
export {
  apiErrorOf, invalidResponse, isRetryableStatus, postJson, readJson, requestIdOf, retryAfterMs,
  type FetchFunction, type PostOptions,
} from './http.js';
export { readSse, SseParser, type SseEvent } from './sse.js';
export { parseEvent, parseToolArgs } from './json.js';

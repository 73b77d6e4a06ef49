/** Helpers for people who write a model adapter: the HTTP call and its errors, SSE, API keys, argument parsing. */
export { isSendableHeaderValue, keyStatusOf, loadApiKey, loadOptionalApiKey, rememberKey, type ApiKeySource } from './api-key.js';
export {
  apiErrorOf, invalidResponse, isRetryableStatus, postJson, readJson, requestIdOf, retryAfterMs,
  type FetchFunction, type PostOptions,
} from './http.js';
export { readSse, SseParser, type SseEvent, type SseSource } from './sse.js';
export { eventJson, parseEvent, parseToolArgs } from './json.js';
export { DEFAULT_TRANSPORT_TIMEOUTS, resolveTimeouts, type ResolvedTimeouts, type TransportTimeouts } from './transport.js';

/**
 * `cairn/models`: the model spec (the types every model implements) and what a
 * person writing an adapter needs: the HTTP call and its typed error, SSE,
 * API keys, argument parsing, the breaker store.
 */
export * from './types.js';
export { createInMemoryBreakerStore, type BreakerState, type BreakerStore } from './breaker-store.js';
export { transientCause, type TransientCause } from './transient.js';
export { fromAISDK, isAISDKModel, type FromAISDKOptions, type AISDKLanguageModel } from './ai-sdk/index.js';
export { toCairnModel } from './resolve.js';
export { DEFAULT_MAX_RETRIES } from './retry.js';
export { DEFAULT_BREAKER_COOLDOWN_MS, DEFAULT_BREAKER_THRESHOLD, type BreakerSettings } from './breaker.js';
export * from '../providers/utils/index.js';
export {
  APICallError, InvalidAPIKeyError, MissingAPIKeyError, ModelCallError, BreakerOpenError, registerSecret, redactSecrets,
} from '../errors/index.js';

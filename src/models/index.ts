/**
 * `cairn/models`: the model spec (the types every model implements) and what a
 * person writing an adapter needs: the HTTP call and its typed error, SSE,
 * API keys, argument parsing, the breaker store.
 */
export * from './types.js';
export { createInMemoryBreakerStore, type BreakerState, type BreakerStore } from './breaker-store.js';
export { transientCause, type TransientCause } from './transient.js';
export * from '../providers/utils/index.js';
export {
  APICallError, MissingAPIKeyError, ModelCallError, BreakerOpenError, registerSecret, redactSecrets,
} from '../errors/index.js';

/**
 * The retries of one model call on one model: how long to wait before the
 * next attempt. Exponential backoff with jitter; a wait the provider asked for
 * (retry-after) is honoured, up to a cap past which the attempt is not made.
 */
import type { TransientCause } from './transient.js';

/** @default 2 */
export const DEFAULT_MAX_RETRIES = 2;
/** The first backoff; each retry doubles it. */
export const INITIAL_RETRY_DELAY_MS = 500;
/** A provider that asks for a longer wait than this is not retried: the call fails (or fails over) at once. */
export const MAX_RETRY_DELAY_MS = 60_000;

/** Causes a later attempt on the same model may cure. An open breaker is not one: it fails over at once. */
export function isRetryableCause(cause: TransientCause | null): boolean {
  return cause === 'provider-error' || cause === 'rate-limited' || cause === 'network' || cause === 'timeout';
}

/**
 * Causes that fail a call over to the next model, when they came before the
 * call's first content: the same as the retryable ones, plus an open breaker.
 */
export function isFailoverCause(cause: TransientCause | null): boolean {
  return isRetryableCause(cause) || cause === 'breaker-open';
}

/**
 * The wait before retry number `retry` (1-based): the provider's retry-after
 * when it gave one, else 500 ms doubled each time, with jitter (50–100% of it).
 * Null when the provider asked for more than {@link MAX_RETRY_DELAY_MS}.
 */
export function retryDelay(retry: number, retryAfterMs: number | undefined, random: () => number = Math.random): number | null {
  if (retryAfterMs !== undefined) return retryAfterMs > MAX_RETRY_DELAY_MS ? null : retryAfterMs;
  const base = Math.min(INITIAL_RETRY_DELAY_MS * 2 ** (retry - 1), MAX_RETRY_DELAY_MS);
  return Math.round(base * (0.5 + random() * 0.5));
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

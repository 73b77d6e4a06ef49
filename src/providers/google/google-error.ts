/**
 * Google's errors: `{ error: { code, message, status, details } }`, answered
 * with a non-2xx status or sent as an event inside a stream. A 429 often says
 * how long to wait only in a `google.rpc.RetryInfo` detail (`retryDelay:
 * "17s"`), not in a `retry-after` header; that wait becomes `retryAfterMs`.
 */
import { APICallError } from '../../errors/index.js';
import { isRetryableStatus } from '../utils/index.js';
import type { GeminiErrorBody } from './google-api.js';

export const PROVIDER = 'google';

/** Google's own message of an error body (or of the first of an array of them): `STATUS: message`. */
export function errorMessage(body: unknown): string | undefined {
  const first = Array.isArray(body) ? body[0] : body;
  const error = (first as GeminiErrorBody | null | undefined)?.error;
  if (typeof error !== 'object' || error === null) return undefined;
  const message = typeof error.message === 'string' ? error.message : undefined;
  const status = typeof error.status === 'string' ? error.status : undefined;
  return status && message ? `${status}: ${message}` : message ?? status;
}

/** The wait a RetryInfo detail asks for, in ms (`"17s"`, `"0.5s"`). */
function retryDelayMs(body: string | undefined): number | undefined {
  // The body is an excerpt that may be cut short, so read the field, not the JSON.
  const match = body ? /"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"/.exec(body) : null;
  return match ? Math.round(Number(match[1]) * 1000) : undefined;
}

/** The same error with the RetryInfo wait, when the answer had no retry-after header. */
export function withRetryInfo(error: unknown): unknown {
  if (!APICallError.isInstance(error) || error.retryAfterMs !== undefined) return error;
  const retryAfterMs = retryDelayMs(error.responseBody);
  if (retryAfterMs === undefined) return error;
  return new APICallError({
    message: error.message,
    provider: error.provider,
    url: error.url,
    statusCode: error.statusCode,
    isRetryable: error.isRetryable,
    retryAfterMs,
    requestId: error.requestId,
    responseBody: error.responseBody,
    cause: error.cause,
  });
}

/** An error event inside a stream, with the status its `code` names. */
export function streamError(body: GeminiErrorBody, url: string, raw: string): APICallError {
  const code = typeof body.error?.code === 'number' ? body.error.code : undefined;
  const own = errorMessage(body);
  return new APICallError({
    message: `${PROVIDER} sent an error inside the stream${code !== undefined ? ` (${code})` : ''}${own ? `: ${own}` : '.'}`,
    provider: PROVIDER,
    url,
    statusCode: code,
    // An error without a code is the provider's failure; a retry may cure it.
    isRetryable: code === undefined || isRetryableStatus(code),
    retryAfterMs: retryDelayMs(raw),
    responseBody: raw,
  });
}

/**
 * Anthropic's error shape, `{ type: 'error', error: { type, message } }`, in an
 * error answer and as a stream's `error` event. A stream's error has no HTTP
 * status of its own: it gets the status the same error has as an answer.
 */
import { APICallError } from '../../errors/index.js';
import { isRetryableStatus } from '../utils/index.js';

/** The documented error types and the HTTP status each comes with. */
const STATUS_OF_TYPE: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

function errorFields(body: unknown): { type?: string; message?: string } {
  const error = (body as { error?: unknown } | null)?.error;
  if (typeof error !== 'object' || error === null) return {};
  const { type, message } = error as { type?: unknown; message?: unknown };
  return {
    ...(typeof type === 'string' ? { type } : {}),
    ...(typeof message === 'string' ? { message } : {}),
  };
}

/** The provider's own words from an error body, for `postJson`'s `errorMessage`. */
export function anthropicErrorMessage(body: unknown): string | undefined {
  const { type, message } = errorFields(body);
  if (type && message) return `${type}: ${message}`;
  return message ?? type;
}

/** The error for a stream's `error` event (overloaded_error is 529 and retryable, as an answer would be). */
export function streamErrorOf(data: unknown, url: string, requestId: string | undefined): APICallError {
  const { type } = errorFields(data);
  const statusCode = type !== undefined ? STATUS_OF_TYPE[type] : undefined;
  const own = anthropicErrorMessage(data);
  return new APICallError({
    message: `anthropic reported an error in the stream${own ? `: ${own}` : '.'}`,
    provider: 'anthropic',
    url,
    ...(statusCode !== undefined ? { statusCode } : {}),
    isRetryable: statusCode !== undefined && isRetryableStatus(statusCode),
    ...(requestId !== undefined ? { requestId } : {}),
    responseBody: JSON.stringify(data),
  });
}

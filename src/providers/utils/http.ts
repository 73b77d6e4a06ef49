/**
 * One POST to a provider's API, and its failures as {@link APICallError}: the
 * status, whether a retry may cure it, the wait the provider asked for, its
 * request id and a redacted excerpt of the body. The caller's aborts (its
 * signal, `modelTimeoutMs`) are passed on as they are, so the engine can tell
 * a cancel from a timeout; a silent server ends the call under the
 * transport's own limits (`timeouts`, see transport.ts).
 */
import { APICallError } from '../../errors/index.js';
import { bodyReadError, resolveTimeouts, timedFetch, type TransportTimeouts } from './transport.js';

export type FetchFunction = typeof globalThis.fetch;

export interface PostOptions {
  provider: string;
  url: string;
  headers: Record<string, string | undefined>;
  body: unknown;
  signal?: AbortSignal;
  fetch?: FetchFunction;
  /** Pulls the provider's own error message out of an error body. */
  errorMessage?: (body: unknown) => string | undefined;
  /** The limits on a silent server. @default { firstByteMs: 600000, stallMs: 300000 } */
  timeouts?: TransportTimeouts;
}

const REQUEST_ID_HEADERS = ['x-request-id', 'request-id', 'x-goog-request-id', 'cf-ray'];

/** Statuses a later attempt may succeed on: timeouts, conflicts, rate limits, server errors (529: overloaded). */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** `retry-after-ms`, or `retry-after` in seconds or as an HTTP date, in ms; undefined when absent or unreadable. */
export function retryAfterMs(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '' && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Number(ms);
  const after = headers.get('retry-after');
  if (after === null || after.trim() === '') return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined;
}

export function requestIdOf(headers: Headers): string | undefined {
  for (const name of REQUEST_ID_HEADERS) {
    const value = headers.get(name);
    if (value) return value;
  }
  return undefined;
}

function isAbort(error: unknown, signal: AbortSignal | undefined): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return signal?.aborted === true || name === 'AbortError' || name === 'TimeoutError';
}

function cleanHeaders(headers: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) if (value !== undefined) out[key] = value;
  return out;
}

function parseOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The error for a response whose status is not 2xx. */
export async function apiErrorOf(response: Response, options: Pick<PostOptions, 'provider' | 'url' | 'errorMessage'>): Promise<APICallError> {
  let text = '';
  try {
    text = await response.text();
  } catch {
    // The body could not be read; the status says enough.
  }
  const parsed = parseOrText(text);
  const own = typeof parsed === 'object' && parsed !== null ? options.errorMessage?.(parsed) : undefined;
  return new APICallError({
    message: `${options.provider} answered ${response.status}${response.statusText ? ` ${response.statusText}` : ''}${own ? `: ${own}` : '.'}`,
    provider: options.provider,
    url: options.url,
    statusCode: response.status,
    isRetryable: isRetryableStatus(response.status),
    retryAfterMs: retryAfterMs(response.headers),
    requestId: requestIdOf(response.headers),
    responseBody: text,
  });
}

/**
 * POSTs `body` as JSON; resolves with the response when its status is 2xx.
 * The response's body is read under the stall limit: a read of it fails
 * with `transport_timeout` when the server goes silent, and with a retryable
 * APICallError when the connection is cut.
 */
export async function postJson(options: PostOptions): Promise<Response> {
  const fetchFn = options.fetch ?? globalThis.fetch;
  const timeouts = resolveTimeouts(options.timeouts, options.provider);
  let response: Response;
  try {
    response = await timedFetch(fetchFn, options.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...cleanHeaders(options.headers) },
      body: JSON.stringify(options.body),
    }, { provider: options.provider, url: options.url, timeouts, signal: options.signal });
  } catch (error) {
    if (APICallError.isInstance(error)) throw error;
    if (isAbort(error, options.signal)) throw options.signal?.aborted ? options.signal.reason ?? error : error;
    // A network failure: no status, and a retry may cure it. The cause keeps the system's code (ECONNREFUSED ...).
    const cause = (error as { cause?: unknown } | null)?.cause ?? error;
    throw new APICallError({
      message: `Could not reach ${options.provider}: ${(cause as Error | null)?.message ?? String(cause)}`,
      provider: options.provider,
      url: options.url,
      isRetryable: true,
      cause,
    });
  }
  if (!response.ok) throw await apiErrorOf(response, options);
  return response;
}

/** Reads a 2xx answer as JSON; a body that is not JSON is an `invalid_response` error, which no retry cures. */
export async function readJson(response: Response, options: Pick<PostOptions, 'provider' | 'url' | 'signal'>): Promise<unknown> {
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    // A cut connection, a stall, an abort: see bodyReadError.
    throw bodyReadError(error, options);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new APICallError({
      message: `${options.provider} answered ${response.status} with a body that is not JSON.`,
      provider: options.provider, url: options.url, statusCode: response.status, isRetryable: false,
      requestId: requestIdOf(response.headers), responseBody: text, code: 'invalid_response',
    });
  }
}

/** The error for an answer that is not of the documented shape; `body` is kept as an excerpt (text as it is, other values as JSON). */
export function invalidResponse(provider: string, url: string, what: string, body?: unknown): APICallError {
  return new APICallError({
    message: `${provider} answered with ${what}.`,
    provider, url, isRetryable: false, code: 'invalid_response',
    ...(body === undefined ? {} : { responseBody: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
}

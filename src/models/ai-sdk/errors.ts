/**
 * AI SDK failures as Cairn errors, so Cairn's retries, breaker and fail-over
 * classify them as they classify its own providers' errors. AI SDK provider
 * models retry nothing themselves (the AI SDK retries in `generateText`, which
 * Cairn does not use), so every retry is Cairn's own.
 */
import { APICallError, CairnError, MissingAPIKeyError, ModelCallError, redactSecrets } from '../../errors/index.js';
import { isRetryableStatus, requestIdOf, retryAfterMs } from '../../providers/utils/index.js';

export interface ErrorContext {
  /** Cairn's provider name (`openai`), for messages and `APICallError.provider`. */
  provider: string;
  signal?: AbortSignal;
}

type Fields = Record<string, unknown>;

const field = (value: unknown, key: string): unknown =>
  value !== null && typeof value === 'object' ? (value as Fields)[key] : undefined;

/** AI SDK errors carry `name: 'AI_<Class>'` in every version (their marker symbols differ by copy). */
const aiName = (error: unknown): string | undefined => {
  const name = field(error, 'name');
  return typeof name === 'string' && name.startsWith('AI_') ? name : undefined;
};

const INVALID_RESPONSE = new Set(['AI_JSONParseError', 'AI_TypeValidationError', 'AI_InvalidResponseDataError', 'AI_EmptyResponseBodyError', 'AI_NoContentGeneratedError']);

function headersOf(value: unknown): Headers {
  const headers = new Headers();
  if (value !== null && typeof value === 'object') {
    for (const [key, v] of Object.entries(value as Fields)) if (typeof v === 'string') headers.set(key, v);
  }
  return headers;
}

function messageOf(error: unknown): string {
  const message = field(error, 'message');
  return typeof message === 'string' && message !== '' ? message : String(error);
}

/** The AI SDK's APICallError (a non-2xx answer, a network failure, an unreadable 2xx body) as Cairn's. */
function fromApiCallError(error: Fields, ctx: ErrorContext): unknown {
  const statusCode = typeof error.statusCode === 'number' ? error.statusCode : undefined;
  const ok = statusCode !== undefined && statusCode >= 200 && statusCode < 300;
  // A 2xx whose body broke off while it was read (a cut socket): the read error itself, as Cairn's own providers let it through.
  if (ok && error.cause !== undefined && !aiName(error.cause)) return error.cause;
  const headers = headersOf(error.responseHeaders);
  const message = messageOf(error);
  return new APICallError({
    message: statusCode === undefined
      ? `Could not reach ${ctx.provider}: ${message}`
      : ok ? `${ctx.provider} answered ${statusCode} with a body that could not be read: ${message}` : `${ctx.provider} answered ${statusCode}: ${message}`,
    provider: ctx.provider,
    url: typeof error.url === 'string' ? error.url : '',
    ...(statusCode !== undefined ? { statusCode } : {}),
    isRetryable: ok ? false : typeof error.isRetryable === 'boolean' ? error.isRetryable : statusCode === undefined || isRetryableStatus(statusCode),
    retryAfterMs: retryAfterMs(headers),
    requestId: requestIdOf(headers),
    ...(typeof error.responseBody === 'string' ? { responseBody: error.responseBody } : {}),
    // Only a network failure's own cause: the AI SDK error holds the whole request body.
    ...(statusCode === undefined && error.cause !== undefined ? { cause: error.cause } : {}),
    ...(ok ? { code: 'invalid_response' as const } : {}),
  });
}

/**
 * The status of a stream's error event that carries none, from the error types the
 * OpenAI and Anthropic APIs document (AI SDK v2 providers pass the event on as it is).
 */
function statusOfType(payload: unknown): number | undefined {
  const kind = `${String(field(payload, 'type') ?? '')} ${String(field(payload, 'code') ?? '')}`;
  if (/overloaded_error/.test(kind)) return 529;
  if (/rate_limit|\brequests\b|\btokens\b/.test(kind)) return 429;
  if (/server_error|api_error|internal_error/.test(kind)) return 500;
  return undefined;
}

/** An `error` stream part's payload: an Error, or the provider's error object (`{ message, type, code, statusCode?, isRetryable? }`). */
export function fromStreamPayload(payload: unknown, ctx: ErrorContext): unknown {
  if (payload instanceof Error || aiName(payload)) return toCairnError(payload, ctx);
  const inner = field(payload, 'error') ?? payload;
  const given = field(payload, 'statusCode') ?? field(inner, 'statusCode');
  const statusCode = typeof given === 'number' ? given : statusOfType(inner);
  const retryable = field(payload, 'isRetryable') ?? field(inner, 'isRetryable');
  const message = field(inner, 'message');
  return new APICallError({
    message: `${ctx.provider} reported an error in its stream: ${typeof message === 'string' ? message : JSON.stringify(payload)}`,
    provider: ctx.provider,
    url: '',
    ...(statusCode !== undefined ? { statusCode } : {}),
    isRetryable: typeof retryable === 'boolean' ? retryable : statusCode !== undefined && isRetryableStatus(statusCode),
    responseBody: JSON.stringify(payload) ?? '',
  });
}

/**
 * Any failure of an AI SDK call, as Cairn raises it. Aborts and timeouts pass
 * through as the signal's reason; a read error of a broken stream passes
 * through as it is; AI SDK errors become Cairn errors.
 */
export function toCairnError(error: unknown, ctx: ErrorContext): unknown {
  if (ctx.signal?.aborted) return ctx.signal.reason ?? error;
  if (CairnError.isInstance(error)) return error;
  const name = aiName(error);
  if (!name) {
    // Not thrown by the AI SDK: an abort, a socket cut mid-stream, a bug. The engine classifies it as it is.
    return error;
  }
  if (name === 'AI_APICallError') return fromApiCallError(error as Fields, ctx);
  if (name === 'AI_LoadAPIKeyError') {
    const envVar = /\b([A-Z][A-Z0-9_]*_API_KEY)\b/.exec(messageOf(error))?.[1] ?? 'the environment variable its AI SDK provider reads';
    return new MissingAPIKeyError(ctx.provider, envVar);
  }
  if (INVALID_RESPONSE.has(name)) {
    return new APICallError({
      message: `${ctx.provider} answered with something the AI SDK could not read: ${messageOf(error)}`,
      provider: ctx.provider, url: '', isRetryable: false, code: 'invalid_response', cause: error,
    });
  }
  // InvalidPromptError, UnsupportedFunctionalityError, InvalidArgumentError ...: the request cannot be sent as it is.
  return new ModelCallError(redactSecrets(`${ctx.provider} (AI SDK) refused the call: ${name.slice(3)}: ${messageOf(error)}`), {
    cause: error,
    isRetryable: field(error, 'isRetryable') === true,
  });
}

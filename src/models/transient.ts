/**
 * Which model-call failures are transient: the ones a retry can cure. The same
 * errors the model fail-over acts on.
 */
const NETWORK_CODES = new Set([
  'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH',
  'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT',
]);

/** Serialization conflicts a database reports for a transaction that may simply be tried again. */
const SERIALIZATION_CODES = new Set(['40001', '40P01']);

export type TransientCause = 'provider-error' | 'rate-limited' | 'network' | 'timeout' | 'breaker-open' | 'stream-broke' | 'serialization-conflict';

function field(value: unknown, key: string): unknown {
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
}

/** Why the failure is transient, or null when it is not. `midStream`: the error came after the stream began. */
export function transientCause(error: unknown, midStream: boolean): TransientCause | null {
  const status = field(error, 'statusCode') ?? field(error, 'status');
  if (typeof status === 'number') {
    if (status === 429 || status === 529) return 'rate-limited';
    if (status === 408) return 'timeout';
    if (status >= 500) return 'provider-error';
    return null;
  }
  const code = field(error, 'code') ?? field(field(error, 'cause'), 'code');
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code)) return 'network';
    if (SERIALIZATION_CODES.has(code)) return 'serialization-conflict';
    if (code === 'breaker_open') return 'breaker-open';
  }
  const name = field(error, 'name');
  if (name === 'TimeoutError') return 'timeout';
  if (name === 'TypeError' && /fetch failed|network/i.test(String(field(error, 'message')))) return 'network';
  if (field(error, 'isRetryable') === true) return 'provider-error';
  return midStream ? 'stream-broke' : null;
}

/**
 * Which model-call failures are transient: the ones a retry can cure. The same
 * errors the model fail-over acts on.
 */
import { CairnError } from '../errors/index.js';

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
    // A status the provider marked retryable (409, for example).
    if (field(error, 'isRetryable') === true) return 'provider-error';
    return midStream ? 'stream-broke' : null;
  }
  const cause = field(error, 'cause');
  for (const code of [field(error, 'code'), field(cause, 'code')]) {
    if (typeof code !== 'string') continue;
    if (NETWORK_CODES.has(code)) return 'network';
    // A ledger's own code for it too: SQLite's busy lock has no SQLSTATE.
    if (SERIALIZATION_CODES.has(code) || code === 'budget_admission_conflict') return 'serialization-conflict';
    if (code === 'breaker_open') return 'breaker-open';
  }
  if (field(error, 'name') === 'TimeoutError' || field(cause, 'name') === 'TimeoutError') return 'timeout';
  // fetch's own TypeError for a dropped connection; a CairnTypeError is a refusal, never transient.
  if (field(error, 'name') === 'TypeError' && !CairnError.isInstance(error) && /fetch failed|network|terminated/i.test(String(field(error, 'message')))) return 'network';
  if (midStream) return 'stream-broke';
  // A provider error with no status that a retry may cure: the connection failed or the answer broke off.
  if (field(error, 'isRetryable') === true) return field(error, 'name') === 'APICallError' ? 'network' : 'provider-error';
  return null;
}

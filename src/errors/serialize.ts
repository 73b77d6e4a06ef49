/**
 * What may leave the process of an error: secrets redacted, and any thrown
 * value turned into a SerializedError with a code from the closed list.
 */
import { CairnError, type SerializedError } from './base.js';
import { isCairnErrorCode, type CairnErrorCode } from './codes.js';

const SECRET_PATTERNS: RegExp[] = [
  /\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}/g,
  /\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  /\b(api[_-]?key|token|secret|password)\s*[:=]\s*["']?[^\s"',;]{4,}/gi,
  /\bAKIA[0-9A-Z]{16}\b/g,
  // Google API keys.
  /\bAIza[0-9A-Za-z_-]{30,}/g,
];

/**
 * Secret values this process knows of (the API keys providers were created
 * with), kept on globalThis so every copy of the package redacts them.
 */
const KNOWN_SECRETS: Set<string> = ((globalThis as Record<symbol, unknown>)[Symbol.for('cairn.secrets')] ??= new Set<string>()) as Set<string>;

/**
 * Marks a value as secret: {@link redactSecrets} replaces it wherever it
 * appears, whatever it looks like. Providers register the keys they are given
 * or read from the environment. Values shorter than 6 characters are ignored
 * (they would redact ordinary words).
 */
export function registerSecret(value: string | undefined | null): void {
  if (typeof value === 'string' && value.trim().length >= 6) KNOWN_SECRETS.add(value.trim());
}

/** Replaces things that look like credentials, and every registered secret, with `[redacted]`. */
export function redactSecrets(text: string): string {
  let out = text;
  for (const secret of KNOWN_SECRETS) if (out.includes(secret)) out = out.split(secret).join('[redacted]');
  for (const pattern of SECRET_PATTERNS) out = out.replace(pattern, '[redacted]');
  return out;
}

/** A string field of a thrown value, if it has one (a getter that throws counts as none). */
function stringField(value: object, key: 'name' | 'code' | 'message' | 'toolCallId'): string | undefined {
  try {
    const field = (value as Record<string, unknown>)[key];
    return typeof field === 'string' ? field : undefined;
  } catch {
    return undefined;
  }
}

function describe(value: unknown): string {
  try {
    return String(value);
  } catch {
    return 'A value that cannot be described was thrown.';
  }
}

/**
 * Turns anything thrown into plain, secret-redacted data that survives JSON:
 * `{ name, code, message }` (and `details` for a changed binding).
 *
 * - A Cairn error (a {@link CairnTypeError} included) keeps its `name` and `code`.
 * - Anything else is not Cairn's to name, so it keeps its own `name` (`'Error'`
 *   when it has none) and `message`, and takes `fallback` as its code: the
 *   caller says where it came from (`'tool_failed'` for a tool's `execute`,
 *   `'callback_failed'` for a guardrail or another function of yours,
 *   `'model_call_failed'` for a model). With no caller to say, `'internal'`.
 *   Its own `code` (`ECONNRESET`) is dropped unless it is already one of
 *   {@link CAIRN_ERROR_CODES}, so serializing a serialized error changes nothing.
 * - A thrown plain object gives its own `message` and `name`, instead of
 *   `[object Object]`; anything else thrown becomes `String(value)`.
 *
 * Every field is redacted: a `name` can carry a credential as well as a
 * message can.
 *
 * @example
 * ```ts
 * serializeError(new Error('upstream timeout'), 'tool_failed');
 * // { name: 'Error', code: 'tool_failed', message: 'upstream timeout' }
 * ```
 */
export function serializeError(error: unknown, fallback: CairnErrorCode = 'internal'): SerializedError {
  if (CairnError.isInstance(error)) {
    const details = detailsOf(error);
    const toolCallId = stringField(error, 'toolCallId');
    return {
      name: redactSecrets(error.name),
      code: isCairnErrorCode(error.code) ? error.code : fallback,
      message: redactSecrets(error.message),
      ...(details ? { details } : {}),
      ...(toolCallId !== undefined ? { toolCallId } : {}),
    };
  }
  if (error !== null && typeof error === 'object') {
    const isError = error instanceof Error;
    const message = stringField(error, 'message');
    const own = stringField(error, 'code');
    const details = isCairnErrorCode(own) ? detailsOf(error) : undefined;
    const toolCallId = isCairnErrorCode(own) ? stringField(error, 'toolCallId') : undefined;
    return {
      name: redactSecrets(stringField(error, 'name') ?? 'Error'),
      code: isCairnErrorCode(own) ? own : fallback,
      message: redactSecrets(message ?? (isError ? '' : describe(error))),
      ...(details ? { details } : {}),
      ...(toolCallId !== undefined ? { toolCallId } : {}),
    };
  }
  return { name: 'Error', code: fallback, message: redactSecrets(describe(error)) };
}

/** The `details` of a Cairn error (a changed binding's), or of an already serialized error passing through again. */
function detailsOf(value: object): string[] | undefined {
  try {
    const details = (value as { details?: unknown }).details;
    return Array.isArray(details) && details.length > 0 ? details.map((d) => redactSecrets(String(d))) : undefined;
  } catch {
    return undefined;
  }
}

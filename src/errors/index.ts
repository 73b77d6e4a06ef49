/**
 * Every error Cairn throws or reports is a {@link CairnError}: a stable `name`,
 * a `code` from a closed union, and structured fields. `isInstance` works across
 * copies of the package (it checks a marker symbol, not the prototype chain).
 *
 * The calls the spec says fail "with a TypeError" throw a {@link CairnTypeError}
 * instead: the same marker and fields on `TypeError`'s prototype chain, so it is
 * `instanceof TypeError` and `CairnError.isInstance` at once.
 */
const MARKER = Symbol.for('cairn.error');
/** The Cairn class a {@link CairnTypeError} stands for (its `name` is `'TypeError'`, so the name cannot say). */
const KIND = Symbol.for('cairn.error.kind');

/**
 * Every code a Cairn error, or the `error` of a result, a receipt or an event,
 * can carry: the closed union {@link CairnErrorCode} is derived from this list,
 * so the two cannot drift apart. docs/errors.md says what each one means and
 * whose move it is.
 */
export const CAIRN_ERROR_CODES = [
  'revision_conflict',
  'checkpoint_version_unsupported',
  'binding_changed',
  'run_not_found',
  'scope_mismatch',
  'run_busy',
  'lease_held',
  'lease_lost',
  'record_corrupt',
  'record_version_unsupported',
  'persistence_failed',
  'model_call_failed',
  'api_call_failed',
  'api_key_missing',
  'api_key_invalid',
  'invalid_response',
  'mock_model_unexpected_call',
  'tool_not_allowed',
  'model_not_allowed',
  'policy_widened',
  'max_depth_exceeded',
  'execution_context_mismatch',
  'deadline_exceeded',
  'invalid_options',
  'invalid_envelope',
  'tool_context_invalid',
  'result_too_large',
  'result_unstorable',
  'budget_exceeded',
  'unpriced_model',
  'budget_admission_conflict',
  'breaker_open',
  'skill_access_denied',
  'unknown_effect',
  'reconciled_error',
  'tool_failed',
  'callback_failed',
  'journal_conflict',
  'journal_cursor_invalid',
  'journal_stream_not_found',
  'injected_fault',
  'internal',
] as const;

export type CairnErrorCode = (typeof CAIRN_ERROR_CODES)[number];

const CODES: ReadonlySet<string> = new Set(CAIRN_ERROR_CODES);

/** True when `value` is one of {@link CAIRN_ERROR_CODES}. */
export function isCairnErrorCode(value: unknown): value is CairnErrorCode {
  return typeof value === 'string' && CODES.has(value);
}

/** Who is at fault: the caller's configuration, the model's answer, a dependency (store, provider), or Cairn itself. */
export type Fault = 'user' | 'model' | 'dependency' | 'library';

export interface SerializedError {
  /** The error's `name`: a Cairn class name, `'TypeError'` for a {@link CairnTypeError}, or the name of an error of yours. */
  name: string;
  /** Always one of {@link CAIRN_ERROR_CODES}; an error of yours gets the code of the place it was thrown from (see {@link serializeError}). */
  code: CairnErrorCode;
  message: string;
  /** What exactly went wrong, for people, when the message alone cannot say (which parts of a binding changed). */
  details?: string[];
  /** The tool call an error is about (an ExecutionPolicyError's `tool_not_allowed`). */
  toolCallId?: string;
}

function isMarked(value: unknown): value is Record<symbol, unknown> & { name?: unknown } {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
}

/** The Cairn class a marked error is: its kind when it carries one (a CairnTypeError), else its name. */
function kindOf(value: Record<symbol, unknown> & { name?: unknown }): unknown {
  return value[KIND] ?? value.name;
}

/** What every Cairn error carries, whichever built-in error it extends. */
export interface CairnErrorFields {
  readonly code: CairnErrorCode;
  readonly fault: Fault;
  readonly isRetryable: boolean;
}

export class CairnError extends Error implements CairnErrorFields {
  readonly [MARKER] = true;
  readonly code: CairnErrorCode;
  readonly fault: Fault;
  readonly isRetryable: boolean;

  constructor(
    code: CairnErrorCode,
    message: string,
    options: { cause?: unknown; fault?: Fault; isRetryable?: boolean } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CairnError';
    this.code = code;
    this.fault = options.fault ?? 'library';
    this.isRetryable = options.isRetryable ?? false;
  }

  /**
   * True for an error of this class (by its stable name), from this copy of the
   * package or another; `CairnError.isInstance` is true for every Cairn error,
   * a {@link CairnTypeError} included. A CairnTypeError is also recognised by
   * the class it stands for: `InvalidOptionsError.isInstance(e)` is true for a
   * resume's malformed answers.
   */
  static isInstance<C extends abstract new (...args: never[]) => CairnError>(this: C, value: unknown): value is InstanceType<C> {
    if (!isMarked(value)) return false;
    return (this as unknown) === CairnError || kindOf(value) === this.name;
  }

  /**
   * `instanceof` answers as the prototype chain does, and also as
   * {@link CairnError.isInstance} does: so `error instanceof CairnError` (or
   * `instanceof InvalidOptionsError`) holds for a {@link CairnTypeError}, which
   * single inheritance puts on `TypeError`'s chain instead, and for an error
   * of another copy of the package.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return Function.prototype[Symbol.hasInstance].call(this, value) || (CairnError.isInstance as (v: unknown) => boolean).call(this, value);
  }
}

/** The Cairn classes a {@link CairnTypeError} can stand for. */
export type CairnTypeErrorKind = 'InvalidOptionsError' | 'RunIdentityError';

/**
 * A Cairn error that is a `TypeError`: what Cairn throws (or reports, as a
 * result's `error`) where the spec says a call fails "with a TypeError" (a
 * resume's malformed or contradicting answers, `retryFailed` on a failure that
 * was not transient, `inspectRun` of an unknown run, a project directory that
 * is not one, a malformed headless or skills option).
 *
 * Single inheritance puts it on `TypeError`'s prototype chain, so it carries
 * the Cairn marker and fields itself: `error instanceof TypeError`,
 * `CairnError.isInstance(error)` and `error instanceof CairnError` all hold,
 * and so do `isInstance` and `instanceof` of the class it stands for
 * (`InvalidOptionsError` unless the code is `run_not_found`, then
 * `RunIdentityError`). Its `name` is `'TypeError'`, as Node names its own
 * `TypeError`s with a `code` (`ERR_INVALID_ARG_TYPE`): match on `code`.
 *
 * @example
 * ```ts
 * try {
 *   await inspectRun(store, 'no-such-run');
 * } catch (error) {
 *   error instanceof TypeError;               // true
 *   RunIdentityError.isInstance(error);       // true: error.code === 'run_not_found'
 * }
 * ```
 */
export class CairnTypeError extends TypeError implements CairnErrorFields {
  readonly [MARKER] = true;
  readonly [KIND]: CairnTypeErrorKind;
  readonly code: CairnErrorCode;
  readonly fault: Fault;
  readonly isRetryable: boolean;
  /** The run it names, for a `run_not_found`. */
  readonly runId: string | undefined;

  constructor(
    code: 'invalid_options' | 'run_not_found',
    message: string,
    options: { cause?: unknown; runId?: string } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TypeError';
    this[KIND] = code === 'run_not_found' ? 'RunIdentityError' : 'InvalidOptionsError';
    this.code = code;
    // Every TypeError refusal is of something the caller passed.
    this.fault = 'user';
    this.isRetryable = false;
    this.runId = options.runId;
  }

  /** True for a CairnTypeError, from this copy of the package or another. */
  static isInstance(value: unknown): value is CairnTypeError {
    return isMarked(value) && value.name === 'TypeError' && value[KIND] !== undefined;
  }
}

/** A save whose revision is not the stored revision plus one. */
export class RevisionConflictError extends CairnError {
  readonly subsystem = 'run' as const;
  constructor(
    readonly runId: string,
    readonly expectedRevision: number,
    readonly storedRevision: number | null,
  ) {
    super(
      'revision_conflict',
      `Run ${runId}: save expected stored revision ${expectedRevision}, found ${storedRevision ?? 'none'}.`,
      { fault: 'dependency' },
    );
    this.name = 'RevisionConflictError';
  }
}

/** The stored envelope (or a checkpoint inside it) has a version this reader does not know. */
export class CheckpointVersionError extends CairnError {
  constructor(readonly found: unknown, readonly supported: readonly number[]) {
    super(
      'checkpoint_version_unsupported',
      `Native checkpoint version ${JSON.stringify(found)} is not supported (this reader supports ${supported.join(', ')}).`,
      { fault: 'user' },
    );
    this.name = 'CheckpointVersionError';
  }
}

/** The resume's binding (bindingId, model, tool schemas, output schema, limits) differs from the stored one. */
export class BindingChangedError extends CairnError {
  /**
   * @param changedKeys the binding keys whose fingerprints differ
   * @param details which part changed, without values: `the model`, `tool deploy: its parameters schema`, `limit maxSteps`, ...
   */
  constructor(readonly changedKeys: readonly string[], readonly details: readonly string[] = changedKeys) {
    // The message is part of the contract: applications match on it. What changed is in `details`.
    super('binding_changed', 'Native agent binding changed across resume.', { fault: 'user' });
    this.name = 'BindingChangedError';
  }
}

/** Resume found no run, a run of another scope, or an envelope that is not a native run. */
export class RunIdentityError extends CairnError {
  constructor(code: 'run_not_found' | 'scope_mismatch', readonly runId: string) {
    super(code, code === 'run_not_found'
      ? `No native run ${runId} in this store.`
      // Same message whatever the other scope is: nothing about another tenant leaks.
      : 'Native checkpoint version, identity, or scope mismatch.', { fault: 'user' });
    this.name = 'RunIdentityError';
  }
}

/** A second start or resume of a run that is already executing through the same store object. */
export class RunBusyError extends CairnError {
  constructor(readonly runId: string) {
    super('run_busy', `Run ${runId} already has an executor in this process.`, { fault: 'user' });
    this.name = 'RunBusyError';
  }
}

/** The run's lease is held by another executor, or this executor lost it. */
export class AgentRunLeaseError extends CairnError {
  constructor(code: 'lease_held' | 'lease_lost', readonly key: string, message?: string) {
    super(code, message ?? (code === 'lease_held'
      ? `The lease ${key} is held by another executor.`
      : `The lease ${key} was lost; this executor writes nothing more.`), { fault: 'dependency' });
    this.name = 'AgentRunLeaseError';
  }
}

/** A stored record that cannot be read: corrupt, truncated, of a future format, or not a Cairn record. */
export class StoredRecordError extends CairnError {
  constructor(code: 'record_corrupt' | 'record_version_unsupported', readonly runId: string, message: string) {
    super(code, message, { fault: 'dependency' });
    this.name = 'StoredRecordError';
  }
}

/** A durable write failed; the run cannot go on from this process. */
export class PersistenceError extends CairnError {
  constructor(message: string, cause?: unknown) {
    super('persistence_failed', message, { cause, fault: 'dependency' });
    this.name = 'PersistenceError';
  }
}

/** The execution policy refused a call or the deadline elapsed. */
export type ExecutionPolicyCode =
  | 'tool_not_allowed' | 'model_not_allowed' | 'policy_widened' | 'max_depth_exceeded' | 'execution_context_mismatch' | 'deadline_exceeded';

/**
 * The execution policy refused something: a tool or model outside its
 * allowlist, a child context that would widen its parent, a child past the
 * maximum depth, a resume under another context, or the deadline.
 */
export class ExecutionPolicyError extends CairnError {
  constructor(code: ExecutionPolicyCode, message: string, readonly toolCallId?: string) {
    super(code, message, { fault: 'user' });
    this.name = 'ExecutionPolicyError';
  }
}

/** A model call failed (transport, provider, or the scripted model). */
export class ModelCallError extends CairnError {
  constructor(
    message: string,
    options: { cause?: unknown; isRetryable?: boolean; statusCode?: number; code?: CairnErrorCode } = {},
  ) {
    super(options.code ?? 'model_call_failed', message, {
      cause: options.cause,
      fault: 'dependency',
      isRetryable: options.isRetryable ?? false,
    });
    this.name = 'ModelCallError';
    this.statusCode = options.statusCode;
  }
  readonly statusCode: number | undefined;
}

/**
 * A provider's HTTP API answered with an error, or could not be reached. The
 * transient classification (and so the retries, the breaker and the model
 * fail-over) reads `statusCode` and `isRetryable`. Nothing in it carries the
 * API key: the request's headers are not kept, the URL is kept without its
 * query, and `responseBody` is a short excerpt with secrets redacted.
 */
export class APICallError extends ModelCallError {
  /** The provider, as the model names it (`openai`, `anthropic`, ...). */
  readonly provider: string;
  /** The endpoint, without query string. */
  readonly url: string;
  /** How long the provider asked the caller to wait (from `retry-after-ms` or `retry-after`), in ms. */
  readonly retryAfterMs: number | undefined;
  /** The provider's id of the failed request (`x-request-id`, `request-id`, ...), for its support desk. */
  readonly requestId: string | undefined;
  /** At most 2,000 characters of the answer's body, secrets redacted. */
  readonly responseBody: string | undefined;

  constructor(options: {
    message: string;
    provider: string;
    url: string;
    statusCode?: number;
    isRetryable: boolean;
    retryAfterMs?: number;
    requestId?: string;
    responseBody?: string;
    cause?: unknown;
    code?: 'api_call_failed' | 'invalid_response';
  }) {
    super(redactSecrets(options.message), {
      cause: options.cause,
      isRetryable: options.isRetryable,
      statusCode: options.statusCode,
      code: options.code ?? 'api_call_failed',
    });
    this.name = 'APICallError';
    this.provider = options.provider;
    this.url = options.url.split('?')[0]!;
    this.retryAfterMs = options.retryAfterMs;
    this.requestId = options.requestId;
    this.responseBody = options.responseBody === undefined ? undefined : redactSecrets(options.responseBody.slice(0, 2000));
  }
}

/** A provider model has no API key: none was passed and its environment variable is not set. Raised at the first call. */
export class MissingAPIKeyError extends CairnError {
  constructor(readonly provider: string, readonly envVar: string) {
    super('api_key_missing', `No API key for ${provider}: pass apiKey, or set ${envVar}.`, { fault: 'user' });
    this.name = 'MissingAPIKeyError';
  }
}

/**
 * A provider model's API key cannot be sent: it holds a character no HTTP
 * header value may carry (a line break, a NUL or another control character,
 * often pasted in with the key). Raised at the first call, before any request;
 * the key itself is never shown.
 */
export class InvalidAPIKeyError extends CairnError {
  constructor(readonly provider: string, readonly source: string) {
    super('api_key_invalid', `The API key for ${provider} (from ${source}) cannot be sent as an HTTP header: it contains a line break or another control character. Check the value for a trailing newline.`, { fault: 'user' });
    this.name = 'InvalidAPIKeyError';
  }
}

/** Options or an envelope that do not have the required shape. */
export class InvalidOptionsError extends CairnError {
  constructor(message: string, code: 'invalid_options' | 'invalid_envelope' | 'tool_context_invalid' = 'invalid_options') {
    super(code, message, { fault: 'user' });
    this.name = 'InvalidOptionsError';
  }
}

/**
 * A tool ran and returned, but its result cannot be stored in the call's
 * receipt: its JSON is over `maxReceiptBytes` (`result_too_large`), or it is
 * not JSON at all (`result_unstorable`: a cycle, a BigInt, a function). The
 * receipt records that the tool ran (status `unstorable`) with this error.
 */
export class ToolResultError extends CairnError {
  constructor(code: 'result_too_large' | 'result_unstorable', message: string, readonly toolCallId?: string) {
    super(code, message, { fault: 'user' });
    this.name = 'ToolResultError';
  }
}

/** A budget refused a model call (`budget_exceeded`), or a model the budget cannot price (`unpriced_model`). */
export class BudgetError extends CairnError {
  constructor(code: 'budget_exceeded' | 'unpriced_model' | 'budget_admission_conflict', message: string, options: { cause?: unknown } = {}) {
    super(code, message, { fault: code === 'budget_admission_conflict' ? 'dependency' : 'user', cause: options.cause, isRetryable: code === 'budget_admission_conflict' });
    this.name = 'BudgetError';
  }
}

/** The circuit breaker the workers share holds the model's calls back until its cooldown ends. Transient. */
export class BreakerOpenError extends CairnError {
  constructor(readonly key: string, readonly cooldownUntil: number) {
    super('breaker_open', `The circuit breaker for ${key} is open until ${new Date(cooldownUntil).toISOString()}; calls fail fast until then.`, {
      fault: 'dependency',
      isRetryable: true,
    });
    this.name = 'BreakerOpenError';
  }
}

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

/**
 * Cairn's errors. The base classes are in base.ts, the code list in codes.ts,
 * serialization and secret redaction in serialize.ts; the error classes each
 * part of Cairn throws are below. Add a new code to codes.ts and document it in
 * docs/errors.md.
 */
import { CairnError } from './base.js';
import type { CairnErrorCode } from './codes.js';
import { redactSecrets } from './serialize.js';

export { CairnError, CairnTypeError, type CairnErrorFields, type CairnTypeErrorKind, type Fault, type SerializedError } from './base.js';
export * from './codes.js';
export * from './serialize.js';

/**
 * A save whose revision is not the stored revision plus one (`subsystem: 'run'`), or a
 * conditional chat write at a revision that is not the stored one (`subsystem: 'chat'`;
 * `runId` then holds the chat id, also in `chatId`).
 */
export class RevisionConflictError extends CairnError {
  readonly subsystem: 'run' | 'chat';
  /** The chat whose write conflicted, for `subsystem: 'chat'`. */
  readonly chatId?: string;
  constructor(
    readonly runId: string,
    readonly expectedRevision: number,
    readonly storedRevision: number | null,
    subsystem: 'run' | 'chat' = 'run',
  ) {
    super(
      'revision_conflict',
      subsystem === 'chat'
        ? `Chat ${runId}: write expected revision ${expectedRevision}, found ${storedRevision ?? 'none'}.`
        : `Run ${runId}: save expected stored revision ${expectedRevision}, found ${storedRevision ?? 'none'}.`,
      { fault: 'dependency' },
    );
    this.name = 'RevisionConflictError';
    this.subsystem = subsystem;
    if (subsystem === 'chat') this.chatId = runId;
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

/**
 * A store was asked for a part of the contract its backend does not offer
 * (for instance a Redis store configured for `checkpointVersion: 3`). Thrown
 * when the store is configured, before anything is read or written.
 */
export class UnsupportedStoreError extends CairnError {
  constructor(
    /** The store's backend, e.g. `'redis'`. */
    readonly backend: string,
    /** What it does not offer, e.g. `'agent-run-v3'`. */
    readonly feature: string,
    message: string,
  ) {
    super('unsupported_store', message, { fault: 'user' });
    this.name = 'UnsupportedStoreError';
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
    code?: 'api_call_failed' | 'invalid_response' | 'transport_timeout';
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

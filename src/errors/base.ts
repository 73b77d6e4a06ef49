/**
 * Every error Cairn throws or reports is a {@link CairnError}: a stable `name`,
 * a `code` from a closed union, and structured fields. `isInstance` works across
 * copies of the package (it checks a marker symbol, not the prototype chain).
 *
 * The calls the spec says fail "with a TypeError" throw a {@link CairnTypeError}
 * instead: the same marker and fields on `TypeError`'s prototype chain, so it is
 * `instanceof TypeError` and `CairnError.isInstance` at once.
 */
import type { CairnErrorCode } from './codes.js';

const MARKER = Symbol.for('cairn.error');
/** The Cairn class a {@link CairnTypeError} stands for (its `name` is `'TypeError'`, so the name cannot say). */
const KIND = Symbol.for('cairn.error.kind');

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

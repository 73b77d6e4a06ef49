/** The session services' typed errors. Each says which session, never whose conversation. */
import { CairnError } from '../errors/index.js';

/**
 * An app name, user id or session id that is not allowed (empty, too long, a
 * NUL, and for a session id anything but `A-Z a-z 0-9 _ - .` or a leading
 * dot: a path separator or `..` could reach outside a service's directory).
 * Thrown before any file or row is touched.
 */
export class SessionIdError extends CairnError {
  /** Which part of the key: `'sessionId'`, `'appName'` or `'userId'`. */
  readonly field: 'sessionId' | 'appName' | 'userId';

  constructor(field: 'sessionId' | 'appName' | 'userId', message: string) {
    super('session_id_invalid', message, { fault: 'user' });
    this.name = 'SessionIdError';
    this.field = field;
  }
}

/** A turn that is not well-formed (no turn id, no messages, a message that is not plain JSON). Nothing was written. */
export class SessionTurnError extends CairnError {
  constructor(readonly sessionId: string, message: string) {
    super('session_turn_invalid', message, { fault: 'user' });
    this.name = 'SessionTurnError';
  }
}

/**
 * The stored session cannot be read: a file or row that does not parse, or
 * parses to something that is not a session of this format. The service
 * never resets it; move or repair it, then try again.
 */
export class SessionCorruptError extends CairnError {
  constructor(readonly sessionId: string, message: string, cause?: unknown) {
    super('session_corrupt', message, { fault: 'dependency', cause });
    this.name = 'SessionCorruptError';
  }
}

/**
 * The session id is stored for another app or another user than the one the
 * call named. Nothing was read out or written; the message does not say
 * whose session it is.
 */
export class SessionForeignError extends CairnError {
  constructor(readonly sessionId: string, readonly mismatch: 'appName' | 'userId' | 'sessionId') {
    super(
      'session_foreign',
      mismatch === 'userId'
        ? `Session ${sessionId} does not belong to this user.`
        : mismatch === 'appName'
          ? `Session ${sessionId} belongs to another app.`
          : `The session stored for ${sessionId} names another session id.`,
      { fault: 'user' },
    );
    this.name = 'SessionForeignError';
  }
}

/**
 * `appendSessionTurn` did not write the turn: another writer stored a turn
 * first and `onConflict` is `'throw'`, or the service could not get the write
 * in at all (a file lock another writer held for the whole wait). Nothing of
 * the turn was written.
 */
export class SessionConflictError extends CairnError {
  constructor(readonly sessionId: string, readonly attempts: number, readonly storedRevision: number) {
    super(
      'session_conflict',
      `Session ${sessionId}: the turn was not written; it met a concurrent write on ${attempts === 1 ? 'its attempt' : `each of ${attempts} attempts`} (stored revision ${storedRevision}).`,
      { fault: 'dependency', isRetryable: true },
    );
    this.name = 'SessionConflictError';
  }
}

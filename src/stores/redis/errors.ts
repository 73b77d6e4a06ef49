import { CairnError } from '../../errors/index.js';

/**
 * The Redis server did not answer: nothing listens at the URL, the connect
 * (or the handshake after it) took longer than `connectTimeoutMs`, or a lost
 * connection could not be made again in that time. Nothing was sent, so
 * nothing was written; the same call may succeed once the server is back
 * (`isRetryable`).
 *
 * @example
 * ```ts
 * try {
 *   await ops.connect();
 * } catch (error) {
 *   if (StoreUnreachableError.isInstance(error)) console.error(error.url, error.timeoutMs);
 * }
 * ```
 */
export class StoreUnreachableError extends CairnError {
  readonly backend = 'redis' as const;
  constructor(
    /** The server's URL, its password replaced by `***`. */
    readonly url: string,
    /** How long the store waited for an answer, in ms. */
    readonly timeoutMs: number,
    message: string,
    cause?: unknown,
  ) {
    super('store_unreachable', message, { cause, fault: 'dependency', isRetryable: true });
    this.name = 'StoreUnreachableError';
  }
}

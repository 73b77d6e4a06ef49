/**
 * The transport's own limits on a silent server, so no call waits forever:
 * a first-byte timeout (from sending the request to the response's headers)
 * and a stall timeout (the longest silence between two pieces of the body,
 * counted from the headers). Either ends the attempt with an
 * {@link APICallError} of code `transport_timeout`, which the engine retries
 * and fails over like a 5xx (its cause is a `TimeoutError`, so the transient
 * cause is `timeout`). A body that breaks off (a cut connection) becomes an
 * `APICallError` naming the provider and the endpoint, never a bare
 * `TypeError: terminated`. The caller's signal is obeyed throughout: its
 * abort rejects with its reason, unwrapped. Every timer is cleared on every
 * path (the answer read, failed, cancelled or aborted).
 */
import { APICallError, InvalidOptionsError } from '../../errors/index.js';

/** A provider's limits on a silent server, in milliseconds. */
export interface TransportTimeouts {
  /**
   * The longest wait from sending a request to the response's headers. A
   * call that is not streamed gets its headers only once the whole answer is
   * ready, so this bounds a complete non-streamed turn. @default 600000 (10 minutes)
   */
  firstByteMs?: number;
  /**
   * The longest silence between two pieces of an answer's body (stream
   * events, chunks of a JSON body), counted from the headers. A reasoning
   * model may think for minutes without a stream event. @default 300000 (5 minutes)
   */
  stallMs?: number;
}

/** 10 minutes: a non-streamed turn of a reasoning model can take that long before its headers. */
export const DEFAULT_FIRST_BYTE_MS = 600_000;
/** 5 minutes: a reasoning model may think that long between two stream events. */
export const DEFAULT_STALL_MS = 300_000;
/** The longest delay a Node timer takes (a longer one would fire at once). */
export const MAX_TRANSPORT_TIMEOUT_MS = 2_147_483_647;

/** Both limits, with the defaults filled in. */
export type ResolvedTimeouts = Required<TransportTimeouts>;

/**
 * The defaults: 10 minutes to the first byte, 5 minutes of silence at most.
 *
 * @example
 * const openai = createOpenAI({ timeouts: { ...DEFAULT_TRANSPORT_TIMEOUTS, stallMs: 30_000 } });
 */
export const DEFAULT_TRANSPORT_TIMEOUTS: Readonly<ResolvedTimeouts> = Object.freeze({
  firstByteMs: DEFAULT_FIRST_BYTE_MS,
  stallMs: DEFAULT_STALL_MS,
});

function limit(who: string, name: keyof TransportTimeouts, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TRANSPORT_TIMEOUT_MS) {
    throw new InvalidOptionsError(`${who}: timeouts.${name} must be a whole number of milliseconds from 1 to ${MAX_TRANSPORT_TIMEOUT_MS}, got ${JSON.stringify(value) ?? String(value)}.`);
  }
  return value;
}

/**
 * A provider's `timeouts` setting, checked and with the defaults filled in.
 * Throws InvalidOptionsError (at the provider's creation) for a value that is
 * not a whole number of milliseconds from 1 to 2^31-1.
 */
export function resolveTimeouts(value: TransportTimeouts | undefined, who: string): ResolvedTimeouts {
  if (value === undefined) return DEFAULT_TRANSPORT_TIMEOUTS;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidOptionsError(`${who}: timeouts must be an object { firstByteMs?, stallMs? }.`);
  }
  return {
    firstByteMs: limit(who, 'firstByteMs', value.firstByteMs, DEFAULT_FIRST_BYTE_MS),
    stallMs: limit(who, 'stallMs', value.stallMs, DEFAULT_STALL_MS),
  };
}

/** Who is asked, for the errors: the provider and its endpoint. */
export interface Exchange {
  provider: string;
  url: string;
  timeouts: ResolvedTimeouts;
  signal?: AbortSignal | undefined;
}

const endpoint = (url: string) => url.split('?')[0]!;

function timedOut(ex: Exchange, message: string): APICallError {
  return new APICallError({
    message,
    provider: ex.provider,
    url: ex.url,
    isRetryable: true,
    code: 'transport_timeout',
    // The engine reads a TimeoutError cause as the transient cause `timeout`.
    cause: new DOMException(message, 'TimeoutError'),
  });
}

/** The error of a server that sent no headers in time. */
export function firstByteTimeout(ex: Exchange): APICallError {
  return timedOut(ex, `${ex.provider} sent no answer within ${ex.timeouts.firstByteMs} ms (timeouts.firstByteMs) to ${endpoint(ex.url)}.`);
}

/** The error of a body that went silent. */
export function stallTimeout(ex: Exchange): APICallError {
  return timedOut(ex, `The answer of ${ex.provider} from ${endpoint(ex.url)} stalled: nothing arrived for ${ex.timeouts.stallMs} ms (timeouts.stallMs).`);
}

function describe(error: unknown): string {
  const message = (error as Error | null)?.message ?? String(error);
  const cause = (error as { cause?: { message?: unknown } } | null)?.cause?.message;
  return typeof cause === 'string' && cause !== '' && cause !== message ? `${message} (${cause})` : message;
}

/**
 * What a failed read of a body becomes: the caller's abort reason as it is,
 * an APICallError as it is, anything else (a cut connection) a retryable
 * APICallError without a status, whose cause keeps the system's code
 * (`UND_ERR_SOCKET`), so the engine takes it for a network failure.
 */
export function bodyReadError(error: unknown, source: { provider: string; url: string; signal?: AbortSignal | undefined }): unknown {
  if (source.signal?.aborted) return source.signal.reason ?? error;
  if (APICallError.isInstance(error)) return error;
  const name = (error as { name?: unknown } | null)?.name;
  if (name === 'AbortError' || name === 'TimeoutError') return error;
  return new APICallError({
    message: `The answer of ${source.provider} from ${endpoint(source.url)} broke off: ${describe(error)}`,
    provider: source.provider,
    url: source.url,
    isRetryable: true,
    cause: (error as { cause?: unknown } | null)?.cause ?? error,
  });
}

/** Statuses whose response has no body, which a Response cannot be built with. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * The response with a body that fails with {@link stallTimeout} when the
 * server is silent for `stallMs` while the reader waits, and with
 * {@link bodyReadError} when the read breaks. `done` runs once the body is
 * over, whichever way.
 */
function guardBody(response: Response, abort: AbortController, ex: Exchange, done: () => void): Response {
  const source = response.body;
  if (!source || NULL_BODY.has(response.status)) {
    done();
    return response;
  }
  const reader = source.getReader();
  let over = false;
  const end = () => {
    if (over) return false;
    over = true;
    done();
    return true;
  };
  const body = new ReadableStream<Uint8Array>({
    pull: (out) => new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        if (!end()) return resolve();
        const error = stallTimeout(ex);
        out.error(error);
        // Close the connection: the pending read then settles and is ignored.
        abort.abort(error);
        resolve();
      }, ex.timeouts.stallMs);
      reader.read().then(({ done: finished, value }) => {
        clearTimeout(timer);
        if (over) return resolve();
        if (finished) {
          end();
          out.close();
        } else {
          out.enqueue(value);
        }
        resolve();
      }, (error: unknown) => {
        clearTimeout(timer);
        if (end()) out.error(bodyReadError(error, ex));
        resolve();
      });
    }),
    cancel: (reason) => {
      end();
      return reader.cancel(reason).catch(() => undefined);
    },
  }, { highWaterMark: 0 });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * `fetch` under the transport's limits. Resolves with the response (its body
 * guarded against stalls) once the headers arrived; rejects with
 * {@link firstByteTimeout} when they did not in time, with the caller's
 * abort reason on an abort (even when the fetch ignores its signal), and
 * with what the fetch rejected with otherwise.
 */
export async function timedFetch(
  fetchFn: typeof globalThis.fetch, url: string, init: RequestInit, ex: Exchange,
): Promise<Response> {
  const caller = ex.signal;
  if (caller?.aborted) throw caller.reason;
  const abort = new AbortController();
  const onAbort = () => abort.abort(caller!.reason);
  caller?.addEventListener('abort', onAbort, { once: true });
  const release = () => caller?.removeEventListener('abort', onAbort);
  let response: Response;
  try {
    response = await new Promise<Response>((resolve, reject) => {
      const stop = () => {
        clearTimeout(timer);
        abort.signal.removeEventListener('abort', onStop);
      };
      const onStop = () => {
        stop();
        reject(abort.signal.reason);
      };
      const timer = setTimeout(() => abort.abort(firstByteTimeout(ex)), ex.timeouts.firstByteMs);
      abort.signal.addEventListener('abort', onStop, { once: true });
      Promise.resolve()
        .then(() => fetchFn(url, { ...init, signal: abort.signal }))
        .then((r) => {
          stop();
          resolve(r);
        }, (error: unknown) => {
          stop();
          reject(abort.signal.aborted ? abort.signal.reason : error);
        });
    });
  } catch (error) {
    release();
    throw error;
  }
  return guardBody(response, abort, ex, release);
}

/**
 * A signal that aborts with a `TimeoutError` after `ms`. `AbortSignal.timeout`
 * is not used: on Node 20 a timeout signal that only `AbortSignal.any` refers
 * to can be garbage-collected before it fires, so a call that hangs would
 * never be aborted. Here the timer holds the controller; `clear` stops it.
 */
export function timeoutSignal(ms: number): { signal: AbortSignal; clear: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException('The operation timed out.', 'TimeoutError')), ms);
  // A pending timeout must not keep the process alive on its own.
  timer.unref?.();
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

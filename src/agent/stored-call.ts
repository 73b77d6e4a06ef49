/** Changing a stored tool call before it is restored. */

interface StoredCall {
  context?: object;
  children?: Record<string, { snapshot?: { input?: unknown } } | undefined>;
}

/**
 * After a stored call's context changed: XState restarts every invocation that
 * was in flight with the input it was started with, and every invocation of
 * the tool-call machine takes the call's context as its input, so each one in
 * flight takes the changed context too.
 */
export function refreshInvocationInputs(call: StoredCall): void {
  for (const invoked of Object.values(call.children ?? {})) {
    const promise = invoked?.snapshot;
    if (promise && promise.input !== undefined) promise.input = structuredClone(call.context);
  }
}

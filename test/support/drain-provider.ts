/**
 * In-memory lease providers for tests that need to see (or decide) what a
 * renewal returns: a drain test waits for the renewal that carried the drain,
 * not on a timer; a lost-lease test makes renewals fail when it chooses.
 */
import { createInMemoryLeaseProvider } from 'cairn/agent';

type InMemoryLeaseProvider = ReturnType<typeof createInMemoryLeaseProvider>;
type Renew = InMemoryLeaseProvider['renew'];

/** The in-memory provider with `renew` replaced; the replacement gets the original to call. */
export function withRenew(clock: { now(): number }, renew: (inner: Renew, ...args: Parameters<Renew>) => ReturnType<Renew>) {
  const inner = createInMemoryLeaseProvider({ clock });
  const original = inner.renew.bind(inner);
  return {
    ...inner,
    acquire: inner.acquire.bind(inner),
    release: inner.release.bind(inner),
    inspect: inner.inspect.bind(inner),
    requestDrain: inner.requestDrain.bind(inner),
    renew: (...args: Parameters<Renew>) => renew(original, ...args),
  };
}

/** A provider whose `drainDelivered` resolves once a renewal has carried a drain request to the holder. */
export function drainSignallingProvider(clock: { now(): number }) {
  let delivered!: () => void;
  const drainDelivered = new Promise<void>((resolve) => (delivered = resolve));
  const provider = withRenew(clock, async (renew, lease, ttlMs) => {
    const renewal = await renew(lease, ttlMs);
    if (renewal?.drain) delivered();
    return renewal;
  });
  return { provider, drainDelivered };
}

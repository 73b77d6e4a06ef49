/**
 * An in-memory lease provider that tells the test when a renewal has carried a
 * drain request to the run holding the lease: a drain test waits on that, not
 * on a timer.
 */
import { createInMemoryLeaseProvider } from 'cairn/agent';

export function drainSignallingProvider(clock: { now(): number }) {
  const inner = createInMemoryLeaseProvider({ clock });
  let delivered!: () => void;
  const drainDelivered = new Promise<void>((resolve) => (delivered = resolve));
  const provider = {
    ...inner,
    acquire: inner.acquire.bind(inner),
    release: inner.release.bind(inner),
    inspect: inner.inspect.bind(inner),
    requestDrain: inner.requestDrain.bind(inner),
    async renew(lease: Parameters<typeof inner.renew>[0], ttlMs: number) {
      const renewal = await inner.renew(lease, ttlMs);
      if (renewal?.drain) delivered();
      return renewal;
    },
  };
  return { provider, drainDelivered };
}

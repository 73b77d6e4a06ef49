/**
 * Keeps a held lease alive: renews it every ttl / 3 until stopped. A renewal
 * that finds the lease gone (or throws) loses it for good; a renewal that
 * carries a drain request reports it. Used by a run leg and by
 * reconcileAgentRun alike.
 */
import type { Lease, LeaseProvider } from '../agent/types.js';

export interface LeaseKeeper {
  /** The lease as last renewed: what a save hands the store as its fence. */
  readonly lease: Lease;
  /** Whether a renewal found the lease gone. Once lost, it stays lost. */
  readonly lost: boolean;
  /** Stops renewing. The lease is not released: the holder does that. */
  stop(): void;
}

export function keepLease(
  provider: LeaseProvider,
  first: Lease,
  ttlMs: number,
  on: { renewed?: (lease: Lease) => void; lost?: () => void; drain?: () => void } = {},
): LeaseKeeper {
  let lease = first;
  let lost = false;
  let renewing = false;
  const lose = () => {
    if (lost) return;
    lost = true;
    on.lost?.();
  };
  const timer = setInterval(() => {
    if (renewing || lost) return;
    renewing = true;
    provider.renew(lease, ttlMs).then(
      (renewal) => {
        if (!renewal) return lose();
        lease = renewal.lease;
        on.renewed?.(lease);
        if (renewal.drain) on.drain?.();
      },
      lose,
    ).finally(() => (renewing = false));
  }, Math.max(10, Math.floor(ttlMs / 3)));
  timer.unref?.();
  return {
    get lease() {
      return lease;
    },
    get lost() {
      return lost;
    },
    stop: () => clearInterval(timer),
  };
}

import { InvalidOptionsError } from '../../errors/index.js';

/** A clock that moves only when told to: the seam the lease suites move time through. */
export interface ManualClock {
  now(): number;
  /** Moves the clock forward by `ms` (a negative `ms` is refused: clocks do not run back). */
  advance(ms: number): void;
}

/**
 * Creates a {@link ManualClock} starting at `start` (ms since the epoch).
 *
 * @example
 * ```ts
 * const clock = createManualClock();
 * const leases = createInMemoryLeaseProvider({ clock });
 * clock.advance(30_000); // every lease taken with a 30 s ttl has now expired
 * ```
 */
export function createManualClock(start = 1_700_000_000_000): ManualClock {
  let now = start;
  return {
    now: () => now,
    advance(ms) {
      if (!(ms >= 0)) throw new InvalidOptionsError(`A manual clock moves forward only; got ${ms} ms.`);
      now += ms;
    },
  };
}

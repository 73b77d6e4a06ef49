/**
 * Where the circuit breaker of the model layer keeps its state. One breaker
 * per `provider:modelId`; workers that share a store share the breaker. The
 * in-memory store serves one process; the SQLite and PostgreSQL ops stores
 * have a `breakers` member for many.
 */

export interface BreakerState {
  /** Transient failures in a row. */
  failures: number;
  /** While the run's clock is below this, calls fail at once with code `breaker_open`. */
  cooldownUntil?: number;
}

/** Keyed by `provider:modelId`. Both methods may be async. */
export interface BreakerStore {
  get(key: string): BreakerState | undefined | null | Promise<BreakerState | undefined | null>;
  set(key: string, state: BreakerState): void | Promise<void>;
}

/** A breaker store in this process's memory. */
export function createInMemoryBreakerStore(): BreakerStore & { readonly states: ReadonlyMap<string, BreakerState> } {
  const states = new Map<string, BreakerState>();
  return {
    states,
    get: (key) => {
      const state = states.get(key);
      return state ? { ...state } : undefined;
    },
    set: (key, state) => {
      states.set(key, { ...state });
    },
  };
}

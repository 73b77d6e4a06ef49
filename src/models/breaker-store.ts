/**
 * Where the circuit breaker of the model layer keeps its state. One breaker
 * per `provider:modelId`; workers that share a store share the breaker. The
 * in-memory store serves one process; the SQLite and PostgreSQL ops stores
 * have a `breakers` member for many.
 */
import { InvalidOptionsError } from '../errors/index.js';

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

/** The largest failure count a store keeps (the range of a 32-bit integer column). */
const MAX_FAILURES = 2_147_483_647;

/** For store backends: a key must be a non-empty string. */
export function checkBreakerKey(key: unknown): void {
  if (typeof key !== 'string' || key === '') throw new InvalidOptionsError('breaker: key must be a non-empty string.');
}

/**
 * For store backends: checks a state and returns its columns. A fractional
 * `cooldownUntil` is rounded up to the next millisecond (columns hold whole
 * ones): the breaker stays open a fraction of a millisecond longer, never shorter.
 */
export function checkBreakerState(state: BreakerState): { failures: number; cooldownUntil: number | null } {
  if (typeof state !== 'object' || state === null) throw new InvalidOptionsError('breaker: state must be { failures, cooldownUntil? }.');
  const { failures, cooldownUntil } = state;
  if (!Number.isInteger(failures) || failures < 0 || failures > MAX_FAILURES) {
    throw new InvalidOptionsError(`breaker: failures must be an integer from 0 to ${MAX_FAILURES}, got ${String(failures)}.`);
  }
  if (cooldownUntil === undefined || cooldownUntil === null) return { failures, cooldownUntil: null };
  if (typeof cooldownUntil !== 'number' || !Number.isFinite(cooldownUntil) || Math.abs(cooldownUntil) > Number.MAX_SAFE_INTEGER) {
    throw new InvalidOptionsError(`breaker: cooldownUntil must be a time in ms, got ${String(cooldownUntil)}.`);
  }
  return { failures, cooldownUntil: Math.ceil(cooldownUntil) };
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

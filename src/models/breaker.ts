/**
 * The circuit breaker of the model layer: after `threshold` transient
 * failures in a row of one provider and model, calls to it fail at once with
 * `breaker_open` until `cooldownMs` have passed; the first success closes it.
 * Its state lives in a {@link BreakerStore}, so workers that share the store
 * share the breaker.
 */
import { BreakerOpenError } from '../errors/index.js';
import type { BreakerState, BreakerStore } from './breaker-store.js';

export const DEFAULT_BREAKER_THRESHOLD = 5;
export const DEFAULT_BREAKER_COOLDOWN_MS = 60_000;

export interface BreakerSettings {
  /** Transient failures in a row that open the breaker. @default 5 */
  threshold?: number;
  /** How long an open breaker fails calls at once, ms. @default 60000 */
  cooldownMs?: number;
}

export class Breaker {
  private readonly threshold: number;
  private readonly cooldownMs: number;

  constructor(
    private readonly store: BreakerStore,
    settings: BreakerSettings | undefined,
    private readonly now: () => number,
  ) {
    this.threshold = settings?.threshold ?? DEFAULT_BREAKER_THRESHOLD;
    this.cooldownMs = settings?.cooldownMs ?? DEFAULT_BREAKER_COOLDOWN_MS;
  }

  /** Throws BreakerOpenError while the breaker of `key` cools down; returns the state it read. */
  async admit(key: string): Promise<BreakerState | null> {
    const state = (await this.store.get(key)) ?? null;
    const until = state?.cooldownUntil;
    if (typeof until === 'number' && until > this.now()) throw new BreakerOpenError(key, until);
    return state;
  }

  /** A success closes the breaker; written only when there was something to clear, so a healthy model costs no write. */
  async succeeded(key: string, before: BreakerState | null): Promise<void> {
    if (before && (before.failures > 0 || before.cooldownUntil !== undefined)) await this.store.set(key, { failures: 0 });
  }

  /** A transient failure counts toward opening the breaker. */
  async failed(key: string): Promise<void> {
    const state = (await this.store.get(key)) ?? null;
    const failures = (state?.failures ?? 0) + 1;
    await this.store.set(key, failures >= this.threshold ? { failures, cooldownUntil: this.now() + this.cooldownMs } : { failures });
  }
}

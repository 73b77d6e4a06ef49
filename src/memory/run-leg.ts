/**
 * What the memory actors work with, in a run or in a reconciliation: the
 * run's identity, its memory options, the permits of this process, a save of
 * the run's record and the run's warnings. Nothing here is run state: the
 * intent's plan and outcome live in its actor's snapshot.
 */
import type { ModelMessage } from '../models/types.js';
import type { RunMemoryOptions } from './run-options.js';
import type { ChargeTarget } from './run-charge.js';
import type { MemoryWarning } from './run-types.js';

export type { MemoryWarning };

export interface MemoryLeg {
  readonly runId: string;
  readonly memory: RunMemoryOptions;
  readonly permits: { intend(key: string): void; issue(key: string): boolean; take(key: string): boolean };
  readonly signal: AbortSignal;
  emit(warning: MemoryWarning): void;
  /** Saves the run's record as it stands now; rejects when the store does (or the lease is lost). */
  save(): Promise<void>;
  /** The run's transcript. */
  transcript(): readonly ModelMessage[];
  /** The context memory calls are charged to, or null; `warned` keeps the once-per-leg warnings. */
  readonly charge: ChargeTarget;
}

type AnySystem = object;
const legs = new WeakMap<AnySystem, MemoryLeg>();

/** Binds the leg a memory-intent actor works for to the actor system it runs in. */
export function bindMemoryLeg(system: AnySystem, leg: MemoryLeg): void {
  legs.set(system, leg);
}

export function memoryLegOf(system: AnySystem): MemoryLeg | undefined {
  return legs.get(system);
}

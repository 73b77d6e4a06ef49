/**
 * What the actor implementations of one run leg are given besides their input:
 * the run's options (fixed for the leg), the permits of this process, the
 * event sink, the save, and the run's transcript.
 *
 * Nothing here is run state. What the run remembers (receipts, approval
 * requests and verdicts, fail-over record, where each call stands) lives in
 * the run actor's snapshot and its tool-call children, and every actor gets it
 * as input and hands its result back as output. The permits are the one piece
 * of state of the process: see {@link Permits}.
 */
import type { NormalizedOptions } from '../agent/options.js';
import type { AgentEvent, Message } from '../agent/types.js';
import type { Permits } from './permits.js';
import type { PlantedBugs } from './test-switches.js';
import { timeoutSignal } from './timeout-signal.js';

export interface Leg<T = unknown> {
  readonly opts: NormalizedOptions<T>;
  readonly runId: string;
  readonly permits: Permits;
  /** The caller's abort signal (or one that never aborts). */
  readonly signal: AbortSignal;
  /** Known bugs a test planted (see test-switches.ts); empty outside such tests. */
  readonly bugs: PlantedBugs;
  emit(event: AgentEvent<T>): void;
  /** Durable save of the record as the run actor holds it now; rejects (and fails the run) when the store does. */
  save(): Promise<void>;
  /**
   * The run's transcript. It is the one input handed over by reference: it
   * only grows, it does not change while a batch of calls runs or a model is
   * called, and copying it into every invocation's input would copy it into
   * every save.
   */
  transcript(): readonly Message[];
}

/** The run's deadline (an absolute time on its clock, carried in the actor's input) has passed. */
export function deadlinePassed(leg: Leg, deadlineAt: number | null): boolean {
  return deadlineAt !== null && leg.opts.now() >= deadlineAt;
}

/** The signal an effect gets: its actor's own, the caller's abort signal, and the run's deadline. */
export function effectSignal(leg: Leg, own: AbortSignal, deadlineAt: number | null): AbortSignal {
  // With no signal of the caller's and no deadline, nothing but the actor's own signal can abort.
  if (deadlineAt === null && !leg.opts.raw.abortSignal) return own;
  const signals = [own, leg.signal];
  if (deadlineAt !== null) signals.push(timeoutSignal(Math.max(0, deadlineAt - leg.opts.now())).signal);
  return AbortSignal.any(signals);
}

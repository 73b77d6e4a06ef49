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
import type { LegTracer } from '../tracing/leg-tracer.js';
import type { ActorSystem } from 'xstate';
import { fromLazyPromise } from './lazy-promise.js';

type AnyActorSystem = ActorSystem<any>;
import { CairnError } from '../errors/index.js';
import type { NormalizedOptions } from '../agent/options.js';
import type { AgentEvent, Message } from '../agent/types.js';
import type { Permits } from './permits.js';
import type { ExecutionContext } from '../policy/index.js';
import type { RunBudget } from './budget.js';
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
  /** The run's execution context: the one the caller gave, or a private one with no policy (what a verifier is handed). */
  readonly execution: ExecutionContext;
  /** Budget admission of the model attempts; null when the caller gave no execution context. */
  readonly budget: RunBudget | null;
  /** The leg's spans; null when tracing is off or has no SDK behind it (docs/tracing.md). */
  readonly tracer: LegTracer | null;
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

/**
 * The machines are provided once per process; each actor finds the leg it
 * works for through the actor system its run lives in.
 */
const legs = new WeakMap<AnyActorSystem, Leg>();

export function bindLeg(system: AnyActorSystem, leg: Leg): void {
  legs.set(system, leg);
}

export function legOf(system: AnyActorSystem): Leg {
  const leg = legs.get(system);
  if (!leg) throw new CairnError('internal', 'A run actor ran outside the leg that hosts it.');
  return leg;
}

export interface ActorArgs<I> {
  input: I;
  signal: AbortSignal;
  system: AnyActorSystem;
}

/** A promise actor of a run: its body gets the leg it works for, and its input. */
export function legActor<O, I>(body: (leg: Leg, args: ActorArgs<I>) => Promise<O>) {
  // fromPromise's logic with the actor's signal made only when the body reads it (see lazy-promise.ts).
  return fromLazyPromise<O, I>((args) => body(legOf(args.system), args));
}

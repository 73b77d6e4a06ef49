/**
 * The actor host of one run leg: provides the machines' actors, saves the
 * envelope (a pure function of the run actor's persisted snapshot) at the
 * machine's persistence points, and turns where the run comes to rest into a
 * result. It holds no run state of its own: the leg's permits, its lease and
 * the revision it last wrote are all it keeps.
 */
import { createActor, type Actor, type SnapshotFrom } from 'xstate';
import {
  AgentRunLeaseError, PersistenceError, RevisionConflictError, serializeError, type SerializedError,
} from '../errors/index.js';
import { runMachine, toolCallMachine } from '../../machines/index.js';
import type { CallAnswer, Json, RunContext, RunInput, RunPlan } from '../../machines/index.js';
import { toJson } from '../agent/json.js';
import { resultBase } from '../agent/result.js';
import type { NormalizedOptions } from '../agent/options.js';
import type { AgentEvent, AgentResult, AgentRunEnvelope, AgentRunModels, AgentWarning, Lease, Message } from '../agent/types.js';
import { bindLeg, type Leg } from './host-state.js';
import { Permits } from './permits.js';
import { planOf, replan } from './plan.js';
import { envelopeOf, type PersistedRun } from './record.js';
import { callFacts, watchCalls } from './call-events.js';
import { LegTracer } from '../tracing/leg-tracer.js';
import { accountingOf, afterFinalSave, detachResult, endingExtras, resultOfSnapshot, retryFromOf } from './host-result.js';
import { ledgerCheckpointOf, persistedOf, restoreChanges, restoredActorOf, restoredRecordOf, sameRecord, untouchedSince } from './host-record.js';
import type { RestoredActor, RestoredRecord } from './host-record.js';
import { runActors } from './run-actors.js';
import { SaveQueue } from './save-queue.js';
import { keepLease } from './lease-keeper.js';
import { plantedBugsIn } from './test-switches.js';
import { toolCallLogic } from './tool-actors.js';
import { createExecutionContext, type ExecutionContext } from '../policy/index.js';
import { RunBudget } from './budget.js';
import { candidatesOf } from './model-call.js';
import { batchViolation } from './run-actors.js';

type RunSnapshot = SnapshotFrom<typeof runMachine>;
type CallSnapshot = SnapshotFrom<typeof toolCallMachine>;

export const DEFAULT_LEASE_TTL_MS = 30_000;

/** The run machine with every actor provided, once per process: each actor finds its leg through its actor system. */
const runLogic = runMachine.provide({ actors: { toolCall: toolCallLogic, ...runActors } });

export class RunHost<T> implements Leg<T> {
  readonly permits = new Permits();
  readonly warnings: AgentWarning[] = [];
  readonly signal: AbortSignal;
  readonly bugs;
  readonly execution: ExecutionContext;
  readonly budget: RunBudget | null;
  readonly tracer: LegTracer | null;
  private revision: number;
  private readonly createdAt: number;
  private readonly queue = new SaveQueue(() => this.write());
  private storeFailure: SerializedError | null = null;
  private actor!: Actor<typeof runMachine>;
  private machineError: unknown = undefined;
  /** The lease this leg holds, renewed while it works. */
  lease: Lease | null = null;
  private leaseLost = false;
  /** Set once the leg has come to rest: nothing more is written from it. */
  private closed = false;
  private readonly reportedCalls = new Set<string>();
  /** The snapshot of the last committed save: a transiently failed run is stored from it. */
  private lastCommitted: PersistedRun | null;
  private readonly announcedCalls = new Set<string>();
  /** What this leg's options leave for the stages to do: the run starts with it, and a restored run is given it. */
  private readonly plan: RunPlan;
  /** The next write saves the last committed snapshot with a newer ledger (see {@link saveHold}). */
  private holdOnly = false;
  /**
   * The record this leg was restored from, until its first write: a restored run whose snapshot was taken while a
   * save was in flight (the suspension's, a drain's) asks for that save again, and when the record it would write is
   * the stored one but for its revision and time, it is not written twice.
   */
  private restored: RestoredRecord | null;
  /** The actor's snapshots as restored from the stored record: while it holds them, its first write is not made. */
  private untouched: RestoredActor | null = null;

  constructor(
    readonly opts: NormalizedOptions<T>,
    readonly runId: string,
    private readonly sink: (event: AgentEvent<T>) => void,
    stored?: AgentRunEnvelope,
  ) {
    this.signal = opts.raw.abortSignal ?? new AbortController().signal;
    this.bugs = plantedBugsIn(opts.raw.deps);
    this.revision = stored?.revision ?? 0;
    this.lastCommitted = stored ? (stored.snapshot as unknown as PersistedRun) : null;
    this.createdAt = stored?.createdAt ?? opts.now();
    this.plan = planOf(opts as NormalizedOptions<unknown>);
    this.tracer = LegTracer.start(opts.raw.tracing, runId, stored);
    // A run given no context still hands its verifier one: private, with no policy and nothing shared.
    this.execution = opts.execution ?? createExecutionContext({ clock: { now: opts.now } });
    this.budget = opts.execution
      ? new RunBudget(opts.execution, runId, opts.generateId(), opts.now, opts.raw.session ? () => this.saveHold() : null, (warning) => this.emit(warning))
      : null;
    for (const id of (stored?.snapshot as unknown as PersistedRun | undefined)?.context?.batch ?? []) this.announcedCalls.add(id);
    const context = (stored?.snapshot as unknown as PersistedRun | undefined)?.context;
    this.restored = stored && context && !opts.execution ? restoredRecordOf(stored) : null;
  }

  emit(event: AgentEvent<T>): void {
    if (event.type === 'warning') this.warnings.push(event);
    this.tracer?.event(event as AgentEvent<unknown>);
    this.sink(event);
  }

  transcript(): readonly Message[] {
    return this.actor.getSnapshot().context.messages as unknown as Message[];
  }

  save(): Promise<void> {
    if (!this.opts.raw.session || this.closed) return Promise.resolve();
    if (this.leaseLost && this.lease) return Promise.reject(new AgentRunLeaseError('lease_lost', this.lease.key));
    if (this.storeFailure) return Promise.reject(new PersistenceError(this.storeFailure.message));
    return this.queue.flush();
  }

  /**
   * Saves the last committed record again, with the ledger as it is now: a
   * reservation made where no save precedes its call (a repair, a call after a
   * verifier's feedback, the first call of a drained run's resume, a retry or
   * a fail-over inside one call) is in the record before the call is sent.
   * The run is between persistence points then, so the record it restores
   * from stays the one it had; only its ledger is newer.
   */
  private saveHold(): Promise<void> {
    this.holdOnly = true;
    return this.save();
  }

  /** A new run: start the actor and drive it to rest. */
  start(input: RunInput): Promise<AgentResult<T>> {
    this.actor = createActor(runLogic, { input: { ...input, plan: this.plan } });
    bindLeg(this.actor.system, this as unknown as Leg);
    watchCalls(this.actor, this.announcedCalls, this.reportedCalls, (event) => this.emit(event as AgentEvent<T>), this.tracer);
    return this.drive(() => this.actor.start());
  }

  /**
   * A stored run: restore the actor from its snapshot, let the calls that were
   * moving come to rest, then hand the settle its answers and drive it to rest.
   */
  resume(
    stored: AgentRunEnvelope,
    answers: (open: Map<string, CallSnapshot>) => Record<string, CallAnswer>,
    retryPhase?: 'loop' | 'finalize',
    cancel?: Json | null,
  ): Promise<AgentResult<T>> {
    const snapshot = stored.snapshot as unknown as PersistedRun;
    replan(snapshot, this.plan);
    const asStored = this.restored !== null && !restoreChanges(this.restored, stored, this.opts.binding);
    // XState walks every value of a restored context looking for actor references. The transcript and the ended
    // receipts hold none and are most of a long run's context, so the actor is restored without them and they go
    // back into its (not yet started) context before anything reads it.
    const { messages, receipts } = snapshot.context;
    const context: RunContext = { ...snapshot.context, messages: [], receipts: [] };
    this.actor = createActor(runLogic, {
      snapshot: { ...snapshot, context } as never,
      input: undefined as never,
    });
    context.messages = messages;
    context.receipts = receipts;
    // Before the actor starts: anything that moves it from here on makes a new snapshot.
    if (asStored) this.untouched = restoredActorOf(this.actor);
    bindLeg(this.actor.system, this as unknown as Leg);
    watchCalls(this.actor, this.announcedCalls, this.reportedCalls, (event) => this.emit(event as AgentEvent<T>), this.tracer);
    return this.drive(() => {
      this.actor.start();
      this.actor.send({ type: 'RESTORED' });
      if (retryPhase) this.actor.send({ type: 'RETRY_FAILED', phase: retryPhase });
      // A queued cancel ends the run before anything of it moves (src/runtime/cancel-queued.ts).
      if (cancel) this.actor.send({ type: 'CANCEL', details: cancel });
    }, cancel ? undefined : () => {
      // The settle takes the live path: the policy decides for the calls still open before any of them goes on.
      const open = [...this.openCalls().values()].map((call) => call.context);
      const violation = batchViolation(this as unknown as Leg, open.filter((c) => c.receipt === null || c.receipt.status === 'executing'));
      if (violation) this.actor.send({ type: 'POLICY_VIOLATION', error: violation });
      else this.actor.send({ type: 'RESUME', answers: answers(this.openCalls()) });
    });
  }

  /** The calls of the current batch that have not ended, by child id. */
  openCalls(): Map<string, CallSnapshot> {
    const snapshot = this.actor.getSnapshot();
    const out = new Map<string, CallSnapshot>();
    for (const id of snapshot.context.batch) {
      const child = snapshot.children[id as keyof typeof snapshot.children] as { getSnapshot(): CallSnapshot } | undefined;
      const callSnapshot = child?.getSnapshot();
      if (callSnapshot && callSnapshot.status === 'active') out.set(id, callSnapshot);
    }
    return out;
  }

  /** The run is at rest: ended, or waiting on answers or on an operator. */
  private atRest(snapshot: RunSnapshot): boolean {
    return snapshot.status !== 'active' || snapshot.matches('suspended') || snapshot.matches('reconciling') || snapshot.matches('drained');
  }

  private async drive(begin: () => void, settle?: () => void): Promise<AgentResult<T>> {
    this.emit({ type: 'run-start', runId: this.runId, resumed: this.revision > 0 });
    const stopRenewing = this.renewLease();
    try {
      return await this.driveHeld(begin, settle);
    } finally {
      stopRenewing();
    }
  }

  /**
   * Renews the lease while the leg works. A lost lease stops every write; a
   * drain request stops the run at its next model-step boundary.
   */
  private renewLease(): () => void {
    const options = this.opts.raw.lease;
    if (!options || !this.lease) return () => undefined;
    const keeper = keepLease(options.provider, this.lease, options.ttlMs ?? DEFAULT_LEASE_TTL_MS, {
      renewed: (lease) => (this.lease = lease),
      lost: () => this.loseLease(),
      drain: () => {
        if (this.actor.getSnapshot().status === 'active') this.actor.send({ type: 'DRAIN' });
      },
    });
    return () => keeper.stop();
  }

  private loseLease(): void {
    if (this.leaseLost || !this.lease) return;
    this.leaseLost = true;
    const error = serializeError(new AgentRunLeaseError('lease_lost', this.lease.key));
    this.storeFailure = error;
    if (this.actor.getSnapshot().status === 'active') this.actor.send({ type: 'STORE_FAILED', error });
  }

  private async driveHeld(begin: () => void, settle?: () => void): Promise<AgentResult<T>> {
    begin();
    await this.untilRest();
    if (settle && this.machineError === undefined && this.actor.getSnapshot().status === 'active') {
      settle();
      await this.untilRest();
    }
    // The caller's copy of the transcript is made when it first reads it (detachResult).
    const result = detachResult(await this.finish());
    this.tracer?.end(result as AgentResult<unknown>, () => new Map([...this.openCalls()].map(([id, call]) => [id, callFacts(call)])));
    this.closed = true;
    this.actor.stop();
    return result;
  }

  private untilRest(): Promise<void> {
    return new Promise<void>((resolve) => {
      let done = false;
      let subscription: { unsubscribe(): void } | undefined;
      const check = () => {
        if (done || !(this.machineError !== undefined || this.atRest(this.actor.getSnapshot()))) return;
        done = true;
        subscription?.unsubscribe();
        resolve();
      };
      // An actor that is already done completes the observer synchronously, inside subscribe.
      subscription = this.actor.subscribe({
        next: check,
        error: (error) => {
          this.machineError = error;
          check();
        },
        complete: check,
      });
      if (done) subscription.unsubscribe();
      check();
    });
  }

  private async finish(): Promise<AgentResult<T>> {
    // No save of this leg may land after its result is returned.
    await this.queue.idle();
    if (this.machineError !== undefined) {
      return this.failedResult(serializeError(this.machineError));
    }
    const snapshot = this.actor.getSnapshot();
    const result = this.resultOf(snapshot, true);
    if (this.budget) {
      await this.budget.close();
      result.accounting = await accountingOf(this.resultBase(snapshot.context, true).accounting, this.opts.execution, snapshot.context.usageByModel);
    }
    if (snapshot.status === 'done' && this.opts.raw.session && !this.storeFailure) {
      // Completion is reported only after the terminal write succeeded.
      try {
        await this.writeTerminal(result);
      } catch (error) {
        return afterFinalSave(snapshot.context, result, error) ?? this.failedResult(serializeError(error));
      }
    }
    return result;
  }

  private failedResult(error: SerializedError): AgentResult<T> {
    const base = this.resultBase(this.actor.getSnapshot().context, true);
    return { ...base, status: 'failed', error };
  }

  /** `shared`: with the context's own transcript (see resultBase), for a result detachResult hands over or a save replaces. */
  private resultBase(context: RunContext, shared = false) {
    return resultBase(this.runId, context, this.warnings, shared);
  }

  resultOf(snapshot: RunSnapshot, shared = false): AgentResult<T> {
    return resultOfSnapshot<T>(snapshot, this.resultBase(snapshot.context, shared), () => this.persisted());
  }

  /**
   * The run actor's persisted snapshot as plain JSON. The transcript and the
   * ended calls' receipts only grow, and their entries are never edited, so
   * they are set aside while XState persists the rest (it walks every value
   * of a context looking for actor references, and they hold none) and
   * handed over as they are: a save copies what changed, not the history.
   */
  private persisted(): PersistedRun {
    return persistedOf(this.actor);
  }

  /** The envelope of the run as its actor holds it now, saved as the next revision. */
  envelope(extras?: Parameters<typeof envelopeOf>[2]): AgentRunEnvelope {
    return envelopeOf(this.persisted(), this.identity(), { ...endingExtras(this.actor.getSnapshot(), (s) => this.resultOf(s, true), this.lastCommitted), ...extras });
  }

  /** The run's identity for its next save. */
  private identity() {
    return {
      runId: this.runId,
      scope: this.opts.raw.session!.scope,
      revision: this.revision + 1,
      binding: { ...this.opts.binding },
      createdAt: this.createdAt,
      updatedAt: this.opts.now(),
    };
  }

  private async write(): Promise<void> {
    // Let the transition that asked for this save finish, so the snapshot shows the state that asked.
    await Promise.resolve();
    if (this.closed) return;
    // A save asked for before the lease was lost or a write failed must not start after it: nothing more is written.
    if (this.leaseLost && this.lease) throw new AgentRunLeaseError('lease_lost', this.lease.key);
    if (this.storeFailure) throw new PersistenceError(this.storeFailure.message);
    // Without an execution context there is no ledger, and the save takes no more turns of the event loop than before.
    if (!this.opts.execution) {
      const restored = this.restored;
      const untouched = this.untouched;
      this.restored = null;
      this.untouched = null;
      // The actor holds what it was restored from, the stored record: nothing to write, nothing to build.
      if (restored && untouched && untouchedSince(this.actor, untouched)) return;
      const envelope = this.envelope();
      // The stored record already says all this one would: nothing changed since it was saved but the clock.
      if (restored && sameRecord(envelope, restored)) return;
      return this.commit(envelope);
    }
    const hold = this.holdOnly;
    this.holdOnly = false;
    const snapshot = this.actor.getSnapshot();
    // A save asked for at a persistence point that this write also serves saves that point, ledger included.
    if (hold && (snapshot.matches({ loop: 'callingModel' }) || snapshot.matches({ finalizing: 'callingModel' }))) {
      // Every call comes after the start's save, so a record to write again is there.
      if (this.lastCommitted === null) return;
      const ledger = await this.ledgerCheckpoint();
      return this.commit(envelopeOf(this.lastCommitted, this.identity(), { ledger }));
    }
    await this.reserveAhead();
    const ledger = await this.ledgerCheckpoint();
    await this.commit(this.envelope({ ledger }));
  }

  /**
   * A save that a model call follows (the start, a step's checkpoint, a turn
   * without calls that finalization follows) reserves that call first, so the
   * reservation is in the record before the call is sent, without a save of
   * its own. Calls that no save precedes are saved by {@link saveHold}.
   */
  private async reserveAhead(): Promise<void> {
    if (!this.budget) return;
    const snapshot = this.actor.getSnapshot();
    const context = snapshot.context;
    // A run that stops at the boundary makes no call: what was reserved for it is given back before the record is saved.
    if (snapshot.matches('draining')) return this.budget.releaseAhead();
    if (!(snapshot.matches('starting') || snapshot.matches({ loop: 'checkpointing' }) || this.finalizesNext(context))) return;
    if (context.drainRequested || context.step >= context.maxSteps) return;
    const model = candidatesOf(this.opts.models, (context.models ?? null) as AgentRunModels | null)[0]!;
    await this.budget.reserveAhead(model, context.step, [context.messages, this.opts.parameters], this.opts.settings?.maxOutputTokens);
  }

  /** A loop turn without calls is being saved, and the run asks for its structured answer next (see the run chart's `loop.recordingTurn`). */
  private finalizesNext(context: RunContext): boolean {
    if (!this.actor.getSnapshot().matches({ loop: 'recordingTurn' })) return false;
    const turn = context.lastTurn;
    if (!turn || turn.toolCalls.length > 0 || context.outputMode === 'none') return false;
    return !['content-filter', 'refusal', 'length'].includes(turn.finishReason);
  }

  private ledgerCheckpoint(): Promise<AgentRunEnvelope['ledger']> {
    return ledgerCheckpointOf(this.opts.execution);
  }

  private async writeTerminal(result: AgentResult<T>): Promise<void> {
    await this.queue.idle();
    // The stored result's transcript is the run's own (the messages the snapshot holds, never edited once made), not
    // a JSON copy of the caller's copy: the store then sees it is the snapshot's transcript without comparing it.
    const json = toJson<AgentResult<unknown>>({ ...result, messages: [] });
    json.messages = this.actor.getSnapshot().context.messages as unknown as Message[];
    // A transient failure keeps the last checkpoint as the snapshot: retryFailed goes on from there.
    const retryFrom = result.status === 'failed' ? retryFromOf(this.actor.getSnapshot().context, this.lastCommitted) : undefined;
    const ledger = this.opts.execution ? await this.ledgerCheckpoint() : undefined;
    await this.commit(this.envelope({ result: json, ...(retryFrom ? { retryFrom } : {}), ...(ledger ? { ledger } : {}) }));
  }

  private async commit(envelope: AgentRunEnvelope): Promise<void> {
    try {
      const store = this.opts.raw.session!.store;
      const options = this.lease ? { lease: this.lease } : undefined;
      if (this.tracer) {
        // The next leg links its run span to this one's (docs/tracing.md).
        envelope.trace = this.tracer.trace();
        await this.tracer.save(envelope, () => store.save(envelope, options));
      } else await store.save(envelope, options);
      this.revision = envelope.revision;
      if (envelope.status !== 'completed' && envelope.status !== 'failed' && envelope.status !== 'stopped') {
        this.lastCommitted = envelope.snapshot as unknown as PersistedRun;
      }
    } catch (error) {
      // A lease error, or a store's own PersistenceError (it names the run already), goes on as it is.
      const failure = AgentRunLeaseError.isInstance(error) || PersistenceError.isInstance(error) ? error : new PersistenceError(
        RevisionConflictError.isInstance(error)
          ? `Another executor saved run ${this.runId} first; this one stops.`
          : `Saving run ${this.runId} failed: ${serializeError(error).message}`,
        error,
      );
      if (!this.storeFailure) {
        this.storeFailure = serializeError(failure);
        // A rejected write stops further execution.
        if (this.actor.getSnapshot().status === 'active') this.actor.send({ type: 'STORE_FAILED', error: this.storeFailure });
      }
      throw failure;
    }
  }
}


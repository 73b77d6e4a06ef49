/**
 * The actor host of one run leg: provides the machines' actors, persists the
 * envelope at the machine's persistence points, and turns where the run
 * comes to rest into a result.
 */
import { createActor, fromPromise, type Actor, type SnapshotFrom } from 'xstate';
import {
  AgentRunLeaseError, PersistenceError, RevisionConflictError, serializeError, type SerializedError,
} from '../errors/index.js';
import { runMachine, toolCallMachine, RUN_MACHINE_VERSION } from '../../machines/index.js';
import type { CallAnswer, RunContext, RunInput } from '../../machines/index.js';
import {
  approvalIdFor, envelopeVersion, ENVELOPE_KIND, receiptHasOutcome, receiptKey, RUN_MACHINE_ID,
} from '../agent/envelope.js';
import { frozenJsonCopy, toJson } from '../agent/json.js';
import { resultBase } from '../agent/result.js';
import type { NormalizedOptions } from '../agent/options.js';
import type {
  AgentEvent, AgentResult, AgentRunEnvelope, AgentRunModels, AgentRunStatus, AgentToolReceipt, AgentWarning, JsonValue, Lease,
  PendingApproval, PendingClientCall, StopReason, UnknownEffect,
} from '../agent/types.js';
import { describeUnknownEffects } from '../agent/interrupted.js';
import type { HostState } from './host-state.js';
import { runActors } from './run-actors.js';
import { SaveQueue } from './save-queue.js';
import { keepLease } from './lease-keeper.js';
import { provideToolCallMachine } from './tool-actors.js';
import { initialModels } from './model-call.js';
import { timeoutSignal } from './timeout-signal.js';

type RunSnapshot = SnapshotFrom<typeof runMachine>;
type CallSnapshot = SnapshotFrom<typeof toolCallMachine>;

export const DEFAULT_LEASE_TTL_MS = 30_000;

export interface Pending {
  approvals: PendingApproval[];
  clientCalls: PendingClientCall[];
}

export class RunHost<T> implements HostState<T> {
  readonly receipts: Record<string, AgentToolReceipt>;
  readonly approvals: AgentRunEnvelope['approvals'];
  readonly permits = new Set<string>();
  readonly rawOutcomes: HostState['rawOutcomes'] = new Map();
  readonly warnings: AgentWarning[] = [];
  readonly retryKeys = new Set<string>();
  readonly signal: AbortSignal;
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
  private lastCommitted: JsonValue | null;
  private readonly announcedCalls = new Set<string>();
  private readonly requestedClientCalls = new Set<string>();
  /** The transcript the last save copied, and its frozen copies. */
  private lastMessages: { source: readonly unknown[]; copies: unknown[] } | null = null;

  constructor(
    readonly opts: NormalizedOptions<T>,
    readonly runId: string,
    private readonly sink: (event: AgentEvent<T>) => void,
    stored?: AgentRunEnvelope,
  ) {
    this.signal = opts.raw.abortSignal ?? new AbortController().signal;
    this.receipts = stored ? structuredClone(stored.receipts) : {};
    this.approvals = stored ? structuredClone(stored.approvals ?? {}) : {};
    this.revision = stored?.revision ?? 0;
    this.lastCommitted = stored ? stored.snapshot : null;
    this.createdAt = stored?.createdAt ?? opts.now();
    for (const id of (stored?.snapshot as { context?: RunContext } | undefined)?.context?.batch ?? []) this.announcedCalls.add(id);
    for (const call of stored?.pendingClientCalls ?? []) this.requestedClientCalls.add(receiptKey(call.modelStep, call.toolCallId));
  }

  emit(event: AgentEvent<T>): void {
    if (event.type === 'warning') this.warnings.push(event);
    this.sink(event);
  }

  context(): RunContext {
    return this.actor.getSnapshot().context;
  }

  /** The deadline is the run's own (an absolute time in its context), so a resume keeps it. */
  deadlinePassed(): boolean {
    const deadline = this.context().deadlineAt;
    return deadline !== null && this.opts.now() >= deadline;
  }

  effectSignal(own: AbortSignal): AbortSignal {
    const deadline = this.context().deadlineAt;
    // With no signal of the caller's and no deadline, nothing but the actor's own signal can abort: no combined signal to build.
    if (deadline === null && !this.opts.raw.abortSignal) return own;
    const signals = [own, this.signal];
    if (deadline !== null) signals.push(timeoutSignal(Math.max(0, deadline - this.opts.now())).signal);
    return AbortSignal.any(signals);
  }

  save(): Promise<void> {
    if (!this.opts.raw.session || this.closed) return Promise.resolve();
    if (this.leaseLost && this.lease) return Promise.reject(new AgentRunLeaseError('lease_lost', this.lease.key));
    if (this.storeFailure) return Promise.reject(new PersistenceError(this.storeFailure.message));
    return this.queue.flush();
  }

  private machine() {
    const host = this as unknown as HostState;
    return runMachine.provide({
      actors: {
        toolCall: provideToolCallMachine(host),
        saveCheckpoint: fromPromise<void, { at: string }>(() => host.save()),
        ...runActors(host),
      },
    });
  }

  /** A new run: start the actor and drive it to rest. */
  start(input: RunInput): Promise<AgentResult<T>> {
    this.actor = createActor(this.machine(), { input });
    this.watchCalls();
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
  ): Promise<AgentResult<T>> {
    this.actor = createActor(this.machine(), {
      snapshot: stored.snapshot as never,
      input: undefined as never,
    });
    this.watchCalls();
    return this.drive(() => {
      this.actor.start();
      this.actor.send({ type: 'RESTORED' });
      if (retryPhase) this.actor.send({ type: 'RETRY_FAILED', phase: retryPhase });
    }, () => {
      this.actor.send({ type: 'RESUME', answers: answers(this.openCalls()) });
    });
  }

  /**
   * Every call is announced once when the run dispatches it (a restored leg
   * does not announce its open calls again), and reported once when it ends,
   * whichever of its final states it reached. The run's own snapshots say
   * which calls its batch holds; each call's actor is then watched by a
   * subscription of its own, so no inspector sees every actor's every event.
   */
  private watchCalls(): void {
    const watched = new Set<string>();
    this.actor.subscribe({
      next: (snapshot) => {
        for (const id of snapshot.context.batch) {
          if (watched.has(id)) continue;
          const child = snapshot.children[id as keyof typeof snapshot.children] as Actor<typeof toolCallMachine> | undefined;
          if (!child) continue;
          watched.add(id);
          if (!this.announcedCalls.has(id)) {
            this.announcedCalls.add(id);
            const c = child.getSnapshot().context;
            this.emit({ type: 'tool-call-start', step: c.modelStep, toolCallId: c.toolCallId, toolName: c.toolName, args: c.args as JsonValue });
          }
          // A call that already ended completes the observer at once, inside subscribe.
          child.subscribe({ complete: () => this.reportEnd(id, child.getSnapshot()), error: () => undefined });
        }
      },
      // The run's failures are handled where the leg waits for rest.
      error: () => undefined,
    });
  }

  private reportEnd(id: string, snapshot: CallSnapshot): void {
    if (snapshot.status !== 'done' || this.reportedCalls.has(id)) return;
    this.reportedCalls.add(id);
    const out = snapshot.output!;
    this.emit({
      type: 'tool-call-end',
      step: out.modelStep,
      toolCallId: out.toolCallId,
      toolName: out.toolName,
      output: out.modelOutput as JsonValue,
      isError: out.isError,
      ...(out.outcome !== null && out.outcome !== 'unknown-effect' ? { outcome: out.outcome } : {}),
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
    const result = await this.finish();
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
    const result = this.resultOf(snapshot);
    if (snapshot.status === 'done' && this.opts.raw.session && !this.storeFailure) {
      // Completion is reported only after the terminal write succeeded.
      try {
        await this.writeTerminal(result);
      } catch (error) {
        return this.failedResult(serializeError(error));
      }
    }
    return result;
  }

  private failedResult(error: SerializedError): AgentResult<T> {
    const base = this.resultBase(this.actor.getSnapshot().context);
    return { ...base, status: 'failed', error };
  }

  private resultBase(context: RunContext) {
    return resultBase(this.runId, context, this.warnings);
  }

  resultOf(snapshot: RunSnapshot): AgentResult<T> {
    const context = snapshot.context;
    const base = this.resultBase(context);
    if (snapshot.matches('completed')) return { ...base, status: 'completed', output: context.candidate!.output as T };
    if (snapshot.matches('failed')) {
      const { retry, ...error } = context.error ?? { name: 'Error', code: 'internal', message: 'The run failed.' };
      return { ...base, status: 'failed', error, ...(retry ? { retry } : {}) };
    }
    if (snapshot.matches('stopped')) {
      return {
        ...base,
        status: 'stopped',
        reason: (context.stopReason ?? 'aborted') as StopReason,
        ...(context.stopDetails !== null ? { stopDetails: context.stopDetails as JsonValue } : {}),
      };
    }
    if (snapshot.matches('drained')) return { ...base, status: 'stopped', reason: 'drained' };
    if (snapshot.matches('reconciling')) {
      return {
        ...base,
        status: 'stopped',
        reason: 'tool-reconciliation-required',
        unknownEffects: this.unknownEffects(),
      };
    }
    const pending = this.pending();
    return { ...base, status: 'suspended', pendingApprovals: pending.approvals, pendingClientCalls: pending.clientCalls };
  }

  /** Receipts of open calls left `executing` (their effect may or may not have happened), with the verdict each ran under. */
  unknownEffects(): UnknownEffect[] {
    const out: AgentToolReceipt[] = [];
    for (const call of this.openCalls().values()) {
      if (!call.hasTag('needs-reconciliation')) continue;
      const receipt = this.receipts[receiptKey(call.context.modelStep, call.context.toolCallId)];
      if (receipt) out.push(receipt);
    }
    return describeUnknownEffects(out, this.approvals);
  }

  /** What the run waits for, derived from the calls' snapshots. Issues an approval's token once. */
  pending(): Pending {
    const approvals: PendingApproval[] = [];
    const clientCalls: PendingClientCall[] = [];
    for (const call of this.openCalls().values()) {
      const c = call.context;
      if (receiptHasOutcome(this.receipts[receiptKey(c.modelStep, c.toolCallId)])) continue;
      const facts = { toolCallId: c.toolCallId, toolName: c.toolName, args: c.args as JsonValue, modelStep: c.modelStep };
      if (call.hasTag('awaiting-approval')) {
        const approvalId = approvalIdFor(this.runId, facts);
        let issued = this.approvals[approvalId];
        if (!issued) {
          issued = { toolCallId: c.toolCallId, modelStep: c.modelStep, token: this.opts.generateId() };
          this.approvals[approvalId] = issued;
          this.emit({ type: 'approval-request', approval: { approvalId, token: issued.token, ...facts } });
        }
        approvals.push({ approvalId, token: issued.token, ...facts });
        // A gated client tool waits for both: its verdict and its result come in one resume.
        if (typeof this.opts.tools[c.toolName]?.execute !== 'function') clientCalls.push(facts);
      } else if (call.hasTag('awaiting-client')) {
        clientCalls.push(facts);
      }
    }
    for (const call of clientCalls) {
      const key = receiptKey(call.modelStep, call.toolCallId);
      if (this.requestedClientCalls.has(key)) continue;
      this.requestedClientCalls.add(key);
      this.emit({ type: 'client-call-request', call });
    }
    return { approvals, clientCalls };
  }

  /** The stored status, and what a suspended run waits for (read once per save). */
  private statusOf(snapshot: RunSnapshot): { status: AgentRunStatus; pending: Pending } {
    const none: Pending = { approvals: [], clientCalls: [] };
    if (snapshot.matches('completed')) return { status: 'completed', pending: none };
    if (snapshot.matches('failed')) return { status: 'failed', pending: none };
    if (snapshot.matches('stopped')) return { status: 'stopped', pending: none };
    if (snapshot.matches('drained') || snapshot.matches('draining')) return { status: 'drained', pending: none };
    // `suspending` is the save on the way to `suspended`; restored, it may already have been answered.
    if (snapshot.matches('suspended') || snapshot.matches('suspending')) {
      const pending = this.pending();
      if (pending.approvals.length + pending.clientCalls.length > 0) return { status: 'suspended', pending };
    }
    return { status: 'running', pending: none };
  }

  private envelope(result?: AgentResult<T>): AgentRunEnvelope {
    const snapshot = this.actor.getSnapshot();
    const { status, pending } = this.statusOf(snapshot);
    const openCalls = [...this.openCalls().values()].map((call) => call.context);
    const open = openCalls
      .map((c) => this.receipts[receiptKey(c.modelStep, c.toolCallId)])
      .filter((r): r is AgentToolReceipt => r !== undefined);
    const gatedOpen = openCalls.some((c) => approvalIdFor(this.runId, c) in this.approvals);
    const counts: Record<string, number> = {};
    for (const { toolCallId } of Object.values(this.approvals)) counts[toolCallId] = (counts[toolCallId] ?? 0) + 1;
    const session = this.opts.raw.session!;
    return {
      kind: ENVELOPE_KIND,
      version: envelopeVersion(pending.approvals, open, gatedOpen),
      runId: this.runId,
      scope: session.scope,
      revision: this.revision + 1,
      bindingId: this.opts.binding.bindingId,
      binding: { ...this.opts.binding },
      machine: { id: RUN_MACHINE_ID, version: RUN_MACHINE_VERSION },
      snapshot: this.persistedSnapshot(),
      receipts: Object.fromEntries(Object.entries(this.receipts).map(([key, receipt]) => [key, frozenJsonCopy(receipt)])),
      approvalRequestCounts: counts,
      approvals: structuredClone(this.approvals),
      status,
      pendingApprovals: pending.approvals,
      pendingClientCalls: pending.clientCalls,
      ...(result ? { result: toJson<AgentResult<unknown>>(result) } : {}),
      ...this.modelsRecord(snapshot.context),
      createdAt: this.createdAt,
      updatedAt: this.opts.now(),
    };
  }

  /** `models` for a run with fallbacks (or one that failed over): read from the run's context. */
  private modelsRecord(context: RunContext): { models?: AgentRunModels } {
    const recorded = (context.models ?? null) as AgentRunModels | null;
    if (recorded) return { models: structuredClone(recorded) };
    return this.opts.models.length > 1 ? { models: initialModels(this.opts.model) } : {};
  }

  /**
   * The run actor's persisted snapshot as plain JSON. The transcript only grows
   * and its messages are never edited, so each message is copied once
   * (frozen) and shared by later saves: a save copies what the step added,
   * not the whole history. The machine persists a context whose transcript is
   * set aside, because XState walks every value of a context looking for actor
   * references, and the transcript (plain messages) holds none.
   */
  private persistedSnapshot(): JsonValue {
    const snapshot = this.actor.getSnapshot();
    const messages = snapshot.context.messages as unknown[];
    const persisted = this.actor.logic.getPersistedSnapshot(
      { ...snapshot, context: { ...snapshot.context, messages: [] } } as typeof snapshot,
    ) as unknown as { context: { messages: unknown[] } };
    const copy = toJson<{ context: { messages: unknown[] } }>(persisted);
    copy.context.messages = this.frozenMessages(messages);
    return copy as unknown as JsonValue;
  }

  /** Frozen copies of the transcript's messages; the copies of the last save's prefix are reused without a lookup. */
  private frozenMessages(messages: readonly unknown[]): unknown[] {
    const last = this.lastMessages;
    let same = 0;
    if (last) while (same < messages.length && same < last.source.length && messages[same] === last.source[same]) same++;
    const copies = last ? last.copies.slice(0, same) : [];
    for (let i = same; i < messages.length; i++) copies.push(frozenJsonCopy(messages[i]));
    this.lastMessages = { source: messages, copies };
    return copies.slice();
  }

  private async write(): Promise<void> {
    // Let the transition that asked for this save finish, so the snapshot shows the state that asked.
    await Promise.resolve();
    if (this.closed) return;
    // A save asked for before the lease was lost or a write failed must not start after it: nothing more is written.
    if (this.leaseLost && this.lease) throw new AgentRunLeaseError('lease_lost', this.lease.key);
    if (this.storeFailure) throw new PersistenceError(this.storeFailure.message);
    await this.commit(this.envelope());
  }

  private async writeTerminal(result: AgentResult<T>): Promise<void> {
    await this.queue.idle();
    const envelope = this.envelope(result);
    const error = this.actor.getSnapshot().context.error;
    if (result.status === 'failed' && error?.retry && this.lastCommitted !== null) {
      // A transient failure keeps the last checkpoint as the snapshot: retryFailed goes on from there.
      envelope.snapshot = this.lastCommitted;
      envelope.retry = { ...error.retry, error: { name: error.name, code: error.code, message: error.message } };
    }
    await this.commit(envelope);
  }

  private async commit(envelope: AgentRunEnvelope): Promise<void> {
    try {
      await this.opts.raw.session!.store.save(envelope, this.lease ? { lease: this.lease } : undefined);
      this.revision = envelope.revision;
      if (envelope.status !== 'completed' && envelope.status !== 'failed' && envelope.status !== 'stopped') {
        this.lastCommitted = envelope.snapshot;
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


/**
 * `agentRunLogic(config)`: a Cairn run as XState actor logic that a host
 * machine invokes or spawns. The run's checkpoint stays in its own store; the
 * actor's persisted snapshot holds only the run's identity, where it stands,
 * and the answers it holds for the run. On restore it reads the run from its
 * store and goes on.
 *
 * Process-local (never persisted): the leg in flight, its abort controller,
 * a drain request, and whether this actor was restored.
 */
import type { ActorLogic, ActorScope, ActorSystem, AnyActorRef } from 'xstate';
import { nanoid } from 'nanoid';
import { agentRunLeaseKey, InvalidOptionsError, type AgentResult } from '../agent/index.js';
import {
  addClientResult, addSettlement, addVerdict, answersSuspension, clientResultProblem, hasAnswers, noAnswers,
  settlesEffects, verdictProblem,
} from './answers.js';
import { AgentRunFailedError } from './errors.js';
import { runLeg, type LegPlan } from './leg.js';
import type {
  AgentRunActorContext, AgentRunActorEvent, AgentRunActorSnapshot, AgentRunActorState, AgentRunAnswers, AgentRunEmitted,
  AgentRunInput, AgentRunLogicConfig, AgentRunParentEvent, PersistedAgentRunActorSnapshot,
} from './types.js';

type AnyActorSystem = ActorSystem<any>;

const BOOT = 'cairn.internal.boot';
const SAVED = 'cairn.internal.saved';
const LEG_END = 'cairn.internal.leg-end';

type InternalEvent<T> =
  | { type: typeof BOOT }
  | { type: typeof SAVED; leg: number }
  | { type: typeof LEG_END; leg: number; result: AgentResult<T> }
  | { type: 'xstate.stop' };

type Event<T> = AgentRunActorEvent | InternalEvent<T>;

/** The logic `agentRunLogic` returns: register it in `setup({ actors })` and invoke or spawn it. */
export type AgentRunLogic<T = string> = ActorLogic<
  // Optional for the types only, so that a restore (`createActor(logic, { snapshot })`) needs none; a start without one is refused.
  AgentRunActorSnapshot<T>, AgentRunActorEvent, AgentRunInput | undefined, AnyActorSystem, AgentRunEmitted<T>
>;

type Scope<T> = ActorScope<AgentRunActorSnapshot<T>, AgentRunActorEvent, AnyActorSystem, AgentRunEmitted<T>>;

interface Instance {
  /** Number of the leg in flight (or of the last one); a leg's end counts only if it is still the current one. */
  leg: number;
  controller: AbortController | null;
  drainRequested: boolean;
  stopped: boolean;
  restored: boolean;
}

const instances = new WeakMap<object, Instance>();
const instanceOf = (self: object): Instance => {
  let inst = instances.get(self);
  if (!inst) instances.set(self, (inst = { leg: 0, controller: null, drainRequested: false, stopped: false, restored: false }));
  return inst;
};

const active = <T>(context: AgentRunActorContext): AgentRunActorSnapshot<T> =>
  ({ status: 'active', output: undefined, error: undefined, context });

const waitingFor = { pendingApprovals: [], pendingClientCalls: [], unknownEffects: [] };

/**
 * Actor logic that runs one Cairn agent run inside a host's XState system.
 *
 * - **Input** ({@link AgentRunInput}): the run's id (or `config.runId` derives it), its scope, and the prompt or messages.
 * - **Events** it takes: `cairn.verdict`, `cairn.client-result`, `cairn.settle`, `cairn.cancel`, `cairn.drain`, `cairn.resume`.
 * - **Parent events** it sends (also emitted): `cairn.waiting`, `cairn.unsettled`, `cairn.drained`.
 * - **Emitted**: every event of the run (`actor.on('tool-call-end', ...)`).
 * - **Output**: the run's `AgentResult` (completed or stopped; after a cancel, the result the run rested on).
 *   A failed run fails the actor with {@link AgentRunFailedError}.
 *
 * @example
 * const ticket = setup({ actors: { agentRun: agentRunLogic({ model, tools, store, scope: 'support' }) } }).createMachine({
 *   invoke: { id: 'agent', src: 'agentRun', input: ({ context }) => ({ runId: `ticket-${context.id}`, prompt: context.text }),
 *     onDone: { target: 'answered', actions: assign({ reply: ({ event }) => event.output.text }) } },
 *   on: { 'cairn.waiting': '.awaitingApproval' },
 *   // ...
 * });
 */
export function agentRunLogic<T = string>(config: AgentRunLogicConfig<T>): AgentRunLogic<T> {
  if (!config || typeof config !== 'object' || !config.store) {
    throw new InvalidOptionsError('agentRunLogic: config.store is required (the run is saved there).');
  }
  const allowBare = config.allowBareApprovalIds === true;

  function notify(scope: Scope<T>, context: AgentRunActorContext) {
    const base = { runId: context.runId, scope: context.scope, actorId: scope.self.id };
    let event: AgentRunParentEvent | null = null;
    if (context.phase === 'waiting') {
      event = { type: 'cairn.waiting', ...base, pendingApprovals: context.pendingApprovals, pendingClientCalls: context.pendingClientCalls };
    } else if (context.phase === 'unsettled') {
      event = { type: 'cairn.unsettled', ...base, unknownEffects: context.unknownEffects };
    } else if (context.phase === 'drained') {
      event = { type: 'cairn.drained', ...base };
    }
    if (!event) return;
    const sent = event;
    // After the snapshot update, so a parent that looks at the child sees where it stands.
    scope.defer(() => {
      (scope.self as { _parent?: AnyActorRef })._parent?.send(sent);
      scope.emit(sent);
    });
  }

  function requestDrain(context: AgentRunActorState, scope: Scope<T>) {
    if (!config.lease) {
      scope.emit({
        type: 'warning', setting: 'cairn.drain',
        message: 'cairn.drain needs config.lease: a run is drained through its lease. The run goes on.',
      });
      return;
    }
    config.lease.provider.requestDrain(agentRunLeaseKey(context)).catch(() => undefined);
  }

  /** Starts a leg (after the snapshot update) and returns the snapshot of a run in flight. */
  function launch(context: AgentRunActorContext, scope: Scope<T>, plan: LegPlan, aborted: boolean): AgentRunActorSnapshot<T> {
    const inst = instanceOf(scope.self);
    const leg = ++inst.leg;
    const controller = new AbortController();
    if (aborted) controller.abort();
    inst.controller = controller;
    const next: AgentRunActorContext = {
      ...context, ...waitingFor, phase: 'running', inFlight: plan.kind === 'resume' ? plan.answers : null,
    };
    const self = scope.self as unknown as { send(event: InternalEvent<T>): void; getSnapshot(): { status: string } };
    const alive = () => !inst.stopped && self.getSnapshot().status === 'active';
    scope.defer(() => {
      void runLeg<T>(config, context, plan, {
        signal: controller.signal,
        event: (event) => {
          if (alive()) scope.emit(event);
        },
        holding: () => {
          if (inst.drainRequested) requestDrain(context, scope);
        },
        saved: () => {
          if (alive()) self.send({ type: SAVED, leg });
        },
        stopped: () => inst.stopped,
      }).then((result) => {
        if (alive()) self.send({ type: LEG_END, leg, result });
      });
    });
    return active<T>(next);
  }

  /** A leg that carries the held answers, when they answer all the run waits for. */
  function goOnIfAnswered(context: AgentRunActorContext, scope: Scope<T>): AgentRunActorSnapshot<T> {
    const answered = context.phase === 'waiting'
      ? answersSuspension(context.queued, context.pendingApprovals, context.pendingClientCalls, allowBare)
      : context.phase === 'unsettled' && settlesEffects(context.queued, context.unknownEffects);
    if (!answered) return active<T>(context);
    return launch({ ...context, queued: noAnswers() }, scope, { kind: 'resume', answers: context.queued }, false);
  }

  function legEnded(context: AgentRunActorContext, result: AgentResult<T>, scope: Scope<T>): AgentRunActorSnapshot<T> {
    const inst = instanceOf(scope.self);
    inst.controller = null;
    inst.drainRequested = false;
    const rest: AgentRunActorContext = { ...context, ...waitingFor, start: null, inFlight: null };
    if (result.status === 'failed') {
      return { status: 'error', output: undefined, error: new AgentRunFailedError<T>(result), context: { ...rest, phase: 'ended' } };
    }
    const done = (): AgentRunActorSnapshot<T> => ({ status: 'done', output: result, error: undefined, context: { ...rest, phase: 'ended' } });
    if (context.cancelled) return done();
    if (result.status === 'suspended') {
      const next: AgentRunActorContext = {
        ...rest, phase: 'waiting', pendingApprovals: result.pendingApprovals, pendingClientCalls: result.pendingClientCalls,
      };
      notify(scope, next);
      return goOnIfAnswered(next, scope);
    }
    if (result.status === 'stopped' && result.reason === 'tool-reconciliation-required') {
      const next: AgentRunActorContext = { ...rest, phase: 'unsettled', unknownEffects: result.unknownEffects ?? [] };
      notify(scope, next);
      return goOnIfAnswered(next, scope);
    }
    if (result.status === 'stopped' && result.reason === 'drained') {
      const next: AgentRunActorContext = { ...rest, phase: 'drained' };
      notify(scope, next);
      return active<T>(next);
    }
    return done();
  }

  /** The first leg of a started or restored actor. */
  function boot(context: AgentRunActorContext, scope: Scope<T>): AgentRunActorSnapshot<T> {
    const inst = instanceOf(scope.self);
    if (context.cancelled) return launch(context, scope, { kind: 'resume', answers: null }, true);
    if (context.start) return launch(context, scope, { kind: 'start', start: context.start, checkStore: inst.restored }, false);
    // A restored leg that was cut off takes its answers again (a run that recorded them says so and goes on).
    const answers = context.phase === 'running' ? context.inFlight : null;
    return launch(context, scope, { kind: 'resume', answers }, false);
  }

  function transition(snapshot: AgentRunActorSnapshot<T>, event: Event<T>, scope: Scope<T>): AgentRunActorSnapshot<T> {
    if (snapshot.status !== 'active') return snapshot;
    const context = snapshot.context;
    const inst = instanceOf(scope.self);
    switch (event.type) {
      case 'xstate.stop': {
        inst.stopped = true;
        // A stop is not a cancel: the leg rests at its next boundary (sooner with a lease) and a restore goes on.
        if (inst.controller && config.lease) requestDrain(context, scope);
        return { ...snapshot, status: 'stopped' };
      }
      case BOOT:
        return boot(context, scope);
      case SAVED:
        return event.leg === inst.leg && context.start ? active<T>({ ...context, start: null }) : snapshot;
      case LEG_END:
        return event.leg === inst.leg ? legEnded(context, event.result, scope) : snapshot;
      case 'cairn.verdict': {
        const { type: _type, ...verdict } = event;
        const problem = verdictProblem(verdict);
        if (problem) return ignored(snapshot, scope, 'cairn.verdict', problem);
        return goOnIfAnswered({ ...context, queued: addVerdict(context.queued, verdict) }, scope);
      }
      case 'cairn.client-result': {
        const { type: _type, ...result } = event;
        const problem = clientResultProblem(result);
        if (problem) return ignored(snapshot, scope, 'cairn.client-result', problem);
        return goOnIfAnswered({ ...context, queued: addClientResult(context.queued, result) }, scope);
      }
      case 'cairn.settle': {
        const retry = Array.isArray(event.retryToolCallIds) ? event.retryToolCallIds.filter((id) => typeof id === 'string') : [];
        const reconciled = Array.isArray(event.reconciledToolResults) ? event.reconciledToolResults : [];
        return goOnIfAnswered({ ...context, queued: addSettlement(context.queued, retry, reconciled) }, scope);
      }
      case 'cairn.cancel': {
        const cancelled: AgentRunActorContext = { ...context, cancelled: true };
        if (context.phase === 'running') {
          inst.controller?.abort();
          return active<T>(cancelled);
        }
        // At rest: one leg that reads where the run rests and ends the actor with it (a drained run stops as aborted).
        return launch({ ...cancelled, queued: noAnswers() }, scope, { kind: 'resume', answers: null }, true);
      }
      case 'cairn.drain':
        if (context.phase === 'running' && !context.cancelled) {
          inst.drainRequested = true;
          requestDrain(context, scope);
        }
        return snapshot;
      case 'cairn.resume':
        return context.phase === 'drained' ? launch(context, scope, { kind: 'resume', answers: null }, false) : snapshot;
      default:
        return snapshot;
    }
  }

  function ignored(snapshot: AgentRunActorSnapshot<T>, scope: Scope<T>, setting: string, problem: string): AgentRunActorSnapshot<T> {
    scope.emit({ type: 'warning', setting, message: `${setting}: ${problem}; the event was ignored.` });
    return snapshot;
  }

  return {
    config,
    transition: transition as AgentRunLogic<T>['transition'],
    getInitialSnapshot(_scope, input) {
      const given = (input ?? {}) as AgentRunInput;
      const scopeName = given.scope ?? config.scope;
      if (typeof scopeName !== 'string' || scopeName === '') {
        throw new InvalidOptionsError('agentRunLogic: the run needs a scope (input.scope or config.scope).');
      }
      if (given.prompt === undefined && given.messages === undefined) {
        throw new InvalidOptionsError('agentRunLogic: the input needs a prompt or messages to start the run.');
      }
      const runId = given.runId ?? config.runId?.(given) ?? config.deps?.generateId?.() ?? nanoid();
      if (typeof runId !== 'string' || runId === '') throw new InvalidOptionsError('agentRunLogic: the run id must be a non-empty string.');
      return active<T>({
        runId, scope: scopeName, phase: 'running',
        start: {
          ...(given.prompt !== undefined ? { prompt: given.prompt } : {}),
          ...(given.messages !== undefined ? { messages: given.messages } : {}),
          ...(given.deadline !== undefined ? { deadline: given.deadline } : {}),
        },
        queued: noAnswers(), inFlight: null, cancelled: false, ...waitingFor,
      });
    },
    start(snapshot, scope) {
      if (snapshot.status !== 'active') return;
      (scope.self as unknown as { send(event: InternalEvent<T>): void }).send({ type: BOOT });
    },
    getPersistedSnapshot(snapshot): PersistedAgentRunActorSnapshot {
      const { runId, scope, phase, start, queued, inFlight, cancelled } = snapshot.context;
      return {
        status: snapshot.status, output: undefined, error: undefined,
        context: { runId, scope, phase, start, queued, inFlight, cancelled },
      };
    },
    restoreSnapshot(persisted, scope) {
      const stored = persisted as unknown as PersistedAgentRunActorSnapshot;
      const state = stored?.context;
      if (!state || typeof state.runId !== 'string' || typeof state.scope !== 'string') {
        throw new InvalidOptionsError('agentRunLogic: the persisted snapshot is not one of an embedded run (no runId and scope).', 'invalid_envelope');
      }
      instanceOf(scope.self).restored = true;
      const context: AgentRunActorContext = {
        runId: state.runId, scope: state.scope, phase: state.phase, start: state.start ?? null,
        queued: normalizeAnswers(state.queued) ?? noAnswers(), inFlight: normalizeAnswers(state.inFlight),
        cancelled: state.cancelled === true, ...waitingFor,
      };
      if (stored.status === 'stopped') return { status: 'stopped', output: undefined, error: undefined, context };
      // A done or failed actor kept no result: it reads it from the store again (a cancelled one, where its run rests).
      if (stored.status === 'done' || stored.status === 'error') return active<T>({ ...context, cancelled: true });
      return active<T>(context);
    },
  };
}

function normalizeAnswers(value: AgentRunAnswers | null | undefined): AgentRunAnswers | null {
  if (!value || typeof value !== 'object') return null;
  const list = <K extends keyof AgentRunAnswers>(key: K) => (Array.isArray(value[key]) ? value[key] : []) as AgentRunAnswers[K];
  const answers: AgentRunAnswers = {
    approvalResponses: list('approvalResponses'), clientToolResults: list('clientToolResults'),
    retryToolCallIds: list('retryToolCallIds'), reconciledToolResults: list('reconciledToolResults'),
  };
  return hasAnswers(answers) ? answers : null;
}

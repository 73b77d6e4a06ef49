/**
 * XState's promise actor logic (`fromPromise`), with the actor's abort signal
 * made when its body first reads it instead of at every start. `fromPromise`
 * reads `new AbortController().signal` for every invocation, and Node builds
 * an AbortSignal (an EventTarget) for it: about 4 µs of CPU each, where a
 * durable step starts four promise actors (the model call, the `executing`
 * receipt's write, the tool, the step's checkpoint) and only the model call
 * and a tool that reads its context's `signal` use one. Otherwise the same
 * logic as xstate 5's: the same events, snapshots, and a stop that aborts the
 * signal (when one was made) before the actor stops.
 */
import type { ActorSystem, PromiseActorLogic } from 'xstate';

type AnyActorSystem = ActorSystem<any>;

const RESOLVE = 'xstate.promise.resolve';
const REJECT = 'xstate.promise.reject';
const STOP = 'xstate.stop';

interface Snapshot<O, I> {
  status: 'active' | 'done' | 'error' | 'stopped';
  output: O | undefined;
  error: unknown;
  input: I | undefined;
}

interface Scope {
  self: { getSnapshot(): { status: string } };
  system: AnyActorSystem & { _relay(source: unknown, target: unknown, event: unknown): void };
  emit: (event: unknown) => void;
}

export interface LazyPromiseArgs<I> {
  input: I;
  system: AnyActorSystem;
  self: unknown;
  emit: (event: unknown) => void;
  /** The actor's own signal, aborted when the actor is stopped; made on first read. */
  readonly signal: AbortSignal;
}

/** The controllers of the running actors that read their signal, by actor (a stop aborts its controller). */
const controllers = new WeakMap<object, AbortController>();

export function fromLazyPromise<O, I>(body: (args: LazyPromiseArgs<I>) => PromiseLike<O> | O): PromiseActorLogic<O, I> {
  const logic = {
    config: body,
    transition: (state: Snapshot<O, I>, event: { type: string; data?: unknown }, scope: Scope): Snapshot<O, I> => {
      if (state.status !== 'active') return state;
      switch (event.type) {
        case RESOLVE:
          return { ...state, status: 'done', output: event.data as O, input: undefined };
        case REJECT:
          return { ...state, status: 'error', error: event.data, input: undefined };
        case STOP:
          controllers.get(scope.self)?.abort();
          controllers.delete(scope.self);
          return { ...state, status: 'stopped', input: undefined };
        default:
          return state;
      }
    },
    start: (state: Snapshot<O, I>, { self, system, emit }: Scope) => {
      if (state.status !== 'active') return;
      const args: LazyPromiseArgs<I> = {
        input: state.input as I,
        system,
        self,
        emit,
        get signal() {
          let controller = controllers.get(self);
          if (!controller) {
            controller = new AbortController();
            const { status } = self.getSnapshot();
            // Read after the actor ended: not kept (nothing would delete it), and aborted if the actor was stopped, as
            // fromPromise's would be (its signal is aborted by a stop, and left as it is once the promise settled).
            if (status === 'active') controllers.set(self, controller);
            else if (status === 'stopped') controller.abort();
          }
          return controller.signal;
        },
      };
      Promise.resolve(body(args)).then(
        (response) => {
          if (self.getSnapshot().status !== 'active') return;
          controllers.delete(self);
          system._relay(self, self, { type: RESOLVE, data: response });
        },
        (errorData) => {
          if (self.getSnapshot().status !== 'active') return;
          controllers.delete(self);
          system._relay(self, self, { type: REJECT, data: errorData });
        },
      );
    },
    getInitialSnapshot: (_: unknown, input: I): Snapshot<O, I> => ({ status: 'active', output: undefined, error: undefined, input }),
    getPersistedSnapshot: (snapshot: Snapshot<O, I>) => snapshot,
    restoreSnapshot: (snapshot: Snapshot<O, I>) => snapshot,
  };
  return logic as unknown as PromiseActorLogic<O, I>;
}

/**
 * Records every transition the actors of the real runtime take. The runtime
 * creates its actors itself (src/runtime/host.ts), so the test file replaces
 * xstate's `createActor` (vi.mock) by one that adds `recorder.wrap(...)` as
 * the `inspect` option; every actor of the system (the run actor and the
 * tool-call actors it spawns, restored ones too) then reports its microsteps.
 *
 * No run-time import of xstate: this module is loaded from inside the mock factory.
 */
import { edgeOfTransition, machineOf } from './edges.js';

export interface Step {
  /** Actor id: `call-<step>-<index>` for a tool call, the session id for the run. */
  actor: string;
  machine: string;
  /** Edge key (see edges.ts). */
  key: string;
  event: string;
  /** The actor's state value after the microstep. */
  value: unknown;
  status: string;
}

interface MicrostepEvent {
  type: string;
  actorRef: { id: string };
  event: { type: string; output?: unknown };
  snapshot: { value?: unknown; status?: string };
  _transitions?: unknown[];
}

export const recorder = {
  enabled: false,
  steps: [] as Step[],
  /** Outputs of finished children as their parent received them, by child id (last wins). */
  outputs: new Map<string, unknown>(),
  start() {
    this.steps = [];
    this.outputs = new Map();
    this.enabled = true;
  },
  stop() {
    this.enabled = false;
  },
  record(ev: MicrostepEvent) {
    if (!this.enabled || ev.type !== '@xstate.microstep') return;
    if (ev.event.type.startsWith('xstate.done.actor.call-')) {
      this.outputs.set(ev.event.type.slice('xstate.done.actor.'.length), ev.event.output);
    }
    for (const t of ev._transitions ?? []) {
      const edge = edgeOfTransition(t as never);
      this.steps.push({
        actor: ev.actorRef.id,
        machine: machineOf(edge.source),
        key: edge.key,
        event: ev.event.type,
        value: ev.snapshot.value,
        status: String(ev.snapshot.status),
      });
    }
  },
  /** The `inspect` option to give an actor: the caller's own observer, then the recorder. */
  wrap(own: unknown) {
    return (ev: unknown) => {
      if (typeof own === 'function') own(ev);
      else if (own && typeof (own as { next?: unknown }).next === 'function') (own as { next(e: unknown): void }).next(ev);
      recorder.record(ev as MicrostepEvent);
    };
  },
  /** Edge keys of one machine (all actors), in order. */
  keysOf(machine: string): string[] {
    return this.steps.filter((s) => s.machine === machine).map((s) => s.key);
  },
  /** Steps of one actor, in order. */
  stepsOf(actor: string): Step[] {
    return this.steps.filter((s) => s.actor === actor);
  },
};

/**
 * Drives a run scenario through the real runtime, leg by leg, and returns
 * what the run actor did: its transitions (bookkeeping left out) over every
 * leg, and where it ended. A crash is a leg abandoned right after a chosen
 * save, resumed from a fresh store that holds exactly that save.
 */
import type { AgentOptions, AgentResult, AgentRunEnvelope, ResumeOptions } from 'cairn/agent';
import {
  recordingStore, resumeLeg, seededStore, startLeg, testClock, testIds, type Leg, type RecordingStore,
} from './harness.js';
import { recorder, type Step } from './recorder.js';
import { isBookkeeping } from './run-model.js';

export interface RunHarness {
  clock: ReturnType<typeof testClock>;
  ids: () => string;
  /** The store of the current process. */
  store: RecordingStore;
  /** The abort controller of the current leg. */
  controller: AbortController;
  /** Session, bindingId, deps and abort signal of the current leg, to spread into the options. */
  base(): Pick<ResumeOptions<unknown>, 'session' | 'bindingId' | 'deps' | 'abortSignal'>;
  start<T>(options: AgentOptions<T>): Promise<Leg<T>>;
  resume<T>(options: ResumeOptions<T>): Promise<Leg<T>>;
  /**
   * Starts a leg, lets it run until a save matches `at` and `ready` resolved,
   * then the process dies: the leg is aborted and forgotten, and a fresh store
   * holds that save. Resume it with `resume`.
   */
  crash<T>(leg: () => Promise<Leg<T>>, at: (e: AgentRunEnvelope) => boolean, ready?: Promise<unknown>): Promise<AgentRunEnvelope>;
}

export interface RunRun {
  legs: Leg<unknown>[];
  /** Run-machine edge keys over every leg, bookkeeping left out. */
  edges: string[];
  /** The run actor's state after its last transition. */
  finalValue: unknown;
  allSteps: Step[];
  store: RecordingStore;
  last: AgentResult<unknown>;
}

export async function driveRun(script: (h: RunHarness) => Promise<void>): Promise<RunRun> {
  const legs: Leg<unknown>[] = [];
  const h: RunHarness = {
    clock: testClock(),
    ids: testIds(),
    store: recordingStore(),
    controller: new AbortController(),
    base() {
      return {
        session: { store: h.store, runId: 'mbt-run', scope: 'tenant-a' },
        bindingId: 'mbt-v1',
        deps: { clock: h.clock, generateId: h.ids },
        abortSignal: h.controller.signal,
      };
    },
    async start(options) {
      const leg = await startLeg(options);
      legs.push(leg as Leg<unknown>);
      return leg;
    },
    async resume(options) {
      const leg = await resumeLeg(options);
      legs.push(leg as Leg<unknown>);
      return leg;
    },
    async crash(run, at, ready) {
      const dying = run();
      const [{ envelope, mark }] = await Promise.all([h.store.waitFor(at), ready]);
      h.controller.abort();
      await dying;
      legs.pop();
      // What the dead process did after that save never happened.
      recorder.steps.splice(mark);
      h.store = await seededStore(envelope);
      h.controller = new AbortController();
      return envelope;
    },
  };
  recorder.start();
  try {
    await script(h);
  } finally {
    recorder.stop();
  }
  const runSteps = recorder.steps.filter((s) => s.machine === 'run');
  return {
    legs,
    edges: runSteps.map((s) => s.key).filter((k) => !isBookkeeping(k)),
    finalValue: runSteps[runSteps.length - 1]?.value,
    allSteps: [...recorder.steps],
    store: h.store,
    last: legs[legs.length - 1]!.result,
  };
}

/**
 * Deterministic plumbing for driving the real runtime: a fixed clock and ids,
 * a store that records every envelope it accepts (and can fail on demand),
 * a fresh store seeded with one captured envelope, and a leg runner that
 * returns the result with the stream events of that leg.
 */
import {
  createInMemoryAgentRunStore, resumeStreamAgent, streamAgent,
  type AgentEvent, type AgentOptions, type AgentResult, type AgentRunEnvelope, type AgentRunStore, type ResumeOptions,
} from 'cairn/agent';
import { recorder } from './recorder.js';

export const T0 = Date.UTC(2026, 0, 1);

/**
 * A clock the test moves. `failNextDeadlineCheck()` makes the next reading
 * taken for a deadline check throw, once (a broken clock): other readings (a
 * save's updatedAt) may come first, in an order the test should not depend on.
 */
export function testClock() {
  const clock = {
    t: T0,
    failing: false,
    now() {
      if (clock.failing && /deadlinePassed/.test(new Error().stack ?? '')) {
        clock.failing = false;
        throw Object.assign(new Error('clock unavailable'), { code: 'clock_failed' });
      }
      return clock.t;
    },
    failNextDeadlineCheck() {
      clock.failing = true;
    },
  };
  return clock;
}

export function testIds() {
  let n = 0;
  return () => `id-${++n}`;
}

export interface RecordingStore extends AgentRunStore {
  /** Every envelope the store accepted, in order (deep copies). */
  saved: AgentRunEnvelope[];
  /** recorder.steps.length when each save was asked for: the envelope shows the state at that point. */
  marks: number[];
  /** Makes a save fail when the predicate says so (the envelope is not stored). */
  failWhen: ((envelope: AgentRunEnvelope, attempt: number) => boolean) | null;
  attempts: number;
  /** Resolves with the first saved envelope (past or future) that matches. */
  waitFor(predicate: (envelope: AgentRunEnvelope) => boolean): Promise<{ envelope: AgentRunEnvelope; mark: number }>;
  last(): AgentRunEnvelope | undefined;
}

const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

export function recordingStore(inner: AgentRunStore = createInMemoryAgentRunStore()): RecordingStore {
  const waiters: { predicate: (e: AgentRunEnvelope) => boolean; resolve: (v: { envelope: AgentRunEnvelope; mark: number }) => void }[] = [];
  const store: RecordingStore = {
    saved: [],
    marks: [],
    failWhen: null,
    attempts: 0,
    load: (runId) => inner.load(runId),
    async save(envelope) {
      const mark = recorder.steps.length;
      store.attempts += 1;
      if (store.failWhen?.(envelope, store.attempts)) throw Object.assign(new Error('disk full'), { code: 'ENOSPC' });
      await inner.save(envelope);
      const saved = copy(envelope);
      store.saved.push(saved);
      store.marks.push(mark);
      for (const w of [...waiters]) {
        if (w.predicate(saved)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve({ envelope: saved, mark });
        }
      }
    },
    waitFor(predicate) {
      const i = store.saved.findIndex(predicate);
      if (i >= 0) return Promise.resolve({ envelope: store.saved[i]!, mark: store.marks[i]! });
      return new Promise((resolve) => waiters.push({ predicate, resolve }));
    },
    last: () => store.saved[store.saved.length - 1],
  };
  return store;
}

/**
 * A fresh in-memory store that holds exactly `envelope`: the in-memory store
 * fences saves by revision, so it is brought to that revision one save at a time.
 */
export async function seededStore(envelope: AgentRunEnvelope): Promise<RecordingStore> {
  const inner = createInMemoryAgentRunStore();
  for (let revision = 1; revision <= envelope.revision; revision += 1) await inner.save({ ...copy(envelope), revision });
  return recordingStore(inner);
}

export interface Leg<T> {
  result: AgentResult<T>;
  events: AgentEvent<T>[];
}

async function collect<T>(stream: { consume(): Promise<AgentResult<T>>; events: AsyncIterable<AgentEvent<T>> }): Promise<Leg<T>> {
  const result = await stream.consume();
  const events: AgentEvent<T>[] = [];
  for await (const event of stream.events) events.push(event);
  return { result, events };
}

/** A first leg, through streamAgent (runAgent with the events kept). */
export const startLeg = <T>(options: AgentOptions<T>) => collect(streamAgent<T>(options));
/** A resume, through resumeStreamAgent. */
export const resumeLeg = <T>(options: ResumeOptions<T>) => collect(resumeStreamAgent<T>(options));

/** A promise with its resolve. */
export function signal<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

type ChildSnap = { snapshot?: { value?: unknown; status?: string } };
/** The state value a stored envelope holds for a child of the run actor. */
export function storedChildValue(envelope: AgentRunEnvelope | undefined, childId: string): unknown {
  const children = (envelope?.snapshot as { children?: Record<string, ChildSnap> } | undefined)?.children ?? {};
  return children[childId]?.snapshot?.value;
}

export const storedRunValue = (envelope: AgentRunEnvelope | undefined): unknown => (envelope?.snapshot as { value?: unknown } | undefined)?.value;

/**
 * A store wrapper that fails chosen calls: the n-th save or load rejects,
 * lands and then reports failure, or never answers.
 */
import type { AgentRunEnvelope, AgentRunStore } from '../../agent/types.js';
import { CairnError, CairnTypeError } from '../../errors/index.js';
import { copyEnvelope, isPositiveInteger, never } from './internal.js';

/**
 * How an injected store fault behaves.
 *
 * - `'reject'`: the call throws before it reaches the inner store; nothing is written (or read).
 * - `'apply-then-throw'`: the call reaches the inner store, and then throws anyway. For a save,
 *   the write landed but the caller cannot know it (an ambiguous commit, a timeout after apply).
 * - `'hang'`: the call returns a promise that never settles and never reaches the inner store.
 */
export type StoreFaultMode = 'reject' | 'apply-then-throw' | 'hang';

/** One injected fault, placed by the 1-based attempt number of the method it hits. */
export interface StoreFault {
  /** The 1-based attempt (of `save` or of `load`, counted separately) that fails first. */
  at: number;
  mode: StoreFaultMode;
  /**
   * What the failing call throws (for `'reject'` and `'apply-then-throw'`), thrown as it is.
   * @default a fresh `InjectedFaultError('injected store failure')` (code `'injected_fault'`)
   */
  error?: unknown;
  /**
   * How many consecutive attempts, from `at` on, fail the same way. `Infinity` keeps failing
   * until {@link FaultyStore.heal} is called.
   * @default 1
   */
  times?: number;
}

/** Which store calls fail. A call that more than one fault covers gets the first one listed. */
export interface StoreFaultPlan {
  failSave?: StoreFault | StoreFault[];
  failLoad?: StoreFault | StoreFault[];
}

/** A fault that was injected, in the order the calls were made. */
export interface InjectedStoreFault {
  method: 'save' | 'load';
  /** The 1-based attempt number of that method. */
  attempt: number;
  mode: StoreFaultMode;
  runId: string;
}

/** The wrapped store, with what the test needs to see what happened. */
export interface FaultyStore extends AgentRunStore {
  /** Save attempts so far, failed and hanging ones included. */
  readonly saves: number;
  /** Load attempts so far, failed and hanging ones included. */
  readonly loads: number;
  /** Deep copies of every envelope the inner store accepted, in order (`'apply-then-throw'` ones included). */
  readonly history: AgentRunEnvelope[];
  /** Every fault injected so far; a `'hang'` entry is a call that is still, and forever, pending. */
  readonly injected: InjectedStoreFault[];
  /** Drops every fault that has not fired yet (and ends a `times: Infinity` one): later calls pass through. */
  heal(): void;
}

/**
 * What an injected fault throws unless the plan names one: a failure of the
 * dependency (the store, or a ledger tool's call) that the test stands in for.
 * Its code, `injected_fault`, tells it apart from a real failure in a result or
 * a receipt. The engine treats it as any store or tool error that is not its
 * own: a failed save still becomes a `persistence_failed`.
 */
export class InjectedFaultError extends CairnError {
  declare readonly code: 'injected_fault';
  constructor(message = 'injected store failure') {
    super('injected_fault', message, { fault: 'dependency' });
    this.name = 'InjectedFaultError';
  }
}

/** The error an injected fault throws unless the plan names one: a fresh {@link InjectedFaultError}. */
export function injectedFaultError(message = 'injected store failure'): InjectedFaultError {
  return new InjectedFaultError(message);
}

/** True for an error made by {@link injectedFaultError} (or anything else with `code: 'injected_fault'`). */
export function isInjectedFault(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'injected_fault';
}

const MODES: readonly StoreFaultMode[] = ['reject', 'apply-then-throw', 'hang'];

function normalizeFaults(faults: StoreFault | StoreFault[] | undefined, where: string): StoreFault[] {
  if (faults === undefined) return [];
  const list = Array.isArray(faults) ? [...faults] : [faults];
  list.forEach((fault, i) => {
    const label = `createFaultyStore: ${where}[${i}]`;
    if (fault === null || typeof fault !== 'object') throw new CairnTypeError('invalid_options', `${label} must be an object.`);
    if (!isPositiveInteger(fault.at)) throw new CairnTypeError('invalid_options', `${label}.at must be a 1-based attempt number.`);
    if (!MODES.includes(fault.mode)) throw new CairnTypeError('invalid_options', `${label}.mode must be one of ${MODES.join(', ')}.`);
    const times = fault.times;
    if (times !== undefined && !(times === Infinity || isPositiveInteger(times))) {
      throw new CairnTypeError('invalid_options', `${label}.times must be a positive integer or Infinity.`);
    }
  });
  return list;
}

function faultFor(faults: StoreFault[], attempt: number): StoreFault | undefined {
  return faults.find((fault) => attempt >= fault.at && attempt < fault.at + (fault.times ?? 1));
}

/**
 * Wraps a store so that chosen calls fail. Attempts are counted per method over the whole store
 * (every run id), starting at 1; a call no fault covers passes straight through.
 *
 * A run whose save hangs keeps its claim on the store object it was given, so go on with the run
 * through another store object over the same data (see {@link cloneStore}).
 *
 * @example
 * ```ts
 * const store = createFaultyStore(createInMemoryAgentRunStore(), { failSave: { at: 2, mode: 'reject' } });
 * const result = await runAgent({ ...options, session: { store, runId: 'r1', scope: 't' } });
 * // result.status === 'failed', result.error.code === 'persistence_failed'
 * ```
 */
export function createFaultyStore(inner: AgentRunStore, plan: StoreFaultPlan = {}): FaultyStore {
  if (plan === null || typeof plan !== 'object') throw new CairnTypeError('invalid_options', 'createFaultyStore: the plan must be an object.');
  let saveFaults = normalizeFaults(plan.failSave, 'failSave');
  let loadFaults = normalizeFaults(plan.failLoad, 'failLoad');
  let saves = 0;
  let loads = 0;
  const history: AgentRunEnvelope[] = [];
  const injected: InjectedStoreFault[] = [];

  const failure = (fault: StoreFault): unknown => (fault.error !== undefined ? fault.error : injectedFaultError());

  return {
    get saves() {
      return saves;
    },
    get loads() {
      return loads;
    },
    history,
    injected,

    async load(runId) {
      const attempt = ++loads;
      const fault = faultFor(loadFaults, attempt);
      if (!fault) return inner.load(runId);
      injected.push({ method: 'load', attempt, mode: fault.mode, runId });
      if (fault.mode === 'hang') return never();
      if (fault.mode === 'apply-then-throw') await inner.load(runId);
      throw failure(fault);
    },

    async save(envelope) {
      const attempt = ++saves;
      const fault = faultFor(saveFaults, attempt);
      if (fault) injected.push({ method: 'save', attempt, mode: fault.mode, runId: envelope.runId });
      if (fault?.mode === 'hang') return never();
      if (fault?.mode === 'reject') throw failure(fault);
      // Copy first: the caller may change its envelope object once the save has resolved.
      const copy = copyEnvelope(envelope);
      await inner.save(envelope);
      history.push(copy);
      if (fault) throw failure(fault);
    },

    heal() {
      saveFaults = [];
      loadFaults = [];
    },
  };
}

/**
 * `checkStoredRuns`: before new code is deployed, would the runs in flight
 * resume under it? Every run that has not ended (running, suspended, drained,
 * or failed for a transient cause, which `retryFailed` goes on with) is loaded, migrated and
 * checked like a resume would check it, replayed through this Cairn's machines
 * (replayRun), and its binding is compared with the agent configuration the new
 * code runs. Nothing is written.
 */
import { checkEnvelope } from '../agent/envelope.js';
import type { AgentRunStoreV3 } from '../v3/store-types.js';
import { readableRecord } from '../v3/store-read.js';
import { bindingChanges, describeBindingChanges, normalizeOptions } from '../agent/options.js';
import type {
  AgentOptions, AgentRunBinding, AgentRunStatus, AgentRunStore, AgentRunSummary, LanguageModel,
} from '../agent/types.js';
import { describeRun } from '../machines/describe.js';
import { replayRun } from '../machines/replay.js';
import { parseModelKey } from '../models/resolve.js';
import { BindingChangedError, CairnError, InvalidOptionsError, serializeError, type SerializedError } from '../errors/index.js';

/** Why a run would not resume. */
export type StoredRunProblem =
  /** The new configuration differs in a part the run is bound to (`details` says which). */
  | 'binding-changed'
  /** The record was written by a machine version this code does not know (a newer Cairn). */
  | 'version-unknown'
  /** The record cannot be read: bad bytes, a bad checksum, or an envelope that fails its checks. */
  | 'record-corrupt'
  /**
   * Its history, replayed through this Cairn's machines, does not reach the stored snapshot: the machines would
   * not have made this record, so they may not go on from it as the old ones would (`details` says where).
   */
  | 'replay-diverged';

export interface StoredRunCheck {
  runId: string;
  scope: string;
  status: AgentRunStatus;
  /** Whether a resume under the given configuration would go on. */
  resumes: boolean;
  problem: StoredRunProblem | null;
  /** For people: which binding parts changed, or what is wrong with the record. */
  details: string[];
  /** The machine version that wrote the record (null when it could not be read). */
  storedVersion: number | null;
  /** The run's active states after migration (empty when it could not be read). */
  states: string[];
  /** The error a resume would meet, serialized (null when it would resume). */
  error: SerializedError | null;
}

export interface CheckStoredRunsOptions {
  /**
   * The configuration the new code resumes runs with. Only the parts given are
   * compared: `model` (and `fallbackModels`), `tools`, `bindingId`, `output`,
   * and the limits (`maxSteps`, `maxOutputAttempts`, `maxVerifyAttempts`,
   * `verify`) when any of them is given. Nothing given: only the records are
   * checked.
   */
  agent?: Partial<Pick<AgentOptions<unknown>,
    'model' | 'fallbackModels' | 'tools' | 'bindingId' | 'output' | 'maxSteps' | 'maxOutputAttempts' | 'maxVerifyAttempts' | 'verify'>>;
  /** Only runs of this scope. @default every scope */
  scope?: string;
}

/** The statuses a run can still go on from (a failed one only when its failure was transient: see below). */
const UNENDED: readonly AgentRunStatus[] = ['running', 'suspended', 'drained', 'failed'];

const placeholderModel = (key: string): LanguageModel => {
  return {
    specificationVersion: 'cairn-model-1',
    ...parseModelKey(key),
    doGenerate: async () => {
      throw new CairnError('internal', 'checkStoredRuns never calls a model.');
    },
  };
};

/** The binding keys the given configuration speaks for. */
function comparedKeys(agent: NonNullable<CheckStoredRunsOptions['agent']>): Set<keyof AgentRunBinding> {
  const keys = new Set<keyof AgentRunBinding>();
  if (agent.model !== undefined) keys.add('model');
  if (agent.model !== undefined || agent.fallbackModels !== undefined) keys.add('fallback');
  if (agent.tools !== undefined) keys.add('tools');
  if (agent.bindingId !== undefined) keys.add('bindingId');
  if (agent.output !== undefined) keys.add('output');
  if (agent.maxSteps !== undefined || agent.maxOutputAttempts !== undefined || agent.maxVerifyAttempts !== undefined || agent.verify !== undefined) {
    keys.add('limits');
  }
  return keys;
}

/**
 * The binding a resume under `agent` would compute for `stored`'s run, with
 * every part `agent` does not speak for taken from `stored`.
 */
function bindingUnder(agent: NonNullable<CheckStoredRunsOptions['agent']>, stored: AgentRunBinding, keys: Set<keyof AgentRunBinding>): AgentRunBinding {
  const normalized = normalizeOptions({
    prompt: 'check',
    ...agent,
    model: agent.model ?? placeholderModel(stored.model),
  } as AgentOptions<unknown>);
  const current = normalized.binding;
  const merged: AgentRunBinding = { ...stored };
  for (const key of keys) {
    if (current[key] === undefined) delete (merged as Partial<AgentRunBinding>)[key];
    else (merged as unknown as Record<string, unknown>)[key] = current[key];
  }
  if (keys.has('tools') || keys.has('limits')) {
    merged.parts = {
      tools: keys.has('tools') ? current.parts?.tools ?? {} : stored.parts?.tools ?? {},
      limits: keys.has('limits') ? current.parts?.limits ?? {} : stored.parts?.limits ?? {},
    };
  }
  return merged;
}

async function allUnended(store: AgentRunStore | AgentRunStoreV3, scope: string | undefined): Promise<AgentRunSummary[]> {
  if (typeof store.list !== 'function') throw new InvalidOptionsError('checkStoredRuns: the store cannot list its runs (it has no list()).');
  const out: AgentRunSummary[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.list({ status: [...UNENDED], limit: 100, ...(scope !== undefined ? { scope } : {}), ...(cursor ? { cursor } : {}) });
    out.push(...page.runs);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

/**
 * Checks every run of `store` that has not ended. Reads only: loads, and
 * nothing else, go to the store.
 *
 * @example
 * const checks = await checkStoredRuns(ops.agentRuns, { agent: { model, tools } });
 * for (const c of checks.filter((c) => !c.resumes)) console.log(c.runId, c.problem, c.details);
 */
export async function checkStoredRuns(store: AgentRunStore | AgentRunStoreV3, options: CheckStoredRunsOptions = {}): Promise<StoredRunCheck[]> {
  if (!store || typeof store.load !== 'function') throw new InvalidOptionsError('checkStoredRuns: pass a run store.');
  const agent = options.agent ?? {};
  const keys = comparedKeys(agent);
  const checks: StoredRunCheck[] = [];
  for (const summary of await allUnended(store, options.scope)) {
    const base = { runId: summary.runId, scope: summary.scope, status: summary.status };
    let stored: unknown;
    try {
      // A V3 store's record is checked as the run it is (readableRecord: the engine's view of it).
      stored = readableRecord(store, await store.load(summary.runId, { scope: summary.scope }));
    } catch (error) {
      checks.push({ ...base, ...refused(error) });
      continue;
    }
    const storedVersion = (stored as { machine?: { version?: unknown } } | undefined)?.machine?.version;
    try {
      const record = checkEnvelope(stored, summary.runId, summary.scope);
      // A failed run goes on only with retryFailed, and only when its cause was transient.
      if (record.status === 'failed' && record.retry === undefined) continue;
      const described = describeRun(record);
      const check: StoredRunCheck = {
        ...base, resumes: true, problem: null, details: [], storedVersion: typeof storedVersion === 'number' ? storedVersion : null,
        states: described.states, error: null,
      };
      const replay = replayRun(record);
      if (!replay.reached) {
        const d = replay.divergence!;
        check.resumes = false;
        check.problem = 'replay-diverged';
        check.details = [`${d.message}${d.path ? ` (at ${d.path})` : ''}`];
        check.error = null;
      } else if (keys.size > 0) {
        const current = bindingUnder(agent, record.binding, keys);
        if (bindingChanges(record.binding, current).length > 0) {
          check.resumes = false;
          check.problem = 'binding-changed';
          check.details = describeBindingChanges(record.binding, current);
          check.error = serializeError(new BindingChangedError(bindingChanges(record.binding, current), check.details));
        }
      }
      checks.push(check);
    } catch (error) {
      checks.push({ ...base, ...refused(error), storedVersion: typeof storedVersion === 'number' ? storedVersion : null });
    }
  }
  return checks;
}

function refused(error: unknown): Omit<StoredRunCheck, 'runId' | 'scope' | 'status'> {
  const serialized = serializeError(error);
  const unknownVersion = serialized.code === 'checkpoint_version_unsupported' || serialized.code === 'record_version_unsupported';
  return {
    resumes: false,
    problem: unknownVersion ? 'version-unknown' : 'record-corrupt',
    details: [serialized.message],
    storedVersion: null,
    states: [],
    error: serialized,
  };
}

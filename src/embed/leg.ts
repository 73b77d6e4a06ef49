/**
 * One leg of an embedded run: a start or a resume through the engine's public
 * entry points, its events forwarded as they come, tried again while another
 * executor holds the run's lease.
 */
import {
  agentRunLeaseKey, resumeStreamAgent, serializeError, streamAgent,
  type AgentEvent, type AgentOptions, type AgentResult, type ResumeOptions,
} from '../agent/index.js';
import { resumeAnswers } from './answers.js';
import type { AgentRunActorState, AgentRunAnswers, AgentRunIdentity, AgentRunLogicConfig } from './types.js';

const DEFAULT_TTL_MS = 30_000;

export type LegPlan =
  | { kind: 'start'; start: NonNullable<AgentRunActorState['start']>; checkStore: boolean }
  | { kind: 'resume'; answers: AgentRunAnswers | null };

export interface LegHooks<T> {
  signal: AbortSignal;
  /** Every event of the leg (refusals for a held lease excepted). */
  event(event: AgentEvent<T>): void;
  /** The leg holds the run now (its lease, when there is one). */
  holding(): void;
  /** The run's first save is behind it: the first model call is about to be made. */
  saved(): void;
  /** Whether the actor was stopped: no more tries. */
  stopped(): boolean;
}

/** Runs one leg to rest. Never rejects. */
export async function runLeg<T>(
  config: AgentRunLogicConfig<T>, run: AgentRunIdentity, plan: LegPlan, hooks: LegHooks<T>,
): Promise<AgentResult<T>> {
  const { store, scope: _scope, runId: _runId, lease, leaseRetryMs, toolsContext, allowBareApprovalIds, ...agent } = config;
  const retryMs = leaseRetryMs ?? Math.floor((lease?.ttlMs ?? DEFAULT_TTL_MS) / 3);
  let starting = plan.kind === 'start';
  try {
    // A restored actor whose first leg was cut off: the run may already be in its store.
    if (plan.kind === 'start' && plan.checkStore) {
      starting = (await store.load(run.runId, { scope: run.scope }).catch(() => null)) === undefined;
    }
    for (;;) {
      const base = {
        ...agent,
        session: { store, runId: run.runId, scope: run.scope },
        abortSignal: hooks.signal,
        ...(lease ? { lease } : {}),
        ...(toolsContext !== undefined ? { toolsContext: typeof toolsContext === 'function' ? toolsContext(run) : toolsContext } : {}),
      } as AgentOptions<T>;
      const stream = starting && plan.kind === 'start'
        ? streamAgent<T>({
          ...base,
          ...(plan.start.prompt !== undefined ? { prompt: plan.start.prompt } : {}),
          ...(plan.start.messages !== undefined ? { messages: plan.start.messages } : {}),
          ...(plan.start.deadline !== undefined ? { deadline: plan.start.deadline } : {}),
        })
        : resumeStreamAgent<T>({
          ...base,
          ...(plan.kind === 'resume' && plan.answers ? resumeAnswers(plan.answers) : {}),
          ...(allowBareApprovalIds ? { allowBareApprovalIds } : {}),
        } as ResumeOptions<T>);
      let saved = false;
      for await (const event of stream.events) {
        if (isLeaseHeld(event)) continue;
        if (event.type === 'run-start') hooks.holding();
        if (event.type === 'step-start' && !saved) {
          saved = true;
          hooks.saved();
        }
        hooks.event(event);
      }
      const result = await stream.result;
      if (result.status === 'failed' && result.error.code === 'lease_held' && !hooks.signal.aborted && !hooks.stopped()) {
        hooks.event({
          type: 'warning', setting: 'lease',
          message: `The lease ${agentRunLeaseKey(run)} is held by another executor; trying again in ${retryMs} ms.`,
        });
        await sleep(retryMs, hooks.signal);
        continue;
      }
      return result;
    }
  } catch (error) {
    // The engine's streams do not reject for a run that went wrong; this is the engine itself failing.
    return failedResult<T>(run.runId, error);
  }
}

const isLeaseHeld = (event: AgentEvent<unknown>) =>
  (event.type === 'error' && event.error.code === 'lease_held')
  || (event.type === 'result' && event.result.status === 'failed' && event.result.error.code === 'lease_held');

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

function failedResult<T>(runId: string, error: unknown): AgentResult<T> {
  return {
    status: 'failed',
    error: serializeError(error),
    runId,
    messages: [],
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    steps: 0,
    accounting: {
      spent: { inputTokens: 0, outputTokens: 0, usd: null }, reserved: { usd: 0, tokens: 0 }, committed: { usd: 0, tokens: 0 }, unknown: { usd: 0, tokens: 0 },
    },
    text: '',
    warnings: [],
  };
}

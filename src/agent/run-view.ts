/**
 * Run views: a bounded summary of a run that a stream can hand to a UI or a
 * log while the run goes on. A view is folded from the events the stream
 * already carries; it copies counts, ids and limits out of them and never a
 * prompt, a message, tool arguments or results, the scope or the snapshot.
 */
import {
  DEFAULT_MAX_OUTPUT_ATTEMPTS, DEFAULT_MAX_STEPS, DEFAULT_MAX_VERIFY_ATTEMPTS,
} from './options.js';
import type { AgentEvent, AgentOptions, AgentRunView } from './types.js';
import { parentOf } from '../delegation/agent-tool-marker.js';

export type { AgentRunView };


/** What a view needs from the run's options: only the limits, and the parent when there is one. */
export interface RunViewSeed {
  limits: AgentRunView['limits'];
  parentRunId?: string | null;
}

/** The limits of a view, read from a run's options with the engine's defaults. */
export function runViewSeed(options: Partial<AgentOptions<unknown>> | undefined, parentRunId: string | null = null): RunViewSeed {
  const count = (value: unknown, fallback: number) => (typeof value === 'number' && Number.isFinite(value) ? value : fallback);
  return {
    // A sub-agent's child run names its parent even when the parent is not streamed (docs/delegation.md).
    parentRunId: parentRunId ?? parentOf(options)?.runId ?? null,
    limits: {
      maxSteps: count(options?.maxSteps, DEFAULT_MAX_STEPS),
      maxOutputAttempts: count(options?.maxOutputAttempts, DEFAULT_MAX_OUTPUT_ATTEMPTS),
      maxVerifyAttempts: count(options?.maxVerifyAttempts, DEFAULT_MAX_VERIFY_ATTEMPTS),
      deadline: typeof options?.deadline === 'number' ? options.deadline : null,
    },
  };
}

/**
 * Folds a run's events into its view. `apply` returns the new view when the
 * event changed it, and `undefined` when it did not (a text delta, a warning).
 *
 * @example
 * const views = new RunViewBuilder(runViewSeed({ maxSteps: 5 }));
 * const view = views.apply({ type: 'run-start', runId: 'r1', resumed: false });
 * // view?.status === 'running'
 */
export class RunViewBuilder {
  #view: AgentRunView;
  #started = false;
  #stepsBefore = 0;
  /** The calls this leg has counted as started. */
  readonly #calls = new Set<string>();

  constructor(seed: RunViewSeed) {
    this.#view = {
      runId: '',
      parentRunId: seed.parentRunId ?? null,
      status: 'running',
      resumed: false,
      phase: null,
      steps: 0,
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      tools: { started: 0, completed: 0, failed: 0, pendingApprovals: 0, pendingClientCalls: 0 },
      limits: { ...seed.limits },
    };
  }

  /** The view as it stands (a copy). */
  get view(): AgentRunView {
    return copy(this.#view);
  }

  apply(event: AgentEvent<unknown>): AgentRunView | undefined {
    const v = this.#view;
    switch (event.type) {
      case 'run-start':
        this.#started = true;
        v.runId = event.runId;
        v.resumed = event.resumed;
        break;
      case 'step-start':
        // Step numbers count every turn of the run, so a resumed leg's first step says how many came before.
        if (v.phase === null) this.#stepsBefore = Math.max(0, event.step);
        v.phase = event.phase;
        if (v.steps < this.#stepsBefore) v.steps = this.#stepsBefore;
        break;
      case 'step-finish':
        v.steps = Math.max(v.steps, event.step + 1);
        v.usage.inputTokens += event.usage.inputTokens ?? 0;
        v.usage.outputTokens += event.usage.outputTokens ?? 0;
        v.usage.totalTokens += event.usage.totalTokens ?? (event.usage.inputTokens ?? 0) + (event.usage.outputTokens ?? 0);
        break;
      case 'tool-call-start':
        this.#calls.add(`${event.step}:${event.toolCallId}`);
        v.tools.started += 1;
        break;
      case 'tool-call-end':
        // A call an earlier leg began (approved, answered by the client) is one of this leg's calls once it ends here.
        if (!this.#calls.has(`${event.step}:${event.toolCallId}`)) {
          this.#calls.add(`${event.step}:${event.toolCallId}`);
          v.tools.started += 1;
        }
        v.tools.completed += 1;
        if (event.isError) v.tools.failed += 1;
        break;
      case 'approval-request':
        v.tools.pendingApprovals += 1;
        break;
      case 'client-call-request':
        v.tools.pendingClientCalls += 1;
        break;
      case 'result': {
        const r = event.result;
        if (!v.runId) v.runId = r.runId;
        v.status = r.status;
        v.steps = r.steps;
        v.usage = {
          inputTokens: r.usage.inputTokens ?? 0,
          outputTokens: r.usage.outputTokens ?? 0,
          totalTokens: r.usage.totalTokens ?? (r.usage.inputTokens ?? 0) + (r.usage.outputTokens ?? 0),
        };
        if (r.status === 'suspended') {
          v.tools.pendingApprovals = r.pendingApprovals.length;
          v.tools.pendingClientCalls = r.pendingClientCalls.length;
        } else {
          v.tools.pendingApprovals = 0;
          v.tools.pendingClientCalls = 0;
        }
        if (r.status === 'stopped') v.stopReason = r.reason;
        if (r.status === 'failed') v.errorCode = r.error.code;
        // A leg refused before it began has no run-start; its one view is still worth sending.
        this.#started = true;
        break;
      }
      default:
        return undefined;
    }
    return this.#started ? copy(v) : undefined;
  }
}

function copy(view: AgentRunView): AgentRunView {
  return { ...view, usage: { ...view.usage }, tools: { ...view.tools }, limits: { ...view.limits } };
}

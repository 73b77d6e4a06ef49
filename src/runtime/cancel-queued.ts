/**
 * A cancel queued for a run (AgentRunEnvelope.cancel, written by
 * cancelAgentRun) as the executors and reconcileAgentRun read it. The next
 * executor that takes a run up ends it with the cancel: the run actor is
 * restored under an aborted signal and handed CANCEL before anything of it
 * moves, so no model is called and no tool runs, and the run stops with
 * reason `aborted` through the chart's own end (its terminal commit, then its
 * chat). A run that ended has nothing to cancel: reconcileAgentRun drops the
 * request from its record, and keeps it on a run that did not end.
 */
import type { Json } from '../../machines/index.js';
import type { NormalizedOptions } from '../agent/options.js';
import type { AgentRunCancel, AgentRunEnvelope } from '../agent/types.js';

const ENDED: ReadonlySet<string> = new Set(['completed', 'stopped', 'failed']);

/** Whether the stored run ended (completed, stopped or failed). */
export const runEnded = (stored: Pick<AgentRunEnvelope, 'status'>) => ENDED.has(stored.status);

/** The stored request, when it is one (a record written by hand may hold anything there). */
export function cancelOf(stored: Pick<AgentRunEnvelope, 'cancel'>): AgentRunCancel | null {
  const cancel = stored.cancel as unknown;
  if (cancel === null || typeof cancel !== 'object') return null;
  const { requestedAt, reason } = cancel as Partial<AgentRunCancel>;
  if (typeof requestedAt !== 'number' || !Number.isFinite(requestedAt)) return null;
  return { requestedAt, ...(typeof reason === 'string' ? { reason } : {}) };
}

/**
 * The cancel a resume of `stored` must honour: the queued request of a run
 * that did not end, as the run's stop details (`{ cancel: { requestedAt, reason? } }`), or null.
 */
export function queuedCancel(stored: AgentRunEnvelope): Json | null {
  if (runEnded(stored)) return null;
  const cancel = cancelOf(stored);
  return cancel ? ({ cancel: { ...cancel } } as unknown as Json) : null;
}

/**
 * The leg's options for a resume that ends the run with its cancel: its
 * signal is aborted from the start, so an actor the restore starts again (a
 * model call, a tool's admission, the verifier) finds the run cancelled
 * before it does anything.
 */
export function cancellingOptions<T>(opts: NormalizedOptions<T>): NormalizedOptions<T> {
  return { ...opts, raw: { ...opts.raw, abortSignal: AbortSignal.abort(new Error('A cancel was queued for the run.')) } };
}

/**
 * reconcileAgentRun's part: a run that ended drops a queued cancel (saved
 * once more, without it); a run that did not end keeps it for its next
 * executor. Returns what became of it, or undefined when none was queued.
 */
export async function settleQueuedCancel(
  latest: AgentRunEnvelope,
  save: (envelope: AgentRunEnvelope) => Promise<unknown>,
): Promise<'queued' | 'dropped' | undefined> {
  if (latest.cancel === undefined) return undefined;
  if (!runEnded(latest)) return 'queued';
  const { cancel: _dropped, ...rest } = latest;
  await save(rest as AgentRunEnvelope);
  return 'dropped';
}

/**
 * cancelAgentRun: queues a cancel for a stored run that no executor drives
 * (a suspended run waiting on an approval, a drained run, a run whose
 * process died). The request is a bookkeeping save of the run's record at
 * its next revision, under the run's lease, with `cancel: { requestedAt,
 * reason }`; nothing else of the record changes. The next executor that
 * takes the run up (any resumeAgent of it) ends it stopped with reason
 * `aborted` before any model call or tool (src/runtime/cancel-queued.ts).
 */
import { nanoid } from 'nanoid';
import { AgentRunLeaseError, InvalidOptionsError, RunIdentityError } from '../errors/index.js';
import { checkEnvelope } from '../agent/envelope.js';
import { checkLease, checkSession } from '../agent/options.js';
import { agentRunLeaseKey, claim } from '../agent/run-agent.js';
import type { AgentRunCancel, AgentRunStatus, AgentSession, LeaseOptions } from '../agent/types.js';
import { DEFAULT_LEASE_TTL_MS } from './host.js';
import { cancelOf, runEnded } from './cancel-queued.js';

export interface CancelAgentRunOptions {
  /** The stored run: `{ store, runId, scope }`, as for resumeAgent. */
  session: AgentSession;
  /**
   * The lease provider the run's executors use. The call claims
   * `agentRunLeaseKey(session)` before it reads the run (`lease_held` while an
   * executor holds it), saves under it, and releases it at the end.
   */
  lease?: LeaseOptions;
  /** Why the run is cancelled; kept with the request and in the stopped run's `stopDetails`. */
  reason?: string;
  deps?: {
    /** Generates the lease owner when `lease.owner` is not given. @default nanoid */
    generateId?: () => string;
    /** The request's time (`requestedAt`, `updatedAt`). @default Date.now */
    clock?: { now(): number };
  };
}

/** What cancelAgentRun did. */
export interface AgentRunCancellation {
  runId: string;
  /**
   * `queued`: the request was saved now; `already-queued`: an earlier request
   * stands and nothing was written; `ended`: the run already ended, there is
   * nothing to cancel and nothing was written.
   */
  outcome: 'queued' | 'already-queued' | 'ended';
  /** The stored run's status, as the call found it. */
  status: AgentRunStatus;
  /** The request the record holds now (the earlier one when `already-queued`); null when the run ended. */
  request: AgentRunCancel | null;
}

/**
 * Queues a cancel for a run that no executor is driving. Rejects with
 * InvalidOptionsError for bad options, RunBusyError while this process
 * executes the run through the same store object, AgentRunLeaseError
 * (`lease_held`, `lease_lost`), RunIdentityError (`run_not_found`,
 * `scope_mismatch`), the envelope check's error for a record it cannot read,
 * and the store's RevisionConflictError when another executor saved the run
 * between the read and the write. A refusal writes nothing.
 *
 * An executor that drives the run without a lease sees the request at its
 * next save: that save is refused as a revision conflict, the leg stops
 * writing (its result is failed, `persistence_failed`), and the next resume
 * ends the run with the cancel. To stop a leg at once, abort its `abortSignal`.
 *
 * @example
 * ```ts
 * await cancelAgentRun({ session, reason: 'The customer withdrew the request.' });
 * const result = await resumeAgent({ model, session }); // { status: 'stopped', reason: 'aborted', ... }
 * ```
 */
export async function cancelAgentRun(options: CancelAgentRunOptions): Promise<AgentRunCancellation> {
  checkOptions(options);
  const { session, lease: leaseOptions } = options;
  const now = options.deps?.clock?.now ?? Date.now;
  const releaseClaim = claim(session.store, session.runId);
  let lease: Awaited<ReturnType<LeaseOptions['provider']['acquire']>> = null;
  try {
    if (leaseOptions) {
      const key = agentRunLeaseKey(session);
      const owner = leaseOptions.owner ?? (options.deps?.generateId ?? (() => nanoid()))();
      lease = await leaseOptions.provider.acquire(key, owner, leaseOptions.ttlMs ?? DEFAULT_LEASE_TTL_MS);
      if (!lease) throw new AgentRunLeaseError('lease_held', key);
    }
    const loaded = await session.store.load(session.runId, { scope: session.scope });
    if (loaded === undefined) throw new RunIdentityError('run_not_found', session.runId);
    const stored = checkEnvelope(loaded, session.runId, session.scope);
    const answer = (outcome: AgentRunCancellation['outcome'], request: AgentRunCancel | null): AgentRunCancellation =>
      ({ runId: session.runId, outcome, status: stored.status, request });
    if (runEnded(stored)) return answer('ended', null);
    const earlier = cancelOf(stored);
    if (earlier) return answer('already-queued', earlier);
    const request: AgentRunCancel = { requestedAt: now(), ...(options.reason !== undefined ? { reason: options.reason } : {}) };
    await session.store.save(
      { ...stored, cancel: request, revision: stored.revision + 1, updatedAt: request.requestedAt },
      lease ? { lease } : undefined,
    );
    return answer('queued', request);
  } finally {
    if (lease) await leaseOptions!.provider.release(lease).catch(() => undefined);
    releaseClaim();
  }
}

/** The shape checks, with runAgent's messages for `session` and `lease`. Nothing is read or written yet. */
function checkOptions(options: CancelAgentRunOptions): void {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('Options must be an object.');
  if (options.session === null || typeof options.session !== 'object') {
    throw new InvalidOptionsError('cancelAgentRun needs session { store, runId, scope }.');
  }
  checkSession(options.session);
  if (options.lease !== undefined) checkLease(options.lease);
  if (options.reason !== undefined && typeof options.reason !== 'string') throw new InvalidOptionsError('reason must be a string.');
  const generateId = options.deps?.generateId;
  if (generateId !== undefined && typeof generateId !== 'function') throw new InvalidOptionsError('deps.generateId must be a function.');
  const clock = options.deps?.clock;
  if (clock !== undefined && (clock === null || typeof clock.now !== 'function')) throw new InvalidOptionsError('deps.clock must have now().');
}

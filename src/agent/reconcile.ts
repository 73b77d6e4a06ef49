/**
 * reconcileAgentRun: settles what a stored run left unsettled once no
 * executor drives it. Cairn has no memory extraction or chat projection yet,
 * so today there is nothing to settle: the call takes the run's lease, reads
 * and checks the stored record, and reports its status. What must hold already
 * is the protocol the later settling depends on: the lease is claimed before
 * the run is read, renewed while the call works, and given back at the end;
 * every refusal rejects with its typed error and writes nothing.
 */
import { nanoid } from 'nanoid';
import { AgentRunLeaseError, InvalidOptionsError, RunIdentityError } from '../errors/index.js';
import { DEFAULT_LEASE_TTL_MS } from '../runtime/host.js';
import { keepLease, type LeaseKeeper } from '../runtime/lease-keeper.js';
import { checkEnvelope } from './envelope.js';
import { checkLease, checkSession } from './options.js';
import { agentRunLeaseKey, claim } from './run-agent.js';
import type { AgentRunStatus, AgentSession, AgentWarning, LeaseOptions } from './types.js';

export interface ReconcileAgentRunOptions {
  /** The stored run: `{ store, runId, scope }`, as for resumeAgent. */
  session: AgentSession;
  /**
   * The lease provider the run's executors use. The call claims
   * `agentRunLeaseKey(session)` before it reads the run, renews it every
   * `ttlMs / 3` while it works, and releases it at the end.
   */
  lease?: LeaseOptions;
  deps?: {
    /** Generates the lease owner when `lease.owner` is not given. @default nanoid */
    generateId?: () => string;
  };
}

/**
 * What a reconciliation found and settled. Today it settles nothing, so this
 * is the stored run's identity and status; `memory` and `chat` fields join it
 * when those subsystems arrive.
 */
export interface AgentRunReconciliation {
  runId: string;
  /** The stored run's status, as the call found it (and left it). */
  status: AgentRunStatus;
  /** Things the call noticed but did not fail for. Empty today. */
  warnings: AgentWarning[];
}

const STATUSES: ReadonlySet<string> = new Set<AgentRunStatus>(['running', 'suspended', 'drained', 'completed', 'stopped', 'failed']);
/** Options for subsystems Cairn does not have yet; accepted silently they would look settled. */
const NOT_YET = ['memory', 'chat', 'versionedMemory'] as const;

/**
 * Settles a stored run that no executor drives. Call it only then: a run
 * still executing elsewhere must be kept out with `lease` (the call is
 * refused with `lease_held` while an executor holds the run's lease).
 *
 * Unlike runAgent and resumeAgent it rejects: with InvalidOptionsError for bad
 * options, RunBusyError while this process executes the run through the same
 * store object, AgentRunLeaseError (`lease_held`, `lease_lost`),
 * RunIdentityError (`run_not_found`, `scope_mismatch`), and the store's
 * StoredRecordError or the envelope check's error for a record it cannot
 * read. A refusal writes nothing.
 *
 * @example
 * ```ts
 * const { runId, status } = await reconcileAgentRun({ session, lease: { provider: leases } });
 * ```
 */
export async function reconcileAgentRun(options: ReconcileAgentRunOptions): Promise<AgentRunReconciliation> {
  checkOptions(options);
  const { session, lease: leaseOptions } = options;
  const releaseClaim = claim(session.store, session.runId);
  let keeper: LeaseKeeper | null = null;
  try {
    if (leaseOptions) {
      // Claimed before the run is read: while an executor holds it, nothing is read at all.
      const key = agentRunLeaseKey(session);
      const owner = leaseOptions.owner ?? (options.deps?.generateId ?? (() => nanoid()))();
      const ttl = leaseOptions.ttlMs ?? DEFAULT_LEASE_TTL_MS;
      const lease = await leaseOptions.provider.acquire(key, owner, ttl);
      if (!lease) throw new AgentRunLeaseError('lease_held', key);
      keeper = keepLease(leaseOptions.provider, lease, ttl);
    }
    const loaded = await session.store.load(session.runId, { scope: session.scope });
    if (loaded === undefined) throw new RunIdentityError('run_not_found', session.runId);
    const stored = checkEnvelope(loaded, session.runId, session.scope);
    if (!STATUSES.has(stored.status)) {
      throw new InvalidOptionsError(`Stored record of run ${session.runId} has no known status.`, 'invalid_envelope');
    }
    // Nothing to settle yet. Once there is, each save carries keeper.lease and none starts once the lease is lost.
    if (keeper?.lost) throw new AgentRunLeaseError('lease_lost', keeper.lease.key);
    return { runId: session.runId, status: stored.status, warnings: [] };
  } finally {
    if (keeper) {
      keeper.stop();
      await leaseOptions!.provider.release(keeper.lease).catch(() => undefined);
    }
    releaseClaim();
  }
}

/** The shape checks of runAgent's `session` and `lease`, with the same messages. Nothing is read or written yet. */
function checkOptions(options: ReconcileAgentRunOptions): void {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('Options must be an object.');
  const session = options.session;
  if (session === null || typeof session !== 'object') {
    throw new InvalidOptionsError('reconcileAgentRun needs session { store, runId, scope }.');
  }
  checkSession(session);
  if (options.lease !== undefined) checkLease(options.lease);
  const generateId = options.deps?.generateId;
  if (generateId !== undefined && typeof generateId !== 'function') throw new InvalidOptionsError('deps.generateId must be a function.');
  for (const name of NOT_YET) {
    if ((options as unknown as Record<string, unknown>)[name] !== undefined) {
      throw new InvalidOptionsError(`${name} is not available in Cairn yet: reconcileAgentRun has nothing of it to settle.`);
    }
  }
}

/**
 * reconcileAgentRun: settles what a stored run left unsettled once no
 * executor drives it: today an extraction of its memory that an interruption
 * or a failed save left pending or failed (src/memory/reconcile.ts). The call
 * takes the run's lease first, renews it while it works and gives it back at
 * the end; every save carries the lease and none starts once it is lost;
 * every refusal rejects with its typed error and writes nothing.
 */
import { nanoid } from 'nanoid';
import { AgentRunLeaseError, BindingChangedError, InvalidOptionsError, RunIdentityError } from '../errors/index.js';
import { DEFAULT_LEASE_TTL_MS } from '../runtime/host.js';
import { keepLease, type LeaseKeeper } from '../runtime/lease-keeper.js';
import { checkEnvelope } from './envelope.js';
import { checkLease, checkSession } from './options.js';
import { agentRunLeaseKey, claim } from './run-agent.js';
import type { AgentRunEnvelope, AgentRunStatus, AgentSession, AgentWarning, LeaseOptions } from './types.js';
import type { AgentMemoryOptions } from '../memory/run-types.js';
import { checkMemoryOptions, memoryBindingOf } from '../memory/run-options.js';
import { reconcileMemory } from '../memory/reconcile.js';
import { repairChat } from '../chat/projection-repair.js';
import { chatBindingOf, checkChatOptions } from '../chat/projection.js';
import type { AgentChatOptions, AgentRunChatStatus } from '../chat/projection-types.js';
import { settleQueuedCancel } from '../runtime/cancel-queued.js';
import { openV3 } from '../v3/run-open.js';
import type { AgentSessionV3 } from '../v3/run-options-types.js';
import { checkVersionedMemoryOptions, type VersionedMemoryRunOptions } from '../v3/versioned-options.js';
import { checkVersionedBinding } from '../v3/versioned-leg.js';
import { settleVersionedIntents } from '../v3/versioned-reconcile.js';

export interface ReconcileAgentRunOptions {
  /** The stored run: `{ store, runId, scope }`, as for resumeAgent. */
  session: AgentSession;
  /** 3 for a V3 run (its session on an AgentRunStoreV3); refused otherwise, before anything is read. */
  checkpointVersion?: 1 | 2 | 3;
  /**
   * The lease provider the run's executors use. The call claims
   * `agentRunLeaseKey(session)` before it reads the run, renews it every
   * `ttlMs / 3` while it works, and releases it at the end.
   */
  lease?: LeaseOptions;
  /**
   * The run's memory, as the run was given it (the same scope): with it, an
   * extraction left pending or failed is settled. Without it, its state is only reported.
   */
  memory?: AgentMemoryOptions;
  /** The run's chat, as the run was given it: a projection the run's last write failed to make is finished. */
  chat?: AgentChatOptions;
  /**
   * A V3 run's versioned memory (`{ session }`, the session the run was given, the same scope): its intents whose
   * acknowledgment was lost are settled from the session's receipts. Needs `checkpointVersion: 3`.
   */
  versionedMemory?: Pick<VersionedMemoryRunOptions, 'session'>;
  deps?: {
    /** Generates the lease owner when `lease.owner` is not given. @default nanoid */
    generateId?: () => string;
    /** The time of each save (`updatedAt`). @default Date.now */
    clock?: { now(): number };
  };
}

/**
 * What a reconciliation found and settled: the run, and for each part it
 * settles, where that part stands now. A settled run reports its state:
 * `{ runId: 'tea-1', memory: 'completed' }`.
 */
export interface AgentRunReconciliation {
  runId: string;
  /** The run's memory extraction, when it has one: `pending` only when the call was given no `memory` to settle it with. */
  memory?: 'completed' | 'failed' | 'pending';
  /** The operation ids of the versioned-memory intents this call settled (acknowledged or failed); absent when none. */
  memoryIntents?: string[];
  /** The run's chat projection, when it has one: `written`, `failed` (the repair failed too), `scope-mismatch`, `superseded` or `pending`. */
  chat?: AgentRunChatStatus;
  /** A cancel queued for the run (cancelAgentRun): `dropped` from a run that ended, `queued` (kept) on one that did not. */
  cancel?: 'queued' | 'dropped';
  /**
   * The stored run's status, as the call found it (and left it). Not enumerable, so that printing the answer shows
   * what was settled; read it as `reconciliation.status`.
   */
  readonly status: AgentRunStatus;
  /** What the call noticed without failing for it (a partial extraction: code `memory_extraction_partial`); absent when none. */
  warnings?: AgentWarning[];
}

const STATUSES: ReadonlySet<string> = new Set<AgentRunStatus>(['running', 'suspended', 'drained', 'completed', 'stopped', 'failed']);
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
export async function reconcileAgentRun(
  options: ReconcileAgentRunOptions | (Omit<ReconcileAgentRunOptions, 'session' | 'checkpointVersion'> & { checkpointVersion: 3; session: AgentSessionV3 }),
): Promise<AgentRunReconciliation> {
  // A V3 run is read and saved through its store's adapter (version 3 records); its refusals reject here.
  const v3 = openV3(options as never, 'reconcileAgentRun');
  v3.close();
  return reconcile(v3.options as ReconcileAgentRunOptions);
}

async function reconcile(options: ReconcileAgentRunOptions): Promise<AgentRunReconciliation> {
  checkOptions(options);
  const memory = options.memory === undefined ? null : checkMemoryOptions(options.memory, null);
  const chat = checkChatOptions(options.chat);
  const versioned = options.versionedMemory === undefined ? null : checkVersionedMemoryOptions(options.versionedMemory, undefined, false);
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
    if (keeper?.lost) throw new AgentRunLeaseError('lease_lost', keeper.lease.key);
    if (memory && stored.binding.memory !== memoryBindingOf(memory)) throw new BindingChangedError(['memory'], ['the memory scope']);
    if (chat && stored.binding.chat !== chatBindingOf(chat)) throw new BindingChangedError(['chat'], ['the chat']);
    if (versioned) checkVersionedBinding(stored, versioned);
    const save = async (envelope: AgentRunEnvelope): Promise<AgentRunEnvelope> => {
      // Nothing more is saved once the lease is lost.
      if (keeper?.lost) throw new AgentRunLeaseError('lease_lost', keeper.lease.key);
      const next = { ...envelope, revision: envelope.revision + 1, updatedAt: (options.deps?.clock?.now ?? Date.now)() };
      await session.store.save(next, keeper ? { lease: keeper.lease } : undefined);
      return next;
    };
    const warnings: AgentWarning[] = [];
    let memoryState: AgentRunReconciliation['memory'];
    const extraction = stored.memory?.extraction;
    if (memory && extraction) {
      const settled = await reconcileMemory(stored, memory, save, new AbortController().signal);
      warnings.push(...settled.warnings);
      memoryState = settled.memory;
    } else if (extraction) {
      // A partial pass is failed in the answer (the engine reads a V3 record's `partial` as `failed` already).
      memoryState = extraction.status === 'planned' ? 'pending' : extraction.status === 'partial' ? 'failed' : extraction.status;
    }
    const load = async () => checkEnvelope((await session.store.load(session.runId, { scope: session.scope })) ?? stored, session.runId, session.scope);
    const intents = versioned ? await settleVersionedIntents({ memory: versioned, load, save }) : [];
    let chatState: AgentRunReconciliation['chat'];
    if (chat && stored.chat) {
      const latest = (await session.store.load(session.runId, { scope: session.scope })) ?? stored;
      const repaired = await repairChat(checkEnvelope(latest, session.runId, session.scope), chat, save, (options.deps?.clock?.now ?? Date.now)());
      if (repaired.warning) warnings.push(repaired.warning);
      chatState = repaired.status;
    } else if (stored.chat) chatState = stored.chat.status;
    // Handled as by a resume that does not take the run up: a run that ended drops it, any other keeps it.
    const cancelState = stored.cancel === undefined ? undefined
      : await settleQueuedCancel(checkEnvelope((await session.store.load(session.runId, { scope: session.scope })) ?? stored, session.runId, session.scope), save);
    if (keeper?.lost) throw new AgentRunLeaseError('lease_lost', keeper.lease.key);
    return answer(session.runId, stored.status, memoryState, warnings, chatState, cancelState, intents);
  } finally {
    if (keeper) {
      keeper.stop();
      await leaseOptions!.provider.release(keeper.lease).catch(() => undefined);
    }
    releaseClaim();
  }
}

function answer(
  runId: string, status: AgentRunStatus, memory: AgentRunReconciliation['memory'], warnings: AgentWarning[], chat?: AgentRunReconciliation['chat'],
  cancel?: AgentRunReconciliation['cancel'], intents: string[] = [],
): AgentRunReconciliation {
  const out = {
    runId, ...(memory ? { memory } : {}), ...(intents.length > 0 ? { memoryIntents: intents } : {}), ...(chat ? { chat } : {}), ...(cancel ? { cancel } : {}), ...(warnings.length > 0 ? { warnings } : {}),
  } as AgentRunReconciliation;
  Object.defineProperty(out, 'status', { value: status, enumerable: false });
  return out;
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
}

/**
 * The stored envelope: built from the run actor's persisted snapshot, checked
 * before any restore.
 */
import { CheckpointVersionError, InvalidOptionsError, RunIdentityError } from '../errors/index.js';
import { RUN_MACHINE_VERSION } from '../../machines/index.js';
import { defineKey } from './json.js';
import { migrateRecord } from './migrations.js';
import type { AgentRunEnvelope, AgentToolReceipt, PendingApproval } from './types.js';

export const ENVELOPE_KIND = 'cairn-agent-run';
export const SUPPORTED_ENVELOPE_VERSIONS = [1, 2] as const;
export const RUN_MACHINE_ID = 'run';

/** Effect identity (defined beside the machine that makes receipts). */
export { receiptKey } from '../../machines/index.js';

export { approvalIdFor } from './approval-id.js';

const OUTCOME_STATUSES: ReadonlySet<AgentToolReceipt['status']> = new Set([
  'executed', 'completed', 'failed', 'validation-failed', 'projection-failed', 'unstorable',
]);

/** The receipt records what happened to the call (not merely that it started). */
export const receiptHasOutcome = (receipt: AgentToolReceipt | undefined) =>
  receipt !== undefined && OUTCOME_STATUSES.has(receipt.status);

/**
 * Version 2 marks state an older reader would misread: a wait on an approval,
 * or an open call that the approval gate issued a request under (it would look
 * the verdict up by bare call id and deny the call), or an open call whose
 * receipt records a failure or a result that could not be stored (a status an
 * older reader does not know). Every other envelope stays 1.
 */
export function envelopeVersion(
  pendingApprovals: readonly PendingApproval[],
  openReceipts: readonly AgentToolReceipt[],
  openCallWasGated = false,
): 1 | 2 {
  if (pendingApprovals.length > 0 || openCallWasGated) return 2;
  // `suspended`: a sub-agent call whose child waits, which an older reader would start over.
  if (openReceipts.some((r) => r.status === 'failed' || r.status === 'unstorable' || r.status === 'suspended')) return 2;
  return 1;
}

/**
 * Checks a loaded record before anything runs: kind, version, identity, scope,
 * machine. Refusals write nothing.
 */
export function checkEnvelope(value: unknown, runId: string, scope: string): AgentRunEnvelope {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidOptionsError(`Stored record of run ${runId} is not an envelope.`, 'invalid_envelope');
  }
  const record = value as Partial<AgentRunEnvelope>;
  if (Object.getPrototypeOf(record) !== Object.prototype && Object.getPrototypeOf(record) !== null) {
    throw new InvalidOptionsError(`Stored record of run ${runId} is not plain data.`, 'invalid_envelope');
  }
  if (record.kind !== ENVELOPE_KIND) throw new RunIdentityError('scope_mismatch', runId);
  // A V3 record (checkpointVersion: 3) is not a run this path executes: refused as the spec words it, before anything runs.
  if ((record.version as number) === 3) throw new RunIdentityError('scope_mismatch', runId);
  if (!SUPPORTED_ENVELOPE_VERSIONS.includes(record.version as 1 | 2)) {
    throw new CheckpointVersionError(record.version, SUPPORTED_ENVELOPE_VERSIONS);
  }
  if (record.runId !== runId || record.scope !== scope) throw new RunIdentityError('scope_mismatch', runId);
  if (record.machine?.id !== RUN_MACHINE_ID) throw new CheckpointVersionError(record.machine?.version ?? null, [RUN_MACHINE_VERSION]);
  if (typeof record.revision !== 'number' || record.snapshot === undefined || record.snapshot === null ||
      (unbuiltReceiptsOf(record) === undefined && typeof record.receipts !== 'object') || record.binding === undefined) {
    throw new InvalidOptionsError(`Stored record of run ${runId} is incomplete.`, 'invalid_envelope');
  }
  // A record of an older machine is migrated here, in memory; one newer than this reader is refused.
  return migrateRecord(record as AgentRunEnvelope);
}

/** The receipt lists an envelope's `receipts` record is built from: the run's ended receipts, then its open calls'. */
export interface ReceiptLists {
  ended: readonly AgentToolReceipt[];
  open: readonly AgentToolReceipt[];
}

/**
 * The getters {@link lazyReceipts} defines, to the lists each builds from. Keyed by the getter, not the envelope:
 * a copy made with the envelope's property descriptors shares the getter, and so the lists.
 */
const unbuiltReceipts = new WeakMap<object, ReceiptLists>();

/**
 * Gives `envelope` a `receipts` record built from `ended` then `open` (by key, a later one replacing an earlier) the
 * first time it is read, instead of now. It reads, enumerates, spreads, copies and serializes as a plain property
 * would, in its place among the keys; assigning it replaces it. A store splitting the envelope takes the lists
 * instead (see {@link unbuiltReceiptsOf}) and never builds the record, which holds every receipt of the run: a save
 * then costs what the step added, not the run's history.
 */
export function lazyReceipts<T extends { receipts: Record<string, AgentToolReceipt> }>(
  envelope: T, ended: readonly AgentToolReceipt[], open: readonly AgentToolReceipt[],
): T {
  const settle = (target: object, value: Record<string, AgentToolReceipt>) => {
    Object.defineProperty(target, 'receipts', { value, writable: true, enumerable: true, configurable: true });
    return value;
  };
  const get = function receipts(this: object) {
    const out: Record<string, AgentToolReceipt> = {};
    for (const receipt of ended) out[receipt.key] = receipt;
    for (const receipt of open) out[receipt.key] = receipt;
    return settle(this, out);
  };
  unbuiltReceipts.set(get, { ended, open });
  Object.defineProperty(envelope, 'receipts', {
    enumerable: true,
    configurable: true,
    get,
    set(this: object, value: Record<string, AgentToolReceipt>) {
      settle(this, value);
    },
  });
  return envelope;
}

/**
 * The lists an envelope's `receipts` record will be built from, while nobody has read or replaced it (see
 * {@link lazyReceipts}); undefined once it is a plain value, which is then the truth.
 */
export function unbuiltReceiptsOf(envelope: object): ReceiptLists | undefined {
  const get = Object.getOwnPropertyDescriptor(envelope, 'receipts')?.get;
  return get ? unbuiltReceipts.get(get) : undefined;
}

/**
 * How many receipts `envelope.receipts` holds, counted from its lists while it is unbuilt (so a record nobody needs
 * is not built to be counted). The lists' keys are taken as unique within each list, as the engine and a store's
 * load make them; an open call's key among the ended ones counts once.
 */
export function receiptCountOf(envelope: AgentRunEnvelope): number {
  const lists = unbuiltReceiptsOf(envelope);
  if (!lists) return Object.keys(envelope.receipts).length;
  if (lists.open.length === 0) return lists.ended.length;
  const open = new Set(lists.open.map((r) => r.key));
  let count = open.size;
  for (const receipt of lists.ended) if (!open.has(receipt.key)) count++;
  return count;
}

/** `envelope.receipts[key]`, looked up in its lists while it is unbuilt (an open call's receipt wins, as in the record). */
export function receiptOf(envelope: AgentRunEnvelope, key: string): AgentToolReceipt | undefined {
  const lists = unbuiltReceiptsOf(envelope);
  if (!lists) return Object.hasOwn(envelope.receipts, key) ? envelope.receipts[key] : undefined;
  for (let i = lists.open.length - 1; i >= 0; i--) if (lists.open[i]!.key === key) return lists.open[i];
  // The run's newest receipts are at the end of its list: the keys a resume asks about are usually there.
  for (let i = lists.ended.length - 1; i >= 0; i--) if (lists.ended[i]!.key === key) return lists.ended[i];
  return undefined;
}

/**
 * `{ ...envelope, ...replace }`, made key by key: a spread would read (and so build) an unbuilt receipts record, and
 * `replace.receipts` stands in for it without reading it. The envelope's keys keep their order, keys only `replace`
 * has come after them, and an own `__proto__` key (JSON.parse makes them) stays a key.
 */
export function envelopeFields(envelope: AgentRunEnvelope, replace: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const own = envelope as unknown as Record<string, unknown>;
  for (const key of Object.keys(envelope)) defineKey(out, key, Object.hasOwn(replace, key) ? replace[key] : own[key]);
  for (const key of Object.keys(replace)) if (!Object.hasOwn(out, key)) defineKey(out, key, replace[key]);
  return out;
}

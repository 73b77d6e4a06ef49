/**
 * The stored envelope: built from the run actor's persisted snapshot, checked
 * before any restore.
 */
import { CheckpointVersionError, InvalidOptionsError, RunIdentityError } from '../errors/index.js';
import { RUN_MACHINE_VERSION } from '../../machines/index.js';
import { digestOf } from './digest.js';
import { migrateRecord } from './migrations.js';
import type { AgentRunEnvelope, AgentToolReceipt, PendingApproval } from './types.js';

export const ENVELOPE_KIND = 'cairn-agent-run';
export const SUPPORTED_ENVELOPE_VERSIONS = [1, 2] as const;
export const RUN_MACHINE_ID = 'run';

/** Effect identity (defined beside the machine that makes receipts). */
export { receiptKey } from '../../machines/index.js';

/** An approval id is bound to the run, the step, the call, the tool and the arguments. */
export function approvalIdFor(runId: string, call: { modelStep: number; toolCallId: string; toolName: string; args: unknown }): string {
  const digest = digestOf({ runId, step: call.modelStep, toolCallId: call.toolCallId, toolName: call.toolName, args: call.args });
  return `${call.toolCallId}@${digest.slice('sha256:'.length, 'sha256:'.length + 24)}`;
}

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
  if (openReceipts.some((r) => r.status === 'failed' || r.status === 'unstorable')) return 2;
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
  if (!SUPPORTED_ENVELOPE_VERSIONS.includes(record.version as 1 | 2)) {
    throw new CheckpointVersionError(record.version, SUPPORTED_ENVELOPE_VERSIONS);
  }
  if (record.runId !== runId || record.scope !== scope) throw new RunIdentityError('scope_mismatch', runId);
  if (record.machine?.id !== RUN_MACHINE_ID) throw new CheckpointVersionError(record.machine?.version ?? null, [RUN_MACHINE_VERSION]);
  if (typeof record.revision !== 'number' || record.snapshot === undefined || record.snapshot === null ||
      typeof record.receipts !== 'object' || record.binding === undefined) {
    throw new InvalidOptionsError(`Stored record of run ${runId} is incomplete.`, 'invalid_envelope');
  }
  // A record of an older machine is migrated here, in memory; one newer than this reader is refused.
  return migrateRecord(record as AgentRunEnvelope);
}

/**
 * What the engine built an envelope's `receipts` record from: the run's ended receipts (the snapshot's own list)
 * and its open calls' receipts, in that order. A store splitting the envelope (src/stores/record.ts) then takes the
 * parts from these lists instead of walking and checking the record, which grows with the run. Kept by the record's
 * identity; an envelope built any other way has none, and is checked the long way.
 */
const receiptSources = new WeakMap<object, { ended: readonly AgentToolReceipt[]; open: readonly AgentToolReceipt[] }>();

export function noteReceiptSources(receipts: object, ended: readonly AgentToolReceipt[], open: readonly AgentToolReceipt[]): void {
  receiptSources.set(receipts, { ended, open });
}

export function receiptSourcesOf(receipts: object): { ended: readonly AgentToolReceipt[]; open: readonly AgentToolReceipt[] } | undefined {
  return receiptSources.get(receipts);
}

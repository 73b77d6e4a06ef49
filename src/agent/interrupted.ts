/**
 * Calls a crash interrupted: an `executing` receipt with no outcome, on a call
 * the stored run has not answered. Nobody knows whether their effect landed,
 * so a resume goes on only once the operator said, for each, to run it again
 * (retryToolCallIds) or what happened (reconciledToolResults).
 */
import { CairnTypeError } from '../errors/index.js';
import { receiptKey, receiptOf } from './envelope.js';
import { refreshInvocationInputs } from './stored-call.js';
import { toJson } from './json.js';
import type {
  AgentRunEnvelope, AgentToolReceipt, JsonValue, ReconciledToolResult, UnknownEffect,
} from './types.js';

interface StoredCall {
  status?: string;
  context?: { modelStep: number; toolCallId: string; toolName: string };
}

/** Receipts of the stored run's open calls whose effect started and has no recorded outcome. */
export function interruptedCalls(stored: AgentRunEnvelope): AgentToolReceipt[] {
  const snapshot = stored.snapshot as { context?: { batch?: string[] }; children?: Record<string, { snapshot?: StoredCall } | undefined> };
  const out: AgentToolReceipt[] = [];
  for (const id of snapshot.context?.batch ?? []) {
    const call = snapshot.children?.[id]?.snapshot;
    if (!call?.context || call.status !== 'active') continue;
    const receipt = receiptOf(stored, receiptKey(call.context.modelStep, call.context.toolCallId));
    // An idempotent tool's call runs again by itself under the same identity.
    if (receipt?.status === 'executing' && !receipt.idempotent) out.push(receipt);
  }
  return out;
}

/** The approval the run issued for a call (same turn, same id), with the verdict it recorded, if any. */
export function approvalOf(
  approvals: AgentRunEnvelope['approvals'] | undefined,
  call: { modelStep: number; toolCallId: string },
): { approvalId: string; record: AgentRunEnvelope['approvals'][string] } | undefined {
  const found = Object.entries(approvals ?? {}).filter(([, a]) => a.toolCallId === call.toolCallId && a.modelStep === call.modelStep);
  // The last one issued wins (a call is gated once; a guardrail could rewrite the arguments of a retry).
  const last = found.find(([, a]) => a.verdict !== undefined) ?? found[found.length - 1];
  return last ? { approvalId: last[0], record: last[1] } : undefined;
}

/**
 * Copies of interrupted calls' receipts as a stopped result lists them: with
 * the approval each was held for and the verdict it ran under, which is what a
 * retry of it needs (and finds on its own: the run recorded it).
 */
export function describeUnknownEffects(
  receipts: readonly AgentToolReceipt[],
  approvals: AgentRunEnvelope['approvals'] | undefined,
): UnknownEffect[] {
  return receipts.map((receipt) => {
    const copy: UnknownEffect = structuredClone(receipt);
    const issued = approvalOf(approvals, receipt);
    if (issued) {
      const { verdict, token } = issued.record;
      copy.approval = {
        approvalId: issued.approvalId, token,
        ...(verdict ? { approved: verdict.approved } : {}),
        ...(verdict?.reason !== undefined ? { reason: verdict.reason } : {}),
      };
    }
    return copy;
  });
}

export interface Reconciliation {
  retry: AgentToolReceipt[];
  reconciled: Array<{ receipt: AgentToolReceipt; result: ReconciledToolResult }>;
  /** Interrupted calls the resume did not settle. */
  unsettled: AgentToolReceipt[];
  /** retryToolCallIds entries that name no interrupted call: ignored. */
  ignored: string[];
}

/**
 * Checks retryToolCallIds and reconciledToolResults against the interrupted
 * calls. A retry id that names no interrupted call is ignored (it asks for
 * nothing this run can do); anything else that is not a list of those calls,
 * each named once, is a TypeError raised before anything is read further or
 * written.
 */
export function checkReconciliation(
  interrupted: AgentToolReceipt[],
  retryToolCallIds: unknown,
  reconciledToolResults: unknown,
): Reconciliation {
  const refuse = (message: string): never => {
    throw new CairnTypeError('invalid_options', message);
  };
  if (retryToolCallIds !== undefined && (!Array.isArray(retryToolCallIds) || retryToolCallIds.some((id) => typeof id !== 'string'))) {
    refuse('retryToolCallIds must be an array of tool call ids.');
  }
  if (reconciledToolResults !== undefined && (!Array.isArray(reconciledToolResults) || reconciledToolResults.some(
    (r) => r === null || typeof r !== 'object' || typeof (r as ReconciledToolResult).toolCallId !== 'string' || !('output' in r) ||
      ((r as ReconciledToolResult).isError !== undefined && typeof (r as ReconciledToolResult).isError !== 'boolean'),
  ))) {
    refuse('reconciledToolResults must be an array of { toolCallId, output, isError? }.');
  }
  const byId = new Map(interrupted.map((r) => [r.toolCallId, r]));
  const seen = new Set<string>();
  const take = (id: string, list: string) => {
    const receipt = byId.get(id);
    if (!receipt) refuse(`${list}: ${id} is not an interrupted call of this run; only the calls listed in unknownEffects are accepted.`);
    if (seen.has(id)) refuse(`${list}: ${id} is named more than once (a call is retried or reconciled, once).`);
    seen.add(id);
    return receipt!;
  };
  const retryIds = (retryToolCallIds as string[] | undefined) ?? [];
  const ignored = [...new Set(retryIds.filter((id) => !byId.has(id)))];
  const retry = retryIds.filter((id) => byId.has(id)).map((id) => take(id, 'retryToolCallIds'));
  const reconciled = ((reconciledToolResults as ReconciledToolResult[] | undefined) ?? [])
    .map((result) => ({ receipt: take(result.toolCallId, 'reconciledToolResults'), result }));
  return { retry, reconciled, unsettled: interrupted.filter((r) => !seen.has(r.toolCallId)), ignored };
}

/** The receipt an operator's answer records: the call's raw result (or its error), marked reconciled. */
export function reconciledReceipt(receipt: AgentToolReceipt, result: ReconciledToolResult): AgentToolReceipt {
  const output = toJson<JsonValue>(result.output);
  if (result.isError === true) {
    const message = typeof output === 'string' ? output : JSON.stringify(output);
    return { ...receipt, status: 'failed', error: { name: 'Error', code: 'reconciled_error', message }, reconciled: true };
  }
  return { ...receipt, status: 'executed', rawResult: output, reconciled: true };
}

type MovingCall = { value?: unknown; context?: Record<string, unknown>; children?: Record<string, { snapshot?: { input?: unknown } } | undefined> };

/**
 * An operator's recorded outcome for an interrupted call that the stored
 * snapshot shows on its way again (a retry an earlier leg began, cut off
 * before it wrote its new `executing` receipt), put into the snapshot before
 * it is restored. Such a call moves on as soon as it is restored, before the
 * run can hand it an answer, and would run the effect again: so the answer has
 * to be in it already. The reconciled result becomes its receipt (the gate and
 * the effect stage then replay it) and the retry is withdrawn. Every other
 * interrupted call comes to rest by itself (a restarted write or effect finds
 * no permit) and gets its answer from the settle as usual. Returns the record
 * unchanged when no call needs this, otherwise a copy.
 */
export function answerMovingCalls(stored: AgentRunEnvelope, reconciled: ReadonlyMap<string, AgentToolReceipt>): AgentRunEnvelope {
  const snapshot = stored.snapshot as { context?: { batch?: string[] }; children?: Record<string, { snapshot?: MovingCall } | undefined> };
  const moving = (snapshot.context?.batch ?? []).filter((id) => {
    const call = snapshot.children?.[id]?.snapshot;
    // Only a call on its way again moves on by itself: any other restarted write or effect finds no permit and comes to rest.
    if (!call?.context || (call as { status?: string }).status !== 'active' || call.value === 'unknownEffect') return false;
    if (call.context.retried !== true) return false;
    const key = receiptKey(call.context.modelStep as number, call.context.toolCallId as string);
    return reconciled.has(key);
  });
  if (moving.length === 0) return stored;
  const copy = structuredClone(stored);
  const children = (copy.snapshot as typeof snapshot).children!;
  for (const id of moving) {
    const call = children[id]!.snapshot!;
    const context = call.context!;
    const key = receiptKey(context.modelStep as number, context.toolCallId as string);
    Object.assign(context, { receipt: reconciled.get(key), retried: false });
    refreshInvocationInputs(call);
  }
  return copy;
}

/**
 * The answers an embedded run holds until a leg carries them: merged by the
 * call they answer (a later answer for the same call replaces the earlier),
 * and checked against what the run waits for.
 */
import type {
  ApprovalResponse, ClientToolResult, PendingApproval, PendingClientCall, ReconciledToolResult, UnknownEffect,
} from '../agent/index.js';
import type { AgentRunAnswers } from './types.js';

export const noAnswers = (): AgentRunAnswers => ({
  approvalResponses: [], clientToolResults: [], retryToolCallIds: [], reconciledToolResults: [],
});

export const hasAnswers = (a: AgentRunAnswers): boolean =>
  a.approvalResponses.length + a.clientToolResults.length + a.retryToolCallIds.length + a.reconciledToolResults.length > 0;

export function addVerdict(a: AgentRunAnswers, verdict: ApprovalResponse): AgentRunAnswers {
  return { ...a, approvalResponses: [...a.approvalResponses.filter((v) => v.approvalId !== verdict.approvalId), verdict] };
}

export function addClientResult(a: AgentRunAnswers, result: ClientToolResult): AgentRunAnswers {
  return { ...a, clientToolResults: [...a.clientToolResults.filter((r) => r.toolCallId !== result.toolCallId), result] };
}

/** A call is either retried or reconciled: the later answer for it wins. */
export function addSettlement(a: AgentRunAnswers, retry: readonly string[], reconciled: readonly ReconciledToolResult[]): AgentRunAnswers {
  const touched = new Set([...retry, ...reconciled.map((r) => r.toolCallId)]);
  return {
    ...a,
    retryToolCallIds: [...a.retryToolCallIds.filter((id) => !touched.has(id)), ...new Set(retry)],
    reconciledToolResults: [...a.reconciledToolResults.filter((r) => !touched.has(r.toolCallId)), ...reconciled],
  };
}

/** Whether the answers answer every pending approval and client call (a suspension goes on only then). */
export function answersSuspension(
  a: AgentRunAnswers, approvals: readonly PendingApproval[], clientCalls: readonly PendingClientCall[], allowBare: boolean,
): boolean {
  if (approvals.length + clientCalls.length === 0) return false;
  const verdictFor = (p: PendingApproval) =>
    a.approvalResponses.some((v) => v.approvalId === p.approvalId || (allowBare && v.approvalId === p.toolCallId));
  return approvals.every(verdictFor) && clientCalls.every((c) => a.clientToolResults.some((r) => r.toolCallId === c.toolCallId));
}

/** Whether every unknown effect is retried or reconciled. */
export function settlesEffects(a: AgentRunAnswers, effects: readonly UnknownEffect[]): boolean {
  if (effects.length === 0) return false;
  const settled = new Set([...a.retryToolCallIds, ...a.reconciledToolResults.map((r) => r.toolCallId)]);
  return effects.every((e) => settled.has(e.toolCallId));
}

/** The part of the answers a resume takes. */
export function resumeAnswers(a: AgentRunAnswers) {
  return {
    ...(a.approvalResponses.length > 0 ? { approvalResponses: a.approvalResponses } : {}),
    ...(a.clientToolResults.length > 0 ? { clientToolResults: a.clientToolResults } : {}),
    ...(a.retryToolCallIds.length > 0 ? { retryToolCallIds: a.retryToolCallIds } : {}),
    ...(a.reconciledToolResults.length > 0 ? { reconciledToolResults: a.reconciledToolResults } : {}),
  };
}

/** Checks an event's verdict; returns why it is malformed, or null. */
export function verdictProblem(v: Partial<ApprovalResponse>): string | null {
  if (typeof v.approvalId !== 'string' || v.approvalId === '') return 'approvalId must be a non-empty string';
  if (typeof v.approved !== 'boolean') return 'approved must be true or false';
  if (v.token !== undefined && typeof v.token !== 'string') return 'token must be a string';
  if (v.reason !== undefined && typeof v.reason !== 'string') return 'reason must be a string';
  return null;
}

export function clientResultProblem(r: Partial<ClientToolResult>): string | null {
  if (typeof r.toolCallId !== 'string' || r.toolCallId === '') return 'toolCallId must be a non-empty string';
  if (!('output' in r) || r.output === undefined) return 'output is required';
  if (r.isError !== undefined && typeof r.isError !== 'boolean') return 'isError must be true or false';
  return null;
}

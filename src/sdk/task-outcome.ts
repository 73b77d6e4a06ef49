/**
 * `taskOutcome`: whether the task a run was given is done, as far as the run
 * itself can tell, read from its record (status, receipts and approvals).
 * `status: 'completed'` only says the agent loop finished; the outcome says
 * what became of the effects:
 *
 * - `needs_reconciliation`: a call's effect may or may not have happened (its
 *   receipt was left `executing` by a crash, and the tool is not idempotent);
 *   someone has to check the system it touched before the run goes on.
 * - `in_progress`: the run waits (an approval, a client call, a drain) or is
 *   still running.
 * - `failed`: the run failed, or stopped before it finished (max steps, an
 *   abort, a budget, a refusal).
 * - `denied`: the run completed, but a call it asked approval for was denied
 *   and no later call of that tool completed.
 * - `resolved`: the run completed with no effect left in doubt. An ordinary
 *   tool error (the tool threw, the model was told) does not change that.
 *   Whether the answer is right for your business is still yours to check.
 */
import type { AgentResult, AgentRunEnvelope } from '../agent/types.js';

export type TaskOutcome = 'resolved' | 'denied' | 'failed' | 'in_progress' | 'needs_reconciliation';

export const TASK_OUTCOMES: readonly TaskOutcome[] = ['resolved', 'denied', 'failed', 'in_progress', 'needs_reconciliation'];

/** The outcome of a run from its stored record, and the result of the leg that just ended when there is one. */
export function taskOutcomeOf(record: AgentRunEnvelope | null, result?: AgentResult<unknown>): TaskOutcome {
  if (result?.status === 'stopped' && result.reason === 'tool-reconciliation-required') return 'needs_reconciliation';
  const receipts = record ? Object.values(record.receipts ?? {}) : [];
  // At rest, a receipt still `executing` is an effect a crash interrupted; an idempotent tool's runs again by itself.
  if (receipts.some((r) => r.status === 'executing' && !r.idempotent)) return 'needs_reconciliation';
  const status = result?.status ?? record?.status;
  if (status === 'failed' || status === 'stopped') return 'failed';
  if (status !== 'completed') return 'in_progress';
  if (!record) return 'resolved';
  const names = new Map<string, string>();
  for (const r of receipts) names.set(`${r.modelStep}:${r.toolCallId}`, r.toolName);
  for (const p of record.pendingApprovals ?? []) names.set(`${p.modelStep}:${p.toolCallId}`, p.toolName);
  for (const [, approval] of Object.entries(record.approvals ?? {})) {
    if (approval.verdict?.approved !== false) continue;
    const toolName = names.get(`${approval.modelStep}:${approval.toolCallId}`) ?? toolNameInMessages(record, approval.toolCallId);
    // Denied for good unless the model asked again later and that call went through.
    const later = receipts.some((r) => r.toolName === toolName && r.modelStep > approval.modelStep && r.status === 'completed' && !r.isError);
    if (!later) return 'denied';
  }
  return 'resolved';
}

function toolNameInMessages(record: AgentRunEnvelope, toolCallId: string): string | undefined {
  const messages = (record.snapshot as { context?: { messages?: unknown[] } } | null)?.context?.messages ?? [];
  for (const m of messages as { role?: string; toolCalls?: { toolCallId: string; toolName: string }[] }[]) {
    if (m.role !== 'assistant') continue;
    const call = m.toolCalls?.find((c) => c.toolCallId === toolCallId);
    if (call) return call.toolName;
  }
  return undefined;
}

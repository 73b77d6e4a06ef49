/**
 * A resume's answers for calls of a sub-agent's child run. The root's resume
 * takes them with its own: verdicts for approvals the child asked for
 * (listed in the root's pendingApprovals with the child's runId), retries and
 * reconciled results for the child's unknown effects (listed in the root's
 * unknownEffects). The root does not judge them itself: the parent's call
 * hands them to its child when it drives it again (agent-tool-run.ts). @internal
 */
import type { ChildRunFacts } from '../../machines/index.js';
import type { AgentRunEnvelope, AgentToolReceipt, ReconciledToolResult } from '../agent/types.js';

/** The tool call ids of the unknown effects the stored run's sub-agent calls wait on. */
export function delegatedUnknownIds(stored: AgentRunEnvelope): Set<string> {
  const snapshot = stored.snapshot as { context?: { batch?: string[] }; children?: Record<string, { snapshot?: { status?: string; context?: { receipt?: { child?: ChildRunFacts } | null } } } | undefined> };
  const out = new Set<string>();
  for (const id of snapshot.context?.batch ?? []) {
    const call = snapshot.children?.[id]?.snapshot;
    if (call?.status !== 'active') continue;
    for (const effect of call.context?.receipt?.child?.unknownEffects ?? []) {
      const toolCallId = (effect as { toolCallId?: unknown }).toolCallId;
      if (typeof toolCallId === 'string') out.add(toolCallId);
    }
  }
  return out;
}

/**
 * The retries and reconciled results that are the root's own: those for a
 * child's unknown effect are left to the child (an id that is also one of the
 * root's own interrupted calls is the root's).
 */
export function ownReconciliation(
  stored: AgentRunEnvelope, interrupted: readonly AgentToolReceipt[], retry: unknown, reconciled: unknown,
): [unknown, unknown] {
  const delegated = delegatedUnknownIds(stored);
  if (delegated.size === 0) return [retry, reconciled];
  const own = new Set(interrupted.map((r) => r.toolCallId));
  const keep = (id: unknown) => typeof id !== 'string' || own.has(id) || !delegated.has(id);
  return [
    Array.isArray(retry) ? retry.filter(keep) : retry,
    Array.isArray(reconciled) ? reconciled.filter((r) => keep((r as ReconciledToolResult | null)?.toolCallId)) : reconciled,
  ];
}

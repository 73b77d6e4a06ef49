/**
 * A resume's answers for calls of a sub-agent's child run. The root's resume
 * takes them with its own: verdicts for approvals the child asked for
 * (listed in the root's pendingApprovals with the child's runId), retries and
 * reconciled results for the child's unknown effects (listed in the root's
 * unknownEffects). The root does not judge them itself: the parent's call
 * hands them to its child when it drives it again (agent-tool-run.ts). (Internal to Cairn.)
 */
import type { AgentRunEnvelope, AgentToolReceipt, ReconciledToolResult } from '../agent/types.js';

/**
 * Whether the stored run has an open sub-agent call (in its delegation state).
 * Its record may not list what the child waits on yet (the run's last save
 * can precede the child's coming to rest), so the child's own record decides.
 */
export function hasOpenSubAgentCall(stored: AgentRunEnvelope): boolean {
  const snapshot = stored.snapshot as { context?: { batch?: string[] }; children?: Record<string, { snapshot?: { status?: string; value?: unknown; context?: { plan?: { delegates?: boolean } | null } } } | undefined> };
  return (snapshot.context?.batch ?? []).some((id) => {
    const call = snapshot.children?.[id]?.snapshot;
    if (call?.status !== 'active') return false;
    const value = call.value as Record<string, unknown> | string | undefined;
    return (typeof value === 'object' && value !== null && 'delegation' in value) || call.context?.plan?.delegates === true;
  });
}

/**
 * The retries and reconciled results that are the root's own. While a
 * sub-agent call is open, an id that is not one of the root's own
 * interrupted calls is left to its child (which takes those of its own
 * unknown effects and ignores the rest): the root cannot tell from its own
 * record which ids the child waits on.
 */
export function ownReconciliation(
  stored: AgentRunEnvelope, interrupted: readonly AgentToolReceipt[], retry: unknown, reconciled: unknown,
): [unknown, unknown] {
  if (!hasOpenSubAgentCall(stored)) return [retry, reconciled];
  const own = new Set(interrupted.map((r) => r.toolCallId));
  const keep = (id: unknown) => typeof id !== 'string' || own.has(id);
  return [
    Array.isArray(retry) ? retry.filter(keep) : retry,
    Array.isArray(reconciled) ? reconciled.filter((r) => keep((r as ReconciledToolResult | null)?.toolCallId)) : reconciled,
  ];
}

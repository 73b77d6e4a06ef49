/**
 * Approval versions. The engine binds an approval to the run, the step, the
 * call, the tool and a digest of the arguments (its approvalId), and issues a
 * single-use token with it. A tool's `approvalVersion` adds one more binding
 * without a second mechanism: the approvalId an Agent shows is the engine's
 * with a tag of the version the tool has now. A decision names the id it was
 * given; when the tool's version has changed since, the id no longer matches,
 * the decision is not passed on (the run stays suspended, nothing is
 * written), and the state asks again under the new id. A call therefore never
 * runs under an approval given for another version.
 */
import { createHash } from 'node:crypto';
import type { AgentWarning, ApprovalResponse, PendingApproval } from '../agent/types.js';

const SEPARATOR = '~v';

const tag = (version: string) => createHash('sha256').update(version).digest('hex').slice(0, 12);

/** The approvalId an Agent shows for an engine approval of a tool at `version`. */
export function agentApprovalId(engineApprovalId: string, version: string | undefined): string {
  return version === undefined ? engineApprovalId : `${engineApprovalId}${SEPARATOR}${tag(version)}`;
}

/** The engine's approvalId inside an Agent's. */
export function engineApprovalIdOf(approvalId: string): string {
  const at = approvalId.lastIndexOf(SEPARATOR);
  return at === -1 ? approvalId : approvalId.slice(0, at);
}

/**
 * The decisions to hand the engine: each one for a pending approval passes
 * (under the engine's id) only when it names the id of the tool's current
 * version; one made under another version is held back with a warning.
 * Decisions for anything else pass as they are, for the engine to judge.
 */
export function decisionsForEngine(
  responses: readonly ApprovalResponse[] | undefined,
  pending: readonly PendingApproval[],
  versionOf: (toolName: string) => string | undefined,
): { responses: ApprovalResponse[]; warnings: AgentWarning[] } {
  const out: ApprovalResponse[] = [];
  const warnings: AgentWarning[] = [];
  if (!Array.isArray(responses)) return { responses: responses as unknown as ApprovalResponse[], warnings };
  for (const response of responses) {
    if (typeof response?.approvalId !== 'string') {
      out.push(response);
      continue;
    }
    const engineId = engineApprovalIdOf(response.approvalId);
    const call = pending.find((p) => p.approvalId === engineId);
    if (!call) {
      out.push(response);
      continue;
    }
    const expected = agentApprovalId(engineId, versionOf(call.toolName));
    if (response.approvalId !== expected) {
      warnings.push({
        type: 'warning', setting: 'approvalVersion', toolCallId: call.toolCallId,
        message: `The decision for ${response.approvalId} was made under another approvalVersion of tool "${call.toolName}"; ` +
          `it decides nothing, and the call is asked for again as ${expected}.`,
      });
      continue;
    }
    out.push({ ...response, approvalId: engineId });
  }
  return { responses: out, warnings };
}

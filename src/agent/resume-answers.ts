/**
 * Matches a resume's verdicts and client results to what the stored run
 * waits for. Nothing here writes: a resume that cannot answer every pending
 * call stays suspended as it was.
 */
import type { CallAnswer } from '../../machines/index.js';
import { InvalidOptionsError } from '../errors/index.js';
import { receiptKey } from './envelope.js';
import type {
  AgentRunEnvelope, AgentWarning, ApprovalResponse, ClientToolResult, Message,
} from './types.js';

export interface MatchedAnswers {
  /** Answers by effect identity (receiptKey). */
  byKey: Map<string, CallAnswer>;
  complete: boolean;
  warnings: AgentWarning[];
}

function occurrences(messages: Message[], toolCallId: string): number {
  let count = 0;
  for (const message of messages) {
    if (message.role === 'assistant') count += (message.toolCalls ?? []).filter((c) => c.toolCallId === toolCallId).length;
  }
  return count;
}

export function matchAnswers(
  stored: AgentRunEnvelope,
  messages: Message[],
  approvalResponses: readonly ApprovalResponse[] = [],
  clientToolResults: readonly ClientToolResult[] = [],
  /** Verdicts another rule already took (a retried call's), not to be reported as matching nothing. */
  takenElsewhere: ReadonlySet<string> = new Set(),
): MatchedAnswers {
  const byKey = new Map<string, CallAnswer>();
  const warnings: AgentWarning[] = [];
  const used = new Set<ApprovalResponse>();
  let complete = true;

  for (const pending of stored.pendingApprovals) {
    let response = approvalResponses.find((r) => r.approvalId === pending.approvalId);
    if (response && response.token !== pending.token) {
      used.add(response);
      warnings.push({
        type: 'warning', setting: 'approvalResponses', toolCallId: pending.toolCallId,
        message: `The verdict for ${pending.approvalId} carries a token that does not match; it was ignored.`,
      });
      response = undefined;
    }
    // A verdict by bare tool call id counts only when that id was used once and gated once.
    if (!response) {
      const bare = approvalResponses.find((r) => r.approvalId === pending.toolCallId);
      if (bare && stored.approvalRequestCounts[pending.toolCallId] === 1 && occurrences(messages, pending.toolCallId) === 1 &&
          (bare.token === undefined || bare.token === pending.token)) {
        response = bare;
      }
    }
    if (!response) {
      complete = false;
      continue;
    }
    used.add(response);
    byKey.set(receiptKey(pending.modelStep, pending.toolCallId), {
      verdict: { approved: response.approved === true, ...(response.reason !== undefined ? { reason: response.reason } : {}) },
    });
  }
  for (const response of approvalResponses) {
    if (used.has(response) || takenElsewhere.has(response.approvalId)) continue;
    const toolCallId = response.approvalId.split('@')[0]!;
    warnings.push({
      type: 'warning', setting: 'approvalResponses', toolCallId,
      message: `The verdict for ${response.approvalId} matches no pending approval; it decides nothing.`,
    });
  }

  const usedResults = new Set<ClientToolResult>();
  for (const call of stored.pendingClientCalls) {
    const result = clientToolResults.find((r) => r.toolCallId === call.toolCallId);
    if (!result) {
      complete = false;
      continue;
    }
    usedResults.add(result);
    const key = receiptKey(call.modelStep, call.toolCallId);
    byKey.set(key, { ...byKey.get(key), clientResult: { output: result.output as never, isError: result.isError === true } });
  }
  const recorded = new Set(Object.values(stored.receipts).filter((r) => r.client === true).map((r) => r.toolCallId));
  for (const result of clientToolResults) {
    if (usedResults.has(result)) continue;
    if (!recorded.has(result.toolCallId)) {
      // A result for a call the run never waited on cannot be taken: refuse before anything is written.
      const error = new InvalidOptionsError(
        `clientToolResults: ${result.toolCallId} is not a client call this run waits on; only the calls in pendingClientCalls are accepted.`,
      );
      error.name = 'TypeError';
      throw error;
    }
    warnings.push({
      type: 'warning', setting: 'clientToolResults', toolCallId: result.toolCallId,
      message: `The result for ${result.toolCallId} was already recorded by an earlier resume; this one was ignored.`,
    });
  }
  return { byKey, complete, warnings };
}

/**
 * Matches a resume's verdicts and client results to what the stored run
 * waits for. Nothing here writes: a resume that cannot answer every pending
 * call stays suspended as it was, and a malformed or self-contradicting list
 * of verdicts is refused before anything is written.
 *
 * A verdict counts only with the token the run issued for its approval, once:
 * a verdict for a call that was already answered decides nothing. The bare
 * tool-call-id form (no approvalId, no token) counts only when the resume
 * opts in with `allowBareApprovalIds`.
 */
import type { CallAnswer } from '../../machines/index.js';
import { CairnTypeError } from '../errors/index.js';
import { receiptKey } from './envelope.js';
import type {
  AgentRunEnvelope, AgentWarning, ApprovalResponse, ClientToolResult, Message, PendingApproval, RecordedVerdict,
} from './types.js';

export interface MatchedAnswers {
  /** Answers by effect identity (receiptKey). */
  byKey: Map<string, CallAnswer>;
  /** The verdicts this resume applies, by approvalId: recorded with the approval once the run saves. */
  verdicts: Map<string, RecordedVerdict>;
  complete: boolean;
  warnings: AgentWarning[];
}

/** A resume's refusal of what the caller passed: a TypeError (an `invalid_options` CairnTypeError) that writes nothing. */
export function refuseAnswer(message: string): never {
  throw new CairnTypeError('invalid_options', message);
}

const verdictOf = (r: ApprovalResponse): RecordedVerdict =>
  ({ approved: r.approved, ...(r.reason !== undefined ? { reason: r.reason } : {}) });
const sameVerdict = (a: RecordedVerdict, b: RecordedVerdict) => a.approved === b.approved && (a.reason ?? null) === (b.reason ?? null);
const describeVerdict = (v: RecordedVerdict) => (v.approved ? 'approve' : `deny${v.reason !== undefined ? ` (${JSON.stringify(v.reason)})` : ''}`);

/**
 * The shape of approvalResponses, and no two different verdicts for one
 * approvalId (in any order; the same verdict twice is fine). A TypeError otherwise.
 */
export function checkApprovalResponses(value: unknown): ApprovalResponse[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) refuseAnswer('approvalResponses must be an array of { approvalId, approved, token, reason? }.');
  for (const [i, r] of (value as unknown[]).entries()) {
    const entry = r as Partial<Record<keyof ApprovalResponse, unknown>> | null;
    const ok = entry !== null && typeof entry === 'object' && typeof entry.approvalId === 'string' && entry.approvalId !== '' &&
      typeof entry.approved === 'boolean' && (entry.token === undefined || typeof entry.token === 'string') &&
      (entry.reason === undefined || typeof entry.reason === 'string');
    if (!ok) refuseAnswer(`approvalResponses[${i}] must be { approvalId: string, approved: boolean, token: string, reason?: string }.`);
  }
  const responses = value as ApprovalResponse[];
  const first = new Map<string, RecordedVerdict>();
  for (const r of responses) {
    const seen = first.get(r.approvalId);
    if (!seen) first.set(r.approvalId, verdictOf(r));
    else if (!sameVerdict(seen, verdictOf(r))) {
      refuseAnswer(
        `approvalResponses: ${r.approvalId} has conflicting verdicts (${describeVerdict(seen)} and ${describeVerdict(verdictOf(r))}); ` +
        'send one verdict per approval. Nothing was written.',
      );
    }
  }
  return responses;
}

function occurrences(messages: Message[], toolCallId: string): number {
  let count = 0;
  for (const message of messages) {
    if (message.role === 'assistant') count += (message.toolCalls ?? []).filter((c) => c.toolCallId === toolCallId).length;
  }
  return count;
}

const MESSAGES = {
  wrongToken: (id: string) => `The verdict for ${id} carries a token that does not match the one issued for that approval; it decides nothing.`,
  noToken: (id: string) => `The verdict for ${id} has no token; pass the token of the pending approval. It decides nothing.`,
  bareNotAllowed: (id: string) =>
    `The verdict for ${id} names a tool call id, not an approvalId; a bare id counts only with allowBareApprovalIds: true. It decides nothing.`,
  bareAmbiguous: (id: string) =>
    `The verdict for ${id} names a tool call id this run used or gated more than once; answer with the approvalId of the pending approval. It decides nothing.`,
  alreadyUsed: (id: string) => `The verdict for ${id} was already used: the call it was issued for has been answered. This one decides nothing.`,
  unknown: (id: string) => `The verdict for ${id} matches no approval this run issued; it decides nothing.`,
};

export function matchAnswers(
  stored: AgentRunEnvelope,
  messages: Message[],
  approvalResponses: readonly ApprovalResponse[] = [],
  clientToolResults: readonly ClientToolResult[] = [],
  /** Verdicts another rule already took (a retried call's), not to be reported as deciding nothing. */
  takenElsewhere: ReadonlySet<string> = new Set(),
  allowBareApprovalIds = false,
): MatchedAnswers {
  const byKey = new Map<string, CallAnswer>();
  const verdicts = new Map<string, RecordedVerdict>();
  const warnings: AgentWarning[] = [];
  const used = new Set<ApprovalResponse>();
  let complete = true;
  const warn = (toolCallId: string, message: string) => warnings.push({ type: 'warning', setting: 'approvalResponses', toolCallId, message });

  const fromBareId = (pending: PendingApproval): ApprovalResponse | undefined => {
    const bare = approvalResponses.filter((r) => r.approvalId === pending.toolCallId);
    if (bare.length === 0) return undefined;
    for (const r of bare) used.add(r);
    if (!allowBareApprovalIds) return void warn(pending.toolCallId, MESSAGES.bareNotAllowed(pending.toolCallId));
    // Counts only when the id was used once in the history and gated once (the checkpoint keeps the count).
    if (stored.approvalRequestCounts[pending.toolCallId] !== 1 || occurrences(messages, pending.toolCallId) !== 1) {
      return void warn(pending.toolCallId, MESSAGES.bareAmbiguous(pending.toolCallId));
    }
    const response = bare[0]!;
    if (response.token !== undefined && response.token !== pending.token) return void warn(pending.toolCallId, MESSAGES.wrongToken(pending.toolCallId));
    return response;
  };

  for (const pending of stored.pendingApprovals) {
    let response: ApprovalResponse | undefined;
    // A sub-agent's child asked for this one: the verdict is the child's to apply (its call is driven again with it).
    if (pending.runId !== undefined && pending.runId !== stored.runId) {
      const exact = approvalResponses.filter((r) => r.approvalId === pending.approvalId);
      for (const r of exact) used.add(r);
      if (exact.length === 0) complete = false;
      else if (exact[0]!.token === undefined) { warn(pending.toolCallId, MESSAGES.noToken(pending.approvalId)); complete = false; }
      else if (exact[0]!.token !== pending.token) { warn(pending.toolCallId, MESSAGES.wrongToken(pending.approvalId)); complete = false; }
      continue;
    }
    // checkApprovalResponses made every verdict under one approvalId the same.
    const exact = approvalResponses.filter((r) => r.approvalId === pending.approvalId);
    if (exact.length > 0) {
      for (const r of exact) used.add(r);
      const r = exact[0]!;
      if (r.token === undefined) warn(pending.toolCallId, MESSAGES.noToken(pending.approvalId));
      else if (r.token !== pending.token) warn(pending.toolCallId, MESSAGES.wrongToken(pending.approvalId));
      else response = r;
    }
    const bare = fromBareId(pending);
    if (bare && response && !sameVerdict(verdictOf(bare), verdictOf(response))) {
      refuseAnswer(
        `approvalResponses: the call ${pending.toolCallId} has conflicting verdicts (${describeVerdict(verdictOf(response))} by ` +
        `${pending.approvalId} and ${describeVerdict(verdictOf(bare))} by its bare id); send one verdict per approval. Nothing was written.`,
      );
    }
    response ??= bare;
    if (!response) {
      complete = false;
      continue;
    }
    const verdict = verdictOf(response);
    verdicts.set(pending.approvalId, verdict);
    byKey.set(receiptKey(pending.modelStep, pending.toolCallId), { verdict });
  }
  const reported = new Set<string>();
  for (const response of approvalResponses) {
    if (used.has(response) || takenElsewhere.has(response.approvalId) || reported.has(response.approvalId)) continue;
    reported.add(response.approvalId);
    const id = response.approvalId;
    const record = stored.approvals?.[id];
    if (record) {
      // Issued by this run, and no longer pending: its call was answered.
      if (response.token === undefined) warn(record.toolCallId, MESSAGES.noToken(id));
      else if (response.token !== record.token) warn(record.toolCallId, MESSAGES.wrongToken(id));
      else warn(record.toolCallId, MESSAGES.alreadyUsed(id));
      continue;
    }
    const bareOf = Object.values(stored.approvals ?? {}).some((a) => a.toolCallId === id);
    if (bareOf) warn(id, allowBareApprovalIds ? MESSAGES.alreadyUsed(id) : MESSAGES.bareNotAllowed(id));
    else warn(id.split('@')[0]!, MESSAGES.unknown(id));
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
  // The client calls the run recorded, read only for a result no pending call took (the receipts of a long run are many).
  let recorded: Set<string> | undefined;
  for (const result of clientToolResults) {
    if (usedResults.has(result)) continue;
    recorded ??= new Set(Object.values(stored.receipts).filter((r) => r.client === true).map((r) => r.toolCallId));
    if (!recorded.has(result.toolCallId)) {
      // A result for a call the run never waited on cannot be taken: refuse before anything is written.
      refuseAnswer(
        `clientToolResults: ${result.toolCallId} is not a client call this run waits on; only the calls in pendingClientCalls are accepted.`,
      );
    }
    warnings.push({
      type: 'warning', setting: 'clientToolResults', toolCallId: result.toolCallId,
      message: `The result for ${result.toolCallId} was already recorded by an earlier resume; this one was ignored.`,
    });
  }
  return { byKey, verdicts, complete, warnings };
}

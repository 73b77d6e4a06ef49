/**
 * The answers of `cairn resume`: read and checked against each other before
 * the store is opened (a verdict and its opposite for one approval, a call
 * both retried and reconciled, are usage errors that write nothing), then
 * turned into the engine's answers against the stored run: each approval's
 * token comes from the run, and a retried call that ran under an approval
 * takes the verdict the run recorded for it.
 */
import type { ApprovalResponse, ClientToolResult, JsonValue, ReconciledToolResult } from '../agent/types.js';
import type { HeadlessReport, PendingAction } from '../headless/index.js';
import { checkId, flag, idEqualsJson, str, strs, UsageError, type Parsed } from './args.js';

export interface Answers {
  approve: string[];
  deny: string[];
  reason?: string;
  clientToolResults: ClientToolResult[];
  reconciledToolResults: ReconciledToolResult[];
  retryToolCallIds: string[];
  retryFailed: boolean;
}

const NOTHING_WRITTEN = 'Nothing was written.';

/** The ids given twice across `lists` (each list deduplicated first). */
function overlap(...lists: string[][]): string[] {
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const list of lists) for (const id of new Set(list)) (seen.has(id) ? twice : seen).add(id);
  return [...twice];
}

export function readAnswers(parsed: Parsed): Answers {
  const approve = [...new Set(strs(parsed, 'approve').map((id) => checkId('--approve', id)))];
  const deny = [...new Set(strs(parsed, 'deny').map((id) => checkId('--deny', id)))];
  const [both] = overlap(approve, deny);
  if (both !== undefined) {
    throw new UsageError(`--approve ${both} and --deny ${both}: an approval takes one verdict; pass one of them. ${NOTHING_WRITTEN}`);
  }
  const reason = str(parsed, 'reason');
  if (reason !== undefined && deny.length === 0) throw new UsageError('--reason goes with --deny <approvalId>.');

  const clients = strs(parsed, 'client-result').map((v) => idEqualsJson('client-result', v));
  const [clientTwice] = overlap(...clients.map((c) => [c.id]));
  if (clientTwice !== undefined) throw new UsageError(`--client-result ${clientTwice} is given twice: a call takes one result. ${NOTHING_WRITTEN}`);
  const clientToolResults: ClientToolResult[] = clients.map(({ id, json }) => ({ toolCallId: id, output: json as JsonValue }));

  const reconciled = [
    ...strs(parsed, 'reconcile').map((v) => ({ ...idEqualsJson('reconcile', v), isError: false })),
    ...strs(parsed, 'reconcile-error').map((v) => ({ ...idEqualsJson('reconcile-error', v), isError: true })),
  ];
  const [reconciledTwice] = overlap(...reconciled.map((r) => [r.id]));
  if (reconciledTwice !== undefined) {
    throw new UsageError(`--reconcile ${reconciledTwice} is given twice (with --reconcile or --reconcile-error): a call is recorded once. ${NOTHING_WRITTEN}`);
  }
  const retryToolCallIds = [...new Set(strs(parsed, 'retry').map((id) => checkId('--retry', id)))];
  const [retriedAndReconciled] = overlap(retryToolCallIds, reconciled.map((r) => r.id));
  if (retriedAndReconciled !== undefined) {
    throw new UsageError(`--retry ${retriedAndReconciled} and --reconcile ${retriedAndReconciled}: a call is either run again or recorded, not both. ${NOTHING_WRITTEN}`);
  }
  const reconciledToolResults: ReconciledToolResult[] = reconciled.map(({ id, json, isError }) => ({
    toolCallId: id, output: json as JsonValue, ...(isError ? { isError } : {}),
  }));
  return {
    approve, deny, ...(reason !== undefined ? { reason } : {}),
    clientToolResults, reconciledToolResults, retryToolCallIds, retryFailed: flag(parsed, 'retry-failed'),
  };
}

type UnknownEffectAction = Extract<PendingAction, { kind: 'unknown-effect' }>;

/**
 * The verdicts to send, read against the stored run. An approval the run does
 * not wait on goes without a token, and the engine ignores it with a warning.
 * A retried call that ran under an approval is sent with the verdict the run
 * recorded (the engine would apply it anyway; sending it keeps the CLI's retry
 * explicit). A retry that would be answered as denied because no verdict was
 * kept, or a verdict opposite to the recorded one, is a usage error.
 */
export function approvalResponses(answers: Answers, stored: HeadlessReport<unknown>, command: (args: string[]) => string): ApprovalResponse[] {
  const tokens = new Map<string, string>();
  for (const action of stored.pending) {
    if (action.kind === 'approval') tokens.set(action.approvalId, action.token);
    if (action.kind === 'unknown-effect' && action.approval) tokens.set(action.approval.approvalId, action.approval.token);
  }
  const verdict = (approvalId: string, approved: boolean): ApprovalResponse => ({
    approvalId,
    approved,
    ...(tokens.has(approvalId) ? { token: tokens.get(approvalId)! } : {}),
    ...(!approved && answers.reason !== undefined ? { reason: answers.reason } : {}),
  });
  const responses = [...answers.approve.map((id) => verdict(id, true)), ...answers.deny.map((id) => verdict(id, false))];

  for (const callId of answers.retryToolCallIds) {
    const effect = stored.pending.find((a): a is UnknownEffectAction => a.kind === 'unknown-effect' && a.toolCallId === callId);
    if (!effect?.approval) continue;
    const { approvalId, token, approved, reason } = effect.approval;
    const given = answers.approve.includes(approvalId) ? true : answers.deny.includes(approvalId) ? false : undefined;
    if (approved === undefined) {
      if (given !== undefined) continue; // the verdict given here goes, with its token
      throw new UsageError(
        `--retry ${callId}: ${effect.toolName} was held for approval ${approvalId}, and the run kept no verdict for it, so a retry alone would be answered as denied. `
        + `Pass the verdict with the retry: ${command(['--retry', callId, '--approve', approvalId])}; or record what the call did: ${command(['--reconcile', `${callId}=<json>`])}. ${NOTHING_WRITTEN}`,
      );
    }
    if (given !== undefined && given !== approved) {
      throw new UsageError(
        `--${given ? 'approve' : 'deny'} ${approvalId}: that approval was ${approved ? 'approved' : 'denied'} already, and an approval is answered once. `
        + `To keep ${effect.toolName} (call ${callId}) from running again, record what it did instead: ${command(['--reconcile', `${callId}=<json>`])}. ${NOTHING_WRITTEN}`,
      );
    }
    if (given === undefined) responses.push({ approvalId, token, approved, ...(reason !== undefined ? { reason } : {}) });
  }
  return responses;
}

/** The flags of `cairn resume` that answer the run, as parseArgs takes them. */
export const ANSWER_OPTIONS = {
  approve: { type: 'string', multiple: true },
  deny: { type: 'string', multiple: true },
  reason: { type: 'string' },
  'client-result': { type: 'string', multiple: true },
  retry: { type: 'string', multiple: true },
  reconcile: { type: 'string', multiple: true },
  'reconcile-error': { type: 'string', multiple: true },
  'retry-failed': { type: 'boolean' },
} as const;

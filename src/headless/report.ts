/**
 * The headless report: how a leg or a stored run ended, what it waits for,
 * what it cost, and the exit code a shell branches on.
 */
import { CairnTypeError } from '../errors/index.js';
import type {
  AgentResult, AgentRunEnvelope, AgentWarning, PendingApproval, PendingClientCall, UnknownEffect,
} from '../agent/types.js';
import type {
  DoctorReport, HeadlessOutcome, HeadlessPhase, HeadlessReport, HeadlessRetry, HeadlessWarning, PendingAction,
} from './types.js';

/**
 * The exit code of each outcome. A run that did not complete never exits 0.
 *
 * | code | key | meaning |
 * | --- | --- | --- |
 * | 0 | completed | the run completed |
 * | 1 | failed | the run failed, or the leg was refused before anything was written |
 * | 2 | usage | the command line was wrong (the CLI only) |
 * | 3 | pending | the run waits: approvals, client results, unknown effects, or a plain resume after a drain |
 * | 4 | stopped | the run ended without an answer (refusal, output or verification attempts exhausted, length) |
 * | 5 | cancelled | the run's abort signal stopped it |
 * | 6 | limit | a limit ended it: max steps, the budget, the deadline, a transport timeout |
 * | 7 | busy | another executor holds the run (its lease, or a run already executing here) |
 * | 8 | doctorError | the doctor found an error |
 */
export const HEADLESS_EXIT_CODES = Object.freeze({
  completed: 0,
  failed: 1,
  usage: 2,
  pending: 3,
  stopped: 4,
  cancelled: 5,
  limit: 6,
  busy: 7,
  doctorError: 8,
} as const);

/** The exit code for a run report or a doctor report. */
export function exitCodeFor(report: HeadlessReport<unknown> | DoctorReport): number {
  if (report === null || typeof report !== 'object') throw new CairnTypeError('invalid_options', 'exitCodeFor takes a headless report or a doctor report.');
  if (report.kind === 'doctor') return report.findings.some((f) => f.severity === 'error') ? HEADLESS_EXIT_CODES.doctorError : 0;
  const code = Object.hasOwn(OUTCOME_CODES, report.outcome) ? OUTCOME_CODES[report.outcome] : undefined;
  if (code === undefined) throw new CairnTypeError('invalid_options', `exitCodeFor: unknown outcome ${JSON.stringify(report.outcome)}.`);
  return code;
}

const OUTCOME_CODES: Record<HeadlessOutcome, number> = {
  completed: HEADLESS_EXIT_CODES.completed,
  failed: HEADLESS_EXIT_CODES.failed,
  pending: HEADLESS_EXIT_CODES.pending,
  stopped: HEADLESS_EXIT_CODES.stopped,
  cancelled: HEADLESS_EXIT_CODES.cancelled,
  limit: HEADLESS_EXIT_CODES.limit,
  busy: HEADLESS_EXIT_CODES.busy,
};

const LIMIT_CODES = new Set(['budget_exceeded', 'deadline_exceeded']);
const BUSY_CODES = new Set(['lease_held', 'run_busy']);

function outcomeOf(result: AgentResult<unknown>): HeadlessOutcome {
  switch (result.status) {
    case 'completed':
      return 'completed';
    case 'suspended':
      return 'pending';
    case 'stopped':
      if (result.reason === 'drained' || result.reason === 'tool-reconciliation-required') return 'pending';
      if (result.reason === 'aborted') return 'cancelled';
      if (result.reason === 'max-steps' || result.reason === 'budget-exceeded') return 'limit';
      return 'stopped';
    case 'failed':
      if (BUSY_CODES.has(result.error.code)) return 'busy';
      if (LIMIT_CODES.has(result.error.code) || result.retry?.cause === 'timeout') return 'limit';
      return 'failed';
  }
}

export function phaseOf(phase: 'loop' | 'finalize' | null | undefined): HeadlessPhase {
  return phase === 'finalize' ? 'finalizing' : 'running';
}

function retryOf(retry: { cause: string; phase: 'loop' | 'finalize' }): HeadlessRetry {
  const cause: HeadlessRetry['cause'] = retry.cause === 'stream-broke'
    ? 'model-stream'
    : retry.cause === 'serialization-conflict' ? 'budget-admission' : 'model-call';
  return { cause, phase: phaseOf(retry.phase), resumeWith: 'retryFailed' };
}

export const approvalAction = (p: PendingApproval): PendingAction => ({
  kind: 'approval', resumeWith: 'approvalResponses',
  approvalId: p.approvalId, token: p.token, toolCallId: p.toolCallId, toolName: p.toolName, args: p.args, modelStep: p.modelStep,
});

export const clientAction = (c: PendingClientCall): PendingAction => ({
  kind: 'client-call', resumeWith: 'clientToolResults',
  toolCallId: c.toolCallId, toolName: c.toolName, args: c.args, modelStep: c.modelStep,
});

export const unknownEffectAction = (r: UnknownEffect): PendingAction => ({
  kind: 'unknown-effect', resumeWith: ['retryToolCallIds', 'reconciledToolResults'],
  toolCallId: r.toolCallId, toolName: r.toolName, modelStep: r.modelStep,
  // Which unknown calls ran under an approval, and the verdict a retry passes its gate with.
  ...(r.approval ? { approval: structuredClone(r.approval) } : {}),
});

/** An engine warning as a report warning. */
function fromAgentWarning(w: AgentWarning): HeadlessWarning {
  const code = w.setting === 'approvalResponses' || w.setting === 'clientToolResults' ? 'answer-ignored' : w.setting;
  return { code, message: w.message, ...(w.toolCallId !== undefined ? { toolCallId: w.toolCallId } : {}) };
}

export interface ReportExtras {
  cost: { usd: number; complete: boolean };
  warnings: HeadlessWarning[];
  /** What a drained run still waits for, read from the stored run. */
  drainedPending?: PendingAction[];
  status?: HeadlessReport['status'];
}

/** The report of a leg's result. */
export function reportOf<T>(result: AgentResult<T>, extras: ReportExtras): HeadlessReport<T> {
  const pending: PendingAction[] = [];
  let status: HeadlessReport['status'] = result.status;
  if (result.status === 'suspended') {
    pending.push(...result.pendingApprovals.map(approvalAction));
    const gated = new Set(result.pendingApprovals.map((p) => `${p.modelStep}:${p.toolCallId}`));
    // A gated client tool is listed once, as its approval; its result comes in the same resume.
    pending.push(...result.pendingClientCalls.filter((c) => !gated.has(`${c.modelStep}:${c.toolCallId}`)).map(clientAction));
  }
  if (result.status === 'stopped' && result.reason === 'tool-reconciliation-required') {
    pending.push(...(result.unknownEffects ?? []).map(unknownEffectAction));
  }
  if (result.status === 'stopped' && result.reason === 'drained') {
    status = 'drained';
    pending.push(...(extras.drainedPending ?? []));
  }
  const warnings = [...result.warnings.map(fromAgentWarning), ...extras.warnings];
  const report: HeadlessReport<T> = {
    kind: 'run',
    outcome: outcomeOf(result),
    status: extras.status ?? status,
    runId: result.runId,
    text: result.text,
    usage: { ...result.usage },
    steps: result.steps,
    cost: extras.cost,
    warnings: dedupeWarnings(warnings),
    pending,
    messages: result.messages,
  };
  if (result.status === 'completed') report.output = result.output;
  if (result.status === 'stopped') {
    report.reason = result.reason;
    if (result.stopDetails !== undefined) report.stopDetails = result.stopDetails;
    // The budget's refusal is told as before the budget ran on the ledger: error budget_exceeded, outcome limit.
    if (result.reason === 'budget-exceeded') report.error = budgetExceeded(result.stopDetails);
  }
  if (result.status === 'failed') {
    report.error = result.error;
    if (result.retry) report.retry = retryOf(result.retry);
  }
  return report;
}

function dedupeWarnings(warnings: HeadlessWarning[]): HeadlessWarning[] {
  const seen = new Set<string>();
  return warnings.filter((w) => {
    const key = `${w.code}\u0000${w.toolCallId ?? ''}\u0000${w.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The phase a stored, unfinished run would go on in. */
export function storedPhase(envelope: AgentRunEnvelope): HeadlessPhase {
  if (envelope.retry) return phaseOf(envelope.retry.phase);
  const snapshot = envelope.snapshot as { value?: unknown; context?: { drainedIn?: 'loop' | 'finalize' | null } } | null;
  const value = snapshot?.value;
  if (value === 'drained' || value === 'draining') return phaseOf(snapshot?.context?.drainedIn);
  if (value !== null && typeof value === 'object' && ('finalizing' in value || 'verifying' in value)) return 'finalizing';
  return 'running';
}

/** The error a report carries for a run the budget stopped, with what was spent, held and asked in its message. */
function budgetExceeded(details: unknown): NonNullable<HeadlessReport['error']> {
  const d = details as { scope?: string; ceiling?: { usd?: number; tokens?: number }; spent?: { usd: number; tokens: number } } | undefined;
  const spent = d?.spent ? `; spent $${d.spent.usd} and ${d.spent.tokens} tokens` : '';
  const ceiling = d?.ceiling ? ` of ${[d.ceiling.usd !== undefined ? `$${d.ceiling.usd}` : '', d.ceiling.tokens !== undefined ? `${d.ceiling.tokens} tokens` : ''].filter(Boolean).join(' and ')}` : '';
  return { name: 'BudgetError', code: 'budget_exceeded', message: `The budget${ceiling} refused the next model call${spent}.` };
}

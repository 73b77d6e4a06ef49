/**
 * What a replay reads out of a stored run before it drives the machines: the
 * run's own turns and the model step of each, the receipts and approvals by
 * call, the tool answers in the transcript, what refused a call before any
 * effect, and the fail-over record as it stood at each step.
 */
import { RUN_PROMPTS } from '../../machines/index.js';
import type { CallApproval, CallReceipt, RunContext, ToolCallContext, Turn } from '../../machines/index.js';
import type { AgentRunEnvelope } from '../agent/types.js';
import type { Persisted } from './replay-compare.js';

export type Message = { role: string; content?: unknown; toolCalls?: Turn['toolCalls']; toolCallId?: string; isError?: boolean; reasoning?: unknown; providerMetadata?: unknown };

/** What a prompt of the run's own (`RUN_PROMPTS.feedback`, `RUN_PROMPTS.repair`) carries in `content`, or undefined when `content` is not that prompt. */
function carried(prompt: (text: string) => string, content: unknown): string | undefined {
  if (typeof content !== 'string') return undefined;
  const [before, after] = prompt('\u0000').split('\u0000') as [string, string];
  if (content.length < before.length + after.length || !content.startsWith(before) || !content.endsWith(after)) return undefined;
  return content.slice(before.length, content.length - after.length);
}
export const feedbackOf = (m: Message | undefined) => (m?.role === 'user' ? carried(RUN_PROMPTS.feedback, m.content) : undefined);
export const repairOf = (m: Message | undefined) => (m?.role === 'user' ? carried(RUN_PROMPTS.repair, m.content) : undefined);

/**
 * The answers the tool-call chart writes itself for a call it ends without an effect (machines/tool-call.ts): a
 * refusal in a call's answer that is none of these came from the argument check (or from a callback that threw).
 */
export const BLOCKED = 'Tool call blocked: ';
export const CHART_ANSWERS = [BLOCKED, 'Tool call denied. Reason: ', 'Tool call not admitted.', 'Tool call not dispatched: ', 'Tool "'];
/** The tool-call stages before the effect whose actor runs a callback that may throw (the call then fails). */
export const THROWING_STAGES = ['guardCall', 'checkArguments', 'decideApproval', 'admit', 'beginEffect'];
/** Marks a tool-call actor's answer as the error it threw. */
export const THREW = Symbol('threw');

/** The history of a checked record, as the replay's answerers read it. */
export function readHistory(record: AgentRunEnvelope) {
  const stored = record.snapshot as unknown as Persisted;
  const storedContext = stored.context as unknown as RunContext;
  const history = storedContext.messages as unknown as Message[];
  // The run's input ends with its prompt: the last user message the run did not write itself (it writes only the
  // finalization, repair and feedback prompts). Its own turns are the assistant messages after it.
  const machineMade = (m: Message) => m.role === 'user'
    && (m.content === RUN_PROMPTS.finalize || m.content === RUN_PROMPTS.finalizeWithTool || repairOf(m) !== undefined || feedbackOf(m) !== undefined);
  let prompt = -1;
  history.forEach((m, i) => {
    if (m.role === 'user' && !machineMade(m)) prompt = i;
  });
  const firstAssistant = prompt + 1;
  const turns = history.slice(firstAssistant).filter((m) => m.role === 'assistant');
  const receipts = new Map(Object.values(record.receipts).map((r) => [`${r.modelStep}:${r.toolCallId}`, r as unknown as CallReceipt]));
  // The model step of each own turn. A model call that failed for a transient cause and was retried
  // (retryFailed) stays counted, so steps can skip: a turn's calls name its step in their receipts and
  // approvals, and the last turn is the run's lastTurn; any other turn follows the one before it.
  const callSteps = [
    ...Object.values(record.receipts).map((r) => [r.toolCallId, r.modelStep] as const),
    ...Object.values(record.approvals).map((a) => [a.toolCallId, a.modelStep] as const),
    ...record.pendingClientCalls.map((c) => [c.toolCallId, c.modelStep] as const),
  ];
  const turnSteps: number[] = [];
  turns.forEach((message, i) => {
    const after = i === 0 ? 0 : turnSteps[i - 1]! + 1;
    const ids = new Set((message.toolCalls ?? []).map((c) => c.toolCallId));
    const named = callSteps.filter(([id, step]) => ids.has(id) && step >= after).map(([, step]) => step);
    const last = i === turns.length - 1 ? storedContext.lastTurn?.step : undefined;
    turnSteps.push(named.length > 0 ? Math.min(...named) : typeof last === 'number' && last >= after ? last : after);
  });
  const approvals = Object.entries(record.approvals).map(([approvalId, a]) => ({ approvalId, ...a }));
  // A client tool has no execute: the plan says so, or (in a record without one) the run waited on its result.
  const isClient = (c: ToolCallContext) => (c.plan ? c.plan.executes === false
    : record.pendingClientCalls.some((p) => p.toolCallId === c.toolCallId && p.modelStep === c.modelStep)
      || receipts.get(`${c.modelStep}:${c.toolCallId}`)?.client === true);
  const approvalOf = (c: ToolCallContext): CallApproval | undefined => {
    const found = approvals.find((a) => a.toolCallId === c.toolCallId && a.modelStep === c.modelStep);
    return found ? { ...found, client: isClient(c) } : undefined;
  };
  const toolMessage = (toolCallId: string, step: number) => {
    // The tool messages of a step follow the own assistant message of that step.
    const index = turnSteps.indexOf(step);
    let seen = -1;
    for (const m of history.slice(firstAssistant)) {
      if (m.role === 'assistant') seen += 1;
      else if (m.role === 'tool' && seen === index && m.toolCallId === toolCallId) return m;
    }
    return undefined;
  };

  // What refused a call before any effect. A call still in the stored snapshot (its step not yet folded into the
  // history) keeps its own state: its outcome, and its arguments as a guardrail left them. A folded call keeps its
  // answer in the transcript: a guardrail's block reads `Tool call blocked: <reason>`, and any other refusal with no
  // receipt, no approval and none of the chart's own answers was the argument check's (or a callback that threw: the
  // call's answer and everything after it are the same either way, and a folded call's record does not say which).
  const storedCalls = Object.values(stored.children ?? {})
    .filter((child) => child.src === 'toolCall' && child.snapshot)
    .map((child) => child.snapshot!.context as unknown as ToolCallContext);
  const storedCall = (c: ToolCallContext) => storedCalls.find((s) => s.toolCallId === c.toolCallId && s.modelStep === c.modelStep);
  const chartAnswer = (c: ToolCallContext, text: string) => CHART_ANSWERS.some((prefix) => text.startsWith(prefix))
    && (!text.startsWith('Tool "') || text === `Tool "${c.toolName}" is not available.`);
  function refusalOf(c: ToolCallContext): { by: 'guardrail' | 'arguments'; text: string } | undefined {
    const own = storedCall(c);
    if (own) {
      const text = typeof own.modelOutput === 'string' ? own.modelOutput : '';
      if (own.outcome === 'blocked' && text.startsWith(BLOCKED)) return { by: 'guardrail', text: text.slice(BLOCKED.length) };
      if (own.outcome === 'invalid-arguments') return { by: 'arguments', text };
      return undefined;
    }
    if (receipts.has(`${c.modelStep}:${c.toolCallId}`) || approvalOf(c)) return undefined;
    const message = toolMessage(c.toolCallId, c.modelStep);
    if (!message || message.isError !== true || typeof message.content !== 'string') return undefined;
    if (message.content.startsWith(BLOCKED)) return { by: 'guardrail', text: message.content.slice(BLOCKED.length) };
    return chartAnswer(c, message.content) ? undefined : { by: 'arguments', text: message.content };
  }

  /**
   * The fail-over record as it stood after the model call of `step` (-1: before any): the failovers made by then,
   * and the model they left selected.
   */
  function modelsAt(step: number): unknown {
    const models = storedContext.models as { selected?: unknown; failovers?: { modelStep: number; failed: unknown; next: unknown }[] } | null | undefined;
    if (!models) return null;
    const all = models.failovers ?? [];
    const made = all.filter((f) => f.modelStep <= step);
    const selected = made.length > 0 ? made[made.length - 1]!.next : all.length > 0 ? all[0]!.failed : models.selected;
    return { ...models, selected, failovers: made };
  }

  return {
    stored, storedContext, history, firstAssistant, turns, turnSteps, receipts, approvals, isClient, approvalOf, toolMessage, refusalOf, storedCall, modelsAt,
  };
}

/**
 * The verifier's history. A rejection that let the run go on left its feedback prompt in the transcript; an ended
 * run's result holds the transcript as well (the copy verdicts are read from, so that the snapshot's is checked)
 * and how the run ended: verified (completed), inconclusive, rejected with no attempt left. The attempt count holds
 * the rest: a run restored while verifying (a crash, a failed save, a retryFailed after a rejection) ran its
 * verifier again as a new attempt, and only the count says so.
 */
export function readVerdicts(record: AgentRunEnvelope, stored: Persisted, storedContext: RunContext, history: Message[], firstAssistant: number) {
  const ended = stored.value === 'completed' || stored.value === 'stopped' || stored.value === 'failed';
  const result = ended ? record.result : undefined;
  const resultMessages = Array.isArray(result?.messages) ? (result.messages as unknown as Message[]) : undefined;
  const stop = ended
    ? {
      reason: result?.status === 'stopped' ? result.reason : storedContext.stopReason,
      details: ((result?.status === 'stopped' ? result.stopDetails : storedContext.stopDetails) ?? null) as { reason?: unknown; feedback?: unknown; issue?: unknown } | null,
    }
    : null;
  const feedbacks = history.slice(firstAssistant).filter((m) => feedbackOf(m) !== undefined).length;
  // A candidate kept after the last rejection: the run went into verifying again, and is there still or ended there.
  const verifiesLast = storedContext.verify === true && storedContext.candidate != null;
  // Stopped where a restore found no attempt left: that last attempt was a restore's, not a verdict's.
  const restoredOut = stop?.reason === 'verification-attempts-exhausted' && typeof stop.details?.feedback !== 'string';
  // Verifier runs the verdicts in the record do not account for: restores. The replay places them as late as the
  // record allows (in the last episode of verifying; a restore for a retried model call where that call failed),
  // which never leaves an earlier rejection without the attempt it had.
  const unaccounted = storedContext.verify === true
    ? storedContext.verifyAttempts - feedbacks - (verifiesLast && !restoredOut ? 1 : 0)
    : 0;
  return { ended, result, resultMessages, stop, feedbacks, verifiesLast, restoredOut, unaccounted };
}

/**
 * `replayRun`: drives a stored run's history through the pure machines, with
 * no tool, no model and no store, and says whether it reaches the stored
 * snapshot, or where it first goes elsewhere.
 *
 * The history is what the record keeps: the transcript (each assistant
 * message is a model turn, answered again as the model's answer), the
 * receipts (each call's effect, answered again as the tool's), the approval
 * requests with their verdicts, the client results, what a guardrail or the
 * argument check refused (the call's answer in the transcript, or the open
 * call's own state), and the verifier's verdicts (each rejection's feedback
 * prompt in the transcript, the last verdict in the result, a restore while
 * verifying in the attempt count). Every invoked actor of both charts is
 * replaced by one that never answers; the replay sends each one the answer
 * the history holds, one at a time, as the runtime's actors would have, and
 * compares the run after every step with the record. Saves always succeed.
 * Usage is not compared: a record keeps the run's total, not each turn's.
 */
import { assign, createActor, fromPromise, type AnyActorRef, type AnyStateMachine, type EventObject } from 'xstate';
import { runMachine, toolCallMachine } from '../../machines/index.js';
import type { CallApproval, RunContext, ToolCallContext, Turn } from '../../machines/index.js';
import { checkEnvelope } from '../agent/envelope.js';
import { parseJsonAnswer } from '../agent/schema.js';
import type { AgentRunEnvelope } from '../agent/types.js';
import { InvalidOptionsError } from '../errors/index.js';
import { canon, comparable, firstDifference, type Persisted } from './replay-compare.js';
import { feedbackOf, readHistory, readVerdicts, repairOf, THREW, THROWING_STAGES, type Message } from './replay-history.js';

/** Where a replay first went elsewhere than the record. */
export interface ReplayDivergence {
  /** The model step the replay was at. */
  step: number;
  /** What differs, for people. */
  message: string;
  /** The first field that differs, as a path (`messages[3]`, `value`, `children.call-0-0.value`). */
  path: string | null;
  expected: unknown;
  found: unknown;
}

export interface ReplayReport {
  runId: string;
  /** The machine version the record was written by; a record of an older one is replayed after its migration. */
  storedVersion: number;
  /** Whether the replay reached the stored snapshot. */
  reached: boolean;
  /** Model turns the replay answered. */
  turns: number;
  /** Answers sent to the machines (done events, resumes). */
  events: number;
  divergence: ReplayDivergence | null;
  /**
   * What the replay took from the record with nothing else in the record to check it against, one sentence each:
   * restores while verifying, read from an attempt count higher than the verdicts account for (a record keeps the
   * count, not when a restore came), a guardrail's rewrite read from an open call's arguments, and a verifier's
   * feedback read from the transcript of a run that has not ended (its only copy; an ended run's result holds
   * another). Absent when there is none.
   */
  assumed?: string[];
}

export interface ReplayOptions {
  /**
   * The machines to replay with (the ones this Cairn runs, by default). A test
   * passes a changed copy to see that replay notices.
   */
  machines?: { run?: AnyStateMachine; toolCall?: AnyStateMachine };
  /** Most answers sent before the replay gives up. @default 10000 */
  maxEvents?: number;
}

const never = () => fromPromise(() => new Promise<never>(() => undefined));
const CALL_ACTORS = [
  'guardCall', 'checkArguments', 'decideApproval', 'issueApproval', 'admit', 'beginEffect', 'writeReceipt', 'executeTool',
  'recordResult', 'projectResult', 'checkpoint',
];
const RUN_ACTORS = ['saveCheckpoint', 'callModel', 'checkBatchPolicy', 'validateOutput', 'beginVerify', 'runVerifier'];

function inert(machine: AnyStateMachine, names: readonly string[], extra: Record<string, unknown> = {}, actions: Record<string, unknown> = {}): AnyStateMachine {
  return machine.provide({ actors: { ...Object.fromEntries(names.map((n) => [n, never()])), ...extra } as never, actions: actions as never });
}

/**
 * Replays one stored run. The envelope is checked (and migrated) like a record
 * a resume loads; a record of a machine newer than this reader is refused with
 * CheckpointVersionError.
 *
 * @example
 * const report = replayRun(await store.load('run-1'));
 * if (!report.reached) console.log(report.divergence);
 */
export function replayRun(envelope: AgentRunEnvelope, options: ReplayOptions = {}): ReplayReport {
  if (envelope === null || typeof envelope !== 'object') throw new InvalidOptionsError('replayRun: pass a stored run (an envelope).', 'invalid_envelope');
  const storedVersion = typeof envelope.machine?.version === 'number' ? envelope.machine.version : 0;
  const record = checkEnvelope(envelope, envelope.runId, envelope.scope);
  const {
    stored, storedContext, history, firstAssistant, turns, turnSteps, receipts, isClient, approvalOf, toolMessage, refusalOf, storedCall, modelsAt,
  } = readHistory(record);
  const { ended, result, resultMessages, stop, feedbacks, verifiesLast, restoredOut, unaccounted } = readVerdicts(record, stored, storedContext, history, firstAssistant);
  let restores = unaccounted;
  const restoredAt: number[] = [];
  const feedbackOnlyIn: number[] = [];
  const rewritten: string[] = [];
  const ownFeedbacks = (messages: readonly unknown[]) => (messages as Message[]).slice(firstAssistant).filter((m) => feedbackOf(m) !== undefined).length;
  /** Why the replay could not answer what the run waited on, when an answerer knows. */
  let missing: string | undefined;

  // The actions the runtime provides: the inline argument check (what refused the call, above; otherwise the
  // arguments passed), the permit (process-local, nothing to replay), and a plain tool's result as the model saw it
  // (the transcript has it).
  const callMachine = inert(options.machines?.toolCall ?? toolCallMachine, CALL_ACTORS, {}, {
    checkArgumentsInline: assign(({ context }: { context: ToolCallContext }) => {
      const refusal = refusalOf(context);
      return { argumentsChecked: refusal?.by === 'arguments' ? { valid: false as const, message: refusal.text } : { valid: true as const } };
    }),
    intendEffect: assign({}),
    permitEffect: assign({}),
    projectAsIs: assign(({ context }: { context: ToolCallContext }) => {
      const receipt = receipts.get(`${context.modelStep}:${context.toolCallId}`);
      const message = toolMessage(context.toolCallId, context.modelStep);
      // What the model saw is the receipt's (the transcript is what is being checked); a call without one, the transcript's.
      const seen = receipt ? receipt.modelOutput ?? receipt.rawResult ?? null : message?.content ?? null;
      return {
        outcome: 'completed' as const,
        modelOutput: seen as ToolCallContext['modelOutput'],
        isError: false,
        receipt: receipt ?? context.receipt,
      };
    }),
  });
  const machine = inert(options.machines?.run ?? runMachine, RUN_ACTORS, { toolCall: callMachine });
  const input = {
    runId: storedContext.runId, messages: history.slice(0, firstAssistant),
    maxSteps: storedContext.maxSteps, maxOutputAttempts: storedContext.maxOutputAttempts, maxVerifyAttempts: storedContext.maxVerifyAttempts,
    toolNames: storedContext.toolNames, outputMode: storedContext.outputMode, verify: storedContext.verify, deadlineAt: storedContext.deadlineAt,
    models: modelsAt(-1), plan: storedContext.plan,
  };
  const actor = createActor(machine, { input });
  actor.start();
  let events = 0;
  let turn = 0;
  const max = options.maxEvents ?? 10_000;
  const report = (reached: boolean, divergence: ReplayDivergence | null): ReplayReport => {
    actor.stop();
    const notes: string[] = [];
    if (restoredAt.length > 0) {
      notes.push(`verifyAttempts is ${storedContext.verifyAttempts}, ${unaccounted} more than the verdicts in the record account for: `
        + `the replay took ${restoredAt.length === 1 ? 'one as a restore' : `${restoredAt.length} as restores`} while verifying, at attempt ${restoredAt.join(', ')} `
        + '(a record keeps the count, not when a restore came).');
    }
    if (rewritten.length > 0) {
      notes.push(`The arguments of call ${rewritten.join(', ')} in the snapshot differ from the ones the model gave: the replay took them as a guardrail's rewrite.`);
    }
    if (feedbackOnlyIn.length > 0) {
      notes.push(`The verifier's feedback at message ${feedbackOnlyIn.join(', ')} is read from the transcript, its only copy in a record of a run that has not ended.`);
    }
    return { runId: record.runId, storedVersion, reached, turns: turn, events, divergence, ...(notes.length > 0 ? { assumed: notes } : {}) };
  };
  const step = () => (actor.getSnapshot().context as RunContext).step;
  const diverged = (message: string, d: { path: string; expected: unknown; found: unknown } | null = null) =>
    report(false, { step: step(), message, path: d?.path ?? null, expected: d?.expected, found: d?.found });

  const target = comparable(stored);
  for (;;) {
    const now = actor.getPersistedSnapshot() as unknown as Persisted;
    if (canon(comparable(now, stored)) === canon(target)) return report(true, null);
    // The transcript grows only by appends: a message that is not the record's is where the replay went elsewhere.
    const messages = (now.context.messages ?? []) as unknown[];
    for (let i = 0; i < messages.length; i++) {
      if (i >= history.length || canon(messages[i]) !== canon(history[i])) {
        return diverged(`The replay's transcript differs from the record at message ${i}.`, firstDifference(history[i], messages[i], `messages[${i}]`));
      }
    }
    if (events >= max) return diverged(`Gave up after ${max} answers without reaching the stored snapshot.`);
    const snapshot = actor.getSnapshot();
    if (snapshot.status !== 'active') {
      return diverged('The replay ended in another state than the record.', firstDifference(target, comparable(now, stored), ''));
    }
    missing = undefined;
    const sent = answerNext();
    if (!sent) return diverged(missing ?? 'The history holds no answer for what the run waits on here.', firstDifference(target, comparable(now, stored), ''));
    events += 1;
  }

  /** Sends the next answer the history holds; false when it holds none. */
  function answerNext(): boolean {
    const snapshot = actor.getSnapshot();
    const context = snapshot.context as RunContext;
    const children = snapshot.children as Record<string, AnyActorRef | undefined>;
    // The run's own invocation first (one at a time), then the calls in the turn's order.
    for (const [id, ref] of Object.entries(children)) {
      if (!ref || context.batch.includes(id)) continue;
      const answer = runAnswer(String((ref as unknown as { src?: unknown }).src ?? ''), snapshot.matches('finalizing' as never), context);
      if (answer === undefined) continue;
      if ('none' in answer) {
        missing = answer.none;
        continue;
      }
      if ('instead' in answer) {
        for (const event of answer.instead) actor.send(event as never);
        return true;
      }
      if ('error' in answer) {
        actor.send({ type: `xstate.error.actor.${id}`, error: answer.error } as never);
        return true;
      }
      for (const event of answer.before ?? []) actor.send(event as never);
      actor.send({ type: `xstate.done.actor.${id}`, output: answer.output } as never);
      return true;
    }
    for (const id of context.batch) {
      const call = children[id];
      if (!call) continue;
      const callSnapshot = call.getSnapshot() as { status: string; context: ToolCallContext; children: Record<string, AnyActorRef | undefined> };
      if (callSnapshot.status !== 'active') continue;
      for (const [invokeId, ref] of Object.entries(callSnapshot.children)) {
        if (!ref) continue;
        const output = callAnswer(invokeId, callSnapshot.context);
        if (output === undefined) continue;
        const threw = (output as { [THREW]?: unknown })[THREW];
        call.send((threw !== undefined ? { type: `xstate.error.actor.${invokeId}`, error: threw } : { type: `xstate.done.actor.${invokeId}`, output }) as never);
        return true;
      }
    }
    // At rest on a suspension: the resume brought the verdicts and client results the record holds.
    if (snapshot.matches('suspended' as never)) {
      const answers: Record<string, { verdict?: unknown; clientResult?: unknown }> = {};
      for (const id of context.batch) {
        const call = children[id];
        if (!call) continue;
        const c = (call.getSnapshot() as { context: ToolCallContext }).context;
        const verdict = approvalOf(c)?.verdict;
        const client = clientResultOf(c);
        if (verdict || client) answers[id] = { ...(verdict ? { verdict } : {}), ...(client ? { clientResult: client } : {}) };
      }
      if (Object.keys(answers).length === 0) return false;
      actor.send({ type: 'RESUME', answers } as never);
      return true;
    }
    if (snapshot.matches('drained' as never) && turn < turns.length) {
      actor.send({ type: 'RESUME', answers: {} } as never);
      return true;
    }
    return false;
  }

  /**
   * The answer the history holds for the run's own invocation `src`: its output (after the events `before` it),
   * events to send instead (a restore), an error it threw, or why the record holds none.
   */
  function runAnswer(src: string, finalizing: boolean, context: RunContext):
    { output: unknown; before?: EventObject[] } | { instead: EventObject[] } | { error: unknown } | { none: string } | undefined {
    switch (src) {
      case 'saveCheckpoint':
        // A drain is asked for while a step is under way; the run stops at the next boundary, once this save is made.
        if (record.status === 'drained' && turn >= turns.length && !context.drainRequested) return { output: undefined, before: [{ type: 'DRAIN' }] };
        return { output: undefined };
      case 'callModel': {
        const message = turns[turn];
        if (!message) return undefined;
        const phase = finalizing ? 'finalize' : 'loop';
        // Calls that failed before this turn and were retried: each kept its step.
        const failed = Math.max(0, turnSteps[turn]! - context.step);
        turn += 1;
        const toolCalls = (message.toolCalls ?? []).map((c) => ({ ...c }));
        const answered: Turn = {
          step: context.step + failed, phase, text: typeof message.content === 'string' ? message.content : '', toolCalls,
          finishReason: toolCalls.length > 0 ? 'tool-calls' : 'stop', usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
          ...(message.reasoning ? { reasoning: message.reasoning as Turn['reasoning'] } : {}),
          ...(message.providerMetadata ? { providerMetadata: message.providerMetadata as Turn['providerMetadata'] } : {}),
        };
        const models = modelsAt(answered.step);
        return { output: { kind: 'turn', turn: answered, ...(canon(models) !== canon(context.models ?? null) ? { models } : {}) }, before: Array.from({ length: failed }, () => ({ type: 'RETRY_FAILED', phase })) };
      }
      case 'checkBatchPolicy':
        return { output: { kind: 'ok' } };
      case 'validateOutput': {
        const at = context.messages.length;
        // A repair prompt after the answer: it did not match the schema, and the prompt carries the issue.
        const issue = repairOf(said(at));
        if (issue !== undefined) return { output: { kind: 'invalid', issue } };
        if (at >= history.length && stop?.reason === 'output-attempts-exhausted') {
          return { output: { kind: 'invalid', issue: typeof stop.details?.issue === 'string' ? stop.details.issue : '' } };
        }
        if (at < history.length) {
          // A valid answer the verifier then rejected: the run drops it with the rejection (no record keeps it, and no
          // state the replay compares holds it), so it is read from the turn as the output check reads it.
          if (feedbackOf(said(at)) === undefined) {
            return { none: `The record goes on after the final answer at message ${at - 1} with message ${at}, which is neither a repair prompt nor the verifier's feedback.` };
          }
          return { output: { kind: 'valid', output: answerIn(context.lastTurn!) } };
        }
        // The run's output: the result's, or (a run still verifying it, or stopped there) the candidate's.
        const output = result?.status === 'completed' ? result.output : storedContext.candidate?.output;
        return output === undefined
          ? { none: `The record holds no output for the final answer at message ${at - 1}: it has no result and no candidate.` }
          : { output: { kind: 'valid', output } };
      }
      case 'beginVerify': {
        // The save of the attempt count. Where the record's count says the verifier ran again, the run was restored
        // here (after this save, as a restore finds it) and the host said so: RESTORED starts the next attempt.
        if (restores > 0) {
          const episode = ownFeedbacks(context.messages);
          const last = verifiesLast ? feedbacks : feedbacks - 1;
          // Model calls that failed right after this episode's rejection and were retried (retryFailed): the last save
          // before them was this one, so the leg that retried each restored the run here and ran the verifier again.
          const failed = episode < feedbacks
            ? (turn < turns.length ? turnSteps[turn]! - context.step : 0)
            : storedContext.step - context.step;
          // A restore takes an attempt like a verdict does: past the last one it is no restore, unless the record
          // says a restore found none left.
          const room = restoredOut || context.verifyAttempts < context.maxVerifyAttempts;
          if (room && (failed > 0 || episode >= last)) {
            restores -= 1;
            restoredAt.push(context.verifyAttempts);
            const retried: EventObject[] = failed > 0 ? [{ type: 'RETRY_FAILED', phase: context.outputMode === 'none' ? 'loop' : 'finalize' } as EventObject] : [];
            return { instead: [{ type: 'RESTORED' }, ...retried] };
          }
        }
        return { output: undefined };
      }
      case 'runVerifier': {
        const at = context.messages.length;
        if (at < history.length) {
          // The run went on: the verifier rejected the candidate, and its feedback is the prompt that follows it.
          const feedback = feedbackOf(said(at));
          if (feedback === undefined) {
            return { none: `The run waits on its verifier here, and the record goes on with message ${at}, which is not the run's feedback prompt: no verdict leads there.` };
          }
          if (!resultMessages || at >= resultMessages.length) feedbackOnlyIn.push(at);
          return { output: { kind: 'rejected', feedback } };
        }
        return lastVerdict();
      }
      default:
        return undefined;
    }
  }

  /** The record's message `at`: from the ended run's result where it has one (the snapshot's transcript is what is checked). */
  function said(at: number): Message | undefined {
    return resultMessages && at < resultMessages.length ? resultMessages[at] : history[at];
  }

  /** A final answer's output as the output check reads it: the output tool's arguments, or the JSON of the text. */
  function answerIn(answer: Turn): unknown {
    if (storedContext.outputMode === 'tool') return answer.toolCalls[0]?.args ?? null;
    const parsed = parseJsonAnswer(answer.text);
    return parsed.ok ? parsed.value : answer.text;
  }

  /** The verdict the run ended on, as the ended run's result says it (the snapshot's stop is what is checked). */
  function lastVerdict(): { output: unknown } | { error: unknown } | { none: string } {
    if (stored.value === 'completed') return { output: { kind: 'verified' } };
    if (stored.value === 'stopped' && stop) {
      if (stop.reason === 'verification-inconclusive') {
        return { output: { kind: 'inconclusive', reason: typeof stop.details?.reason === 'string' ? stop.details.reason : '' } };
      }
      if (stop.reason === 'verification-attempts-exhausted' && typeof stop.details?.feedback === 'string') {
        return { output: { kind: 'rejected', feedback: stop.details.feedback } };
      }
      if (stop.reason === 'aborted') return { output: { kind: 'aborted' } };
    }
    const error = storedContext.error;
    if (stored.value === 'failed' && error) {
      return error.code === 'deadline_exceeded' ? { output: { kind: 'deadline', error } } : { error };
    }
    const how = ended ? `${String(stored.value)}${stop?.reason ? ` (${stop.reason})` : ''}` : 'before a verdict';
    return { none: `The run waits on its verifier here, and the record ends ${ended ? `${how}, which no verdict leads to` : how}.` };
  }

  function clientResultOf(c: ToolCallContext): { output: unknown; isError: boolean } | undefined {
    if (!isClient(c)) return undefined;
    const receipt = receipts.get(`${c.modelStep}:${c.toolCallId}`);
    if (receipt?.client) return { output: receipt.rawResult ?? null, isError: receipt.isError === true };
    return undefined;
  }

  function callAnswer(invokeId: string, c: ToolCallContext): unknown {
    const receipt = receipts.get(`${c.modelStep}:${c.toolCallId}`);
    const approval: CallApproval | undefined = approvalOf(c);
    // A call the snapshot holds as failed with no receipt: a callback before its effect threw (a guardrail, a
    // validator, an approval predicate). The first of those stages it reaches throws what the call kept.
    const own = storedCall(c);
    if (own?.outcome === 'failed' && !own.receipt && c.receipt === null && THROWING_STAGES.includes(invokeId)) {
      return { [THREW]: { code: own.reason ?? 'internal', message: typeof own.modelOutput === 'string' ? own.modelOutput : 'Tool call failed.' } };
    }
    switch (invokeId) {
      case 'guardCall': {
        const refusal = refusalOf(c);
        if (refusal?.by === 'guardrail') return { kind: 'block', reason: refusal.text };
        // A rewrite shows in the arguments of a call the snapshot still holds. One of a call that has been folded
        // left nothing in the record (a receipt does not keep the arguments), and nothing the replay compares holds them.
        if (own && canon(own.args) !== canon(c.args)) {
          rewritten.push(`${c.toolCallId} (step ${c.modelStep})`);
          return { kind: 'rewrite', args: own.args };
        }
        return { kind: 'allow' };
      }
      case 'checkArguments': {
        const refusal = refusalOf(c);
        return refusal?.by === 'arguments' ? { kind: 'invalid', message: refusal.text } : { kind: 'valid' };
      }
      case 'decideApproval':
        if (c.verdict) return c.verdict.approved ? { kind: 'approved' } : { kind: 'denied', reason: c.verdict.reason ?? '' };
        return approval ? { kind: 'wait' } : { kind: 'not-needed' };
      case 'issueApproval':
        return approval ? { approvalId: approval.approvalId, token: approval.token, client: approval.client } : undefined;
      case 'admit': {
        return own?.outcome === 'not-admitted' && (own.reason === 'aborted' || own.reason === 'deadline')
          ? { kind: 'refused', reason: own.reason } : { kind: 'admitted' };
      }
      case 'beginEffect':
        if (isClient(c)) return c.clientResult ? { kind: 'client-result' } : { kind: 'await-client' };
        // Back from a restart with its `executing` receipt and no result: the effect's outcome is unknown.
        if (c.receipt?.status === 'executing') return { kind: 'unknown' };
        if (!receipt) missing = `Call ${c.toolCallId} (step ${c.modelStep}) reached its effect, and the record holds no receipt for it and nothing that refused it.`;
        return receipt ? { kind: 'write', idempotent: receipt.idempotent } : undefined;
      case 'writeReceipt':
        // An effect the history has no result for: its process died after the receipt was written, and a new one
        // restored the call (the write it finds was not its own, so the call decides again).
        return receipt?.status === 'executing' ? { kind: 'restarted' } : { kind: 'written' };
      case 'executeTool':
        if (!receipt || receipt.status === 'executing') return undefined;
        if (receipt.status === 'failed') return { kind: 'threw', error: receipt.error };
        if (receipt.status === 'unstorable') return { kind: 'unstorable', error: receipt.error };
        return { kind: 'result', value: receipt.rawResult ?? null };
      case 'recordResult':
      case 'checkpoint':
        return { kind: 'written' };
      case 'projectResult': {
        const message = toolMessage(c.toolCallId, c.modelStep);
        if (!message) return undefined;
        const outcome = receipt?.client ? 'client-result'
          : receipt?.status === 'validation-failed' ? 'validation-failure'
            : receipt?.status === 'projection-failed' ? 'projection-failure'
              : receipt?.status === 'failed' ? 'failed' : 'completed';
        // What the model saw is the receipt's when it keeps it (the transcript is what is being checked).
        const seen = receipt?.modelOutput !== undefined ? receipt.modelOutput : message.content ?? null;
        return { outcome, modelOutput: seen, isError: message.isError === true, ...(receipt ? { receipt } : {}) };
      }
      default:
        return undefined;
    }
  }
}

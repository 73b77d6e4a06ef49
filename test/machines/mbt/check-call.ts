/**
 * What a driven tool-call path must show: the runtime took the path's
 * transitions, in order, and the call landed where the path ends, visible in
 * the result, the stored envelope, the receipts, the stream and the tool
 * message the model got next.
 */
import { expect } from 'vitest';
import type { AgentEvent } from 'cairn/agent';
import { expectedModelOutput } from './call-scenario.js';
import { TARGET, TARGET_KEY, type CallRun } from './drive-call.js';
import { storedChildValue } from './harness.js';
import type { PlannedPath } from './plan.js';
import { eventsOf, expectedEdges, isRetried, stateName } from './tool-call-model.js';


/** The outcome a call that ended in each final state reports (null: completed normally). */
export const OUTCOME_OF: Record<string, string | null> = {
  notDispatched: 'not-dispatched',
  policyViolation: 'policy-violation',
  blocked: 'blocked',
  invalidArguments: 'invalid-arguments',
  denied: 'denied',
  notAdmitted: 'not-admitted',
  failed: 'failed',
  validationFailure: 'validation-failure',
  projectionFailure: 'projection-failure',
  clientResult: 'client-result',
  unstorableResult: 'unstorable-result',
  completed: null,
};

type End = Extract<AgentEvent<string>, { type: 'tool-call-end' }>;

export function checkCallRun(p: PlannedPath, run: CallRun): void {
  const w = p.derived.world;
  const final = stateName(p.path.state.value);
  const modelEvents = eventsOf(p.path);
  const expected = expectedEdges(p.input, modelEvents);
  const recorded = run.steps.map((s) => s.key);
  // Past unknownEffect the operator's retry takes the call on (an unknownEffect path ends there, a retried one at the policy).
  const goesOn = (final === 'unknownEffect' && w.operator === 'retry') || isRetried(p.path.state as never);

  // The runtime took exactly the path's transitions, in order, and the call stood where the path ends.
  if (goesOn) expect(recorded.slice(0, expected.length)).toEqual(expected);
  else expect(recorded).toEqual(expected);
  expect(run.steps[expected.length - 1]?.value).toEqual(p.path.state.value);
  if (!goesOn) expect(run.finalValue).toEqual(p.path.state.value);

  // After a crash: a plain resume stops on the interrupted call, restores nothing and writes nothing; the tool does not run.
  if (w.crash !== null && w.replay !== 'idempotent') {
    const interrupted = [expect.objectContaining({ key: TARGET_KEY, toolCallId: 'c1', status: 'executing' })];
    for (const [i, plain] of run.plain.entries()) {
      expect(plain.result).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required' });
      expect(plain.result.status === 'stopped' ? plain.result.unknownEffects : undefined).toEqual(interrupted);
      expect(plain.writes).toBe(0);
      expect(plain.steps).toBe(0);
      expect(run.captured[i]?.receipts[TARGET_KEY]?.status).toBe('executing');
    }
    expect(run.plain).toHaveLength(1);
    expect(storedChildValue(run.captured[0], TARGET)).toEqual(w.crash === 'writingReceipt' ? { effectIdentity: 'writingReceipt' } : 'execution');
  }

  // The tool ran once for each execution on the path, plus the run a crash interrupted, plus a retry's; never more.
  const ran = modelEvents.filter((e) => e.type === 'xstate.done.actor.executeTool' && ['result', 'threw', 'unstorable'].includes(String(e.output?.kind))).length;
  // The transitions out of execution on a result (past `replay` and `unknown`): the tool ran.
  const ranEdge = /^toolCall\.execution\|xstate\.done\.actor\.executeTool\|[2-7]$/;
  const rerun = recorded.slice(expected.length).filter((k) => ranEdge.test(k)).length;
  expect(rerun).toBeLessThanOrEqual(1);
  expect(run.executions).toBe(ran + (w.crash ? 1 : 0) + rerun);

  const targetName = w.toolKnown ? 'target' : 'nope';
  const events = run.legs.flatMap((l) => l.events);
  const ends = events.filter((e): e is End => e.type === 'tool-call-end' && e.toolName === targetName);
  const last = run.last;
  const stored = run.store.last();

  // Requests are announced by the transitions that issue them, once each: an approval request when it is issued
  // (with a client request for a client tool), a client request when a client tool first waits for its result.
  const approvalRequests = events.filter((e) => e.type === 'approval-request' && e.approval.toolCallId === 'c1');
  const clientRequests = events.filter((e) => e.type === 'client-call-request' && e.call.toolCallId === 'c1');
  const issued = modelEvents.filter((e) => e.type === 'xstate.done.actor.issueApproval');
  expect(approvalRequests).toHaveLength(issued.length);
  const firstWaits = expected.filter((k) => k === 'toolCall.effectIdentity.beginning|xstate.done.actor.beginEffect|5').length;
  expect(clientRequests).toHaveLength(issued.filter((e) => e.output?.client === true).length + firstWaits);

  if (goesOn) {
    // The retry's leg rested in `reconciling` with the call in unknownEffect before the retry reached it.
    const all = run.allSteps;
    const at = all.findIndex((s) => s.actor === TARGET && s.value === 'unknownEffect');
    const next = all.findIndex((s, i) => i > at && s.actor === TARGET);
    expect(all.slice(at, next).some((s) => s.machine === 'run' && s.value === 'reconciling')).toBe(true);
    // Then the call took its path once more, gated like a new call, and ended: the run never stops on it again.
    expect(last.status).not.toBe('suspended');
    expect(last).not.toMatchObject({ reason: 'tool-reconciliation-required' });
    const denied = w.approval === 'gate' && !w.retryVerdict;
    if (denied) {
      // The record kept no verdict and none was sent: denied, and the operator is told.
      expect(run.toolMessage?.content).toBe('Tool call denied. Reason: No approval response.');
      expect(last.warnings).toContainEqual(expect.objectContaining({ setting: 'retryToolCallIds', toolCallId: 'c1' }));
    } else expect(last.warnings.filter((x) => x.setting === 'retryToolCallIds')).toEqual([]);
    expect(rerun).toBe(denied || w.guard === 'block' ? 0 : 1);
    return;
  }

  // A call in unknownEffect is there only after a crash, and the operator's retry takes it on (goesOn above).
  expect(final).not.toBe('unknownEffect');
  switch (final) {
    case 'approval.awaitingApproval':
      expect(last.status).toBe('suspended');
      if (last.status !== 'suspended') return;
      expect(last.pendingApprovals).toEqual([expect.objectContaining({ toolCallId: 'c1', toolName: 'target' })]);
      // The request the stream announced is the one the run waits on, token and all.
      expect(approvalRequests.map((e) => e.type === 'approval-request' && e.approval)).toEqual(last.pendingApprovals);
      expect(stored?.status).toBe('suspended');
      expect(storedChildValue(stored, TARGET)).toEqual({ approval: 'awaitingApproval' });
      expect(stored?.pendingApprovals.map((a) => a.toolCallId)).toEqual(['c1']);
      expect(ends).toEqual([]);
      return;
    case 'effectIdentity.awaitingClientResult':
      expect(last.status).toBe('suspended');
      if (last.status !== 'suspended') return;
      expect(last.pendingClientCalls).toEqual([expect.objectContaining({ toolCallId: 'c1', toolName: 'target' })]);
      expect(clientRequests.map((e) => e.type === 'client-call-request' && e.call)).toEqual(last.pendingClientCalls);
      expect(stored?.status).toBe('suspended');
      expect(storedChildValue(stored, TARGET)).toEqual({ effectIdentity: 'awaitingClientResult' });
      expect(stored?.pendingClientCalls.map((c) => c.toolCallId)).toEqual(['c1']);
      expect(ends).toEqual([]);
      return;
    default:
      break;
  }

  // A final state: the run received the call's output, the stream reported its end with the same outcome.
  const outcome = OUTCOME_OF[final];
  expect(outcome).not.toBeUndefined();
  const out = run.output!;
  expect(out).toBeDefined();
  expect(out.outcome).toBe(outcome);
  expect(ends).toHaveLength(1);
  expect(ends[0]!.outcome).toBe(outcome ?? undefined);
  expect(ends[0]!.isError).toBe(out.isError);

  const receipt = stored?.receipts[TARGET_KEY];
  switch (final) {
    case 'notDispatched':
      expect(last).toMatchObject({ status: 'stopped', reason: w.finishReason === 'content-filter' ? 'refusal' : 'length' });
      expect(run.model.calls).toHaveLength(1);
      expect(receipt).toBeUndefined();
      return;
    case 'notAdmitted': {
      if (w.admission === 'deadline') expect(last).toMatchObject({ status: 'failed', error: { code: 'deadline_exceeded' } });
      else expect(last).toMatchObject({ status: 'stopped', reason: 'aborted' });
      // Admission saw it first: nothing stopped the run early, it ended only when it folded the step's answers.
      // (The way to the final state, through `stopping` / `failing`, follows that edge.)
      const runEdges = run.allSteps.filter((s) => s.machine === 'run' && !s.key.startsWith('run|') && !/^run\.(stopping|failing)\./.test(s.key)).map((s) => s.key);
      expect(runEdges[runEdges.length - 1]).toBe(w.admission === 'deadline' ? 'run.loop.awaitingCalls|always|2' : 'run.loop.awaitingCalls|always|3');
      expect(out.reason).toBe(w.admission);
      expect(run.model.calls).toHaveLength(1);
      expect(receipt).toBeUndefined();
      return;
    }
    default:
      break;
  }

  // The run went on: the model's next request carries the call's answer, and the run completed.
  expect(last).toMatchObject({ status: 'completed', text: 'Done.' });
  expect(run.toolMessage).toBeDefined();
  const want = expectedModelOutput(final, w);
  if (want instanceof RegExp) expect(String(run.toolMessage!.content)).toMatch(want);
  else expect(run.toolMessage!.content).toEqual(want);
  expect(run.toolMessage!.content).toEqual(out.modelOutput);
  expect(run.toolMessage!.isError).toBe(out.isError ? true : undefined);
  // An unstorable result is not an error of the tool: it ran, and the model is told not to call it again.
  expect(out.isError).toBe(final !== 'completed' && final !== 'clientResult' && final !== 'unstorableResult');

  const reconciled = w.operator !== null ? { reconciled: true } : {};
  switch (final) {
    case 'completed':
      expect(receipt).toMatchObject({ status: 'completed', modelOutput: out.modelOutput, ...reconciled });
      break;
    case 'clientResult':
      expect(receipt).toMatchObject({ status: 'completed', client: true, rawResult: { shipped: true } });
      break;
    case 'validationFailure':
      expect(receipt).toMatchObject({ status: 'validation-failed', ...reconciled });
      break;
    case 'projectionFailure':
      expect(receipt).toMatchObject({ status: 'projection-failed', ...reconciled });
      break;
    case 'unstorableResult':
      // The receipt records that the tool ran, and why its result is not there.
      expect(receipt).toMatchObject({ status: 'unstorable', error: { code: 'result_unstorable' } });
      expect(receipt).not.toHaveProperty('rawResult');
      expect(last.warnings).toContainEqual(expect.objectContaining({ setting: 'tools', toolCallId: 'c1' }));
      break;
    case 'failed':
      if (w.execute === 'throws' || w.operator === 'reconcile-error') {
        expect(receipt).toMatchObject({ status: 'failed', ...reconciled });
      } else if (!w.onToolResultThrows && w.operator === null) expect(receipt).toBeUndefined();
      break;
    default:
      expect(receipt).toBeUndefined();
  }
}


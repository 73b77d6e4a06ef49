/**
 * Drives one tool-call world through the real runtime: streamAgent for the
 * first leg, resumeStreamAgent for each resume. A crash is a process that dies
 * right after the save that shows the call where the path needs it: that
 * envelope is copied into a fresh store, and a new process resumes from there,
 * first plainly (an interrupted call stops that resume), then with the
 * operator's answer (retryToolCallIds / reconciledToolResults).
 *
 * Some crashes need a second call in the turn (`SECOND`, id `c2`), whose saves
 * show the target where the crash needs it (see `secondCall`).
 */
import type { AgentResult, AgentRunEnvelope, AgentTool, Message, ResumeOptions } from 'cairn/agent';
import { createMockModel, type MockLanguageModel } from 'cairn/testing';
import type { ToolCallOutput } from '../../../machines/index.js';
import type { CallWorld } from './call-scenario.js';
import {
  recordingStore, resumeLeg, seededStore, signal, startLeg, storedChildValue, T0, testClock, testIds,
  type Leg, type RecordingStore,
} from './harness.js';
import { standardSchema } from '../../agent/rules/helpers.js';
import { recorder, type Step } from './recorder.js';

/** The call under test is the first of its turn, at model step 0. */
export const TARGET = 'call-0-0';
export const TARGET_KEY = '0:c1';
/** The second call of the turn, when the world has one. */
export const SECOND = 'call-0-1';
export const SECOND_KEY = '0:c2';

/**
 * What the second call of the turn does, if the world needs one:
 * - 'finishes': the process dies with the target in `execution` (its own saves
 *   never show it there), so another call saves then: it returns once the
 *   target's effect started, and its result is saved (not interrupted). On the
 *   restore it checkpoints again, which shows the target in unknownEffect.
 * - 'projects-late': the process dies with the target in effect identity, and
 *   the retry's process once the restored target is in unknownEffect: it
 *   returns first, its result is saved before the target's `executing`
 *   receipt, and onToolResult holds it in projection until that receipt is
 *   saved; on the restore it projects again and checkpoints, which shows the
 *   target in unknownEffect.
 * - 'interrupted': the call is answered by its receipt at the approval stage:
 *   the second call starts its effect once the target's effect started, and
 *   both die with it, interrupted; both are retried, and the second call's
 *   `executing` receipt is saved while the target is back in approval.deciding.
 */
export function secondCall(w: CallWorld): 'finishes' | 'projects-late' | 'interrupted' | null {
  if (w.crash === 'execution') return w.retryDiesIn === 'approval.deciding' ? 'interrupted' : 'finishes';
  if (w.crash === 'beginning' && w.operator.length > 1) return 'projects-late';
  return null;
}

export interface DriveSpec {
  world: CallWorld;
  /** How many resumes answer the call before any crash (approval verdicts, client results). */
  resumes: number;
  /** The leg in which admission runs (0: the first). */
  admissionLeg: number;
  /** The leg in which the process dies, or -1. */
  crashLeg: number;
}

/** A resume right after a crash, with no answer for the interrupted call. */
export interface PlainResume {
  result: AgentResult<string>;
  /** Saves the store accepted during that resume. */
  writes: number;
  /** Transitions any actor took during it. */
  steps: number;
}

export interface CallRun {
  legs: Leg<string>[];
  /** The target call's transitions over all legs; a dead process's steps after its last save are gone. */
  steps: Step[];
  /** Every transition of every actor (run and calls) over all legs, likewise. */
  allSteps: Step[];
  /** The target call's state after its last transition. */
  finalValue: unknown;
  /** The call's output as the run actor received it, when it ended. */
  output: ToolCallOutput | undefined;
  model: MockLanguageModel;
  /** The store the last leg used (a fresh copy after a crash). */
  store: RecordingStore;
  /** The envelopes crashes left behind, in order. */
  captured: AgentRunEnvelope[];
  /** The plain resumes after each crash. */
  plain: PlainResume[];
  /** How many times the target's execute was entered, over all legs. */
  executions: number;
  /** How many times the target's needsApproval predicate ran, over all legs (worlds whose gate is a predicate). */
  gateChecks: number;
  /** The tool message the model received for the target call, if the run asked the model again. */
  toolMessage: Extract<Message, { role: 'tool' }> | undefined;
  last: AgentResult<string>;
}

/** The record as an engine that kept no verdicts with its approvals left it: a retry of a gated call is then denied. */
function withoutVerdicts(envelope: AgentRunEnvelope): AgentRunEnvelope {
  const copy = structuredClone(envelope);
  for (const approval of Object.values(copy.approvals)) delete approval.verdict;
  return copy;
}

const hasOutcome = (status: string | undefined) =>
  status !== undefined && ['executed', 'completed', 'failed', 'validation-failed', 'projection-failed'].includes(status);

export async function driveCall(spec: DriveSpec): Promise<CallRun> {
  const { world: w, resumes, admissionLeg, crashLeg } = spec;
  const second = secondCall(w);
  if (second === 'projects-late' && crashLeg !== 0) throw new Error('A second call that projects late needs the crash in the first leg.');
  const clock = testClock();
  const ids = testIds();
  const deadline = w.admission === 'deadline' ? T0 + 1_000 : w.admission === 'clock-throws' ? T0 + 1_000_000_000 : undefined;
  let controller = new AbortController();
  let store = recordingStore();
  const captured: AgentRunEnvelope[] = [];
  const plain: PlainResume[] = [];
  const executeStarted = signal();
  /** The retried target has reached approval.deciding (its predicate runs). */
  const targetDeciding = signal();
  let crashing = w.crash !== null;
  let executions = 0;
  let gateChecks = 0;
  let secondGuards = 0;
  let secondProjections = 0;
  let leg = 0;

  const targetName = w.toolKnown ? 'target' : 'nope';
  const to = w.guard === 'rewrite' ? 'ops@example.com' : 'ada@example.com';
  const admissionFault = () => {
    if (w.admission === 'deadline') clock.t = deadline!;
    else if (w.admission === 'aborted') controller.abort();
    else if (w.admission === 'clock-throws') clock.failNextDeadlineCheck();
  };
  /** Settles once the current leg's process dies (its abort signal). */
  const untilDeath = (abort: AbortSignal) =>
    new Promise<void>((resolve) => (abort.aborted ? resolve() : abort.addEventListener('abort', () => resolve(), { once: true })));

  const calls: { toolName: string; toolCallId: string; args: { to?: string } }[] = [
    { toolName: targetName, toolCallId: 'c1', args: { to: 'ada@example.com' } },
  ];
  if (second) calls.push({ toolName: 'second', toolCallId: 'c2', args: {} });
  const model = createMockModel({ responses: [{ toolCalls: calls, finishReason: w.finishReason }, { text: 'Done.' }] });

  const project = w.projection === 'projection-failure'
    ? { toModelOutput: () => { throw new Error('cannot render'); } }
    : w.projection === 'validation-failure'
      ? {
          outputSchema: { type: 'object', required: ['id'] },
          validateResult: () => { throw new Error('result has no message id'); },
        }
      : { toModelOutput: (r: { sent?: string }) => (r && typeof r === 'object' && 'sent' in r ? `sent to ${r.sent}` : `client says ${JSON.stringify(r)}`) };
  // The arguments check: a schema the call matches, one it does not, or a Standard Schema whose validator throws.
  const parameters: AgentTool['parameters'] = w.args === 'invalid'
    ? { type: 'object', properties: { to: { type: 'integer' } } }
    : w.args === 'validator-throws'
      ? Object.assign(standardSchema(() => { throw new Error('argument validator failed'); }), {
          jsonSchema: { type: 'object', properties: { to: { type: 'string' } } },
        })
      : { type: 'object', properties: { to: { type: 'string' } } };
  const target: AgentTool = {
    description: 'Send an email.',
    parameters,
    needsApproval: w.approval === 'predicate-throws'
      ? () => { throw new Error('approval predicate failed'); }
      : second === 'interrupted'
        ? async () => {
            gateChecks += 1;
            // The retry's pass: the call sits in approval.deciding until its process dies.
            if (gateChecks === 2) {
              const dying = controller.signal;
              targetDeciding.resolve();
              await untilDeath(dying);
            }
            return false;
          }
        : w.approval === 'gate',
    replay: w.replay,
    ...(w.executor === 'server'
      ? {
          execute: async (args: { to: string }, ctx) => {
            executions += 1;
            if (crashing) {
              executeStarted.resolve();
              // Hangs until the process "dies" (the leg is aborted).
              await untilDeath(ctx.signal);
              throw new Error('process died');
            }
            if (w.execute === 'throws') throw new Error('smtp down');
            if (w.execute === 'unstorable') {
              // The mail went out; what the tool returns holds a cycle, so no receipt can store it.
              const receipt: Record<string, unknown> = { sent: args.to };
              receipt.self = receipt;
              return receipt;
            }
            return { sent: args.to, id: 'msg-1' };
          },
        }
      : {}),
    ...project,
  };
  const tools: Record<string, AgentTool> = { target };
  if (second) {
    tools.second = {
      description: 'Another call of the same turn, whose saves show the target where a crash needs it.',
      parameters: { type: 'object' },
      // Answered in the same resume as the target when it waits for a verdict.
      needsApproval: second === 'finishes' && w.approval === 'gate',
      execute: async (_args: unknown, ctx) => {
        if (second === 'finishes') {
          await executeStarted.promise;
          return 'second ok';
        }
        if (second === 'interrupted') {
          await untilDeath(ctx.signal);
          throw new Error('process died');
        }
        return 'second ok';
      },
    };
  }
  const options = (): ResumeOptions<string> => ({
    model,
    prompt: 'Email Ada the report.',
    tools,
    onToolCall: async ({ toolName }) => {
      if (toolName === 'second' && second === 'interrupted') {
        // First run: its effect starts once the target's did. The retry: once the target is back in approval.deciding.
        secondGuards += 1;
        await (secondGuards === 1 ? executeStarted : targetDeciding).promise;
      }
      if (toolName !== targetName) return { action: 'allow' };
      // The second call's result is saved before the target's `executing` receipt.
      if (second === 'projects-late' && leg === 0) await store.waitFor((e) => hasOutcome(e.receipts[SECOND_KEY]?.status));
      if (admissionLeg === 0 && leg === 0) admissionFault();
      switch (w.guard) {
        case 'block': return { action: 'block', reason: 'recipient not on the allowlist' };
        case 'rewrite': return { action: 'rewrite', args: { to: 'ops@example.com' } };
        case 'throw': throw new Error('onToolCall failed');
        default: return { action: 'allow' };
      }
    },
    onToolResult: async ({ toolName }) => {
      if (toolName === 'second' && second === 'projects-late') {
        secondProjections += 1;
        // First run: held in projection until the target's `executing` receipt is saved. The retry's restore: until
        // the restored target has left effect identity (it does without waiting on anything).
        if (secondProjections === 1) await store.waitFor((e) => e.receipts[TARGET_KEY]?.status === 'executing');
        else await new Promise((r) => setImmediate(r));
      }
      if (toolName === targetName && w.onToolResultThrows) throw new Error('onToolResult failed');
      return undefined;
    },
    session: { store, runId: 'mbt-run', scope: 'tenant-a' },
    bindingId: 'mbt-v1',
    abortSignal: controller.signal,
    ...(deadline !== undefined ? { deadline } : {}),
    deps: { clock, generateId: ids },
    maxSteps: 4,
  });

  const answersFor = (previous: AgentResult<string>): Partial<ResumeOptions<string>> => {
    if (previous.status !== 'suspended') return {};
    return {
      approvalResponses: previous.pendingApprovals.map((p) => ({
        approvalId: p.approvalId,
        token: p.token,
        approved: p.toolName === targetName ? w.verdict === true : true,
        ...(p.toolName === targetName && w.verdict === false ? { reason: 'not today' } : {}),
      })),
      clientToolResults: previous.pendingClientCalls.map((c) => ({ toolCallId: c.toolCallId, output: { shipped: true }, isError: false })),
    };
  };

  /** Runs a leg until a save shows the target as `at` says, then the process dies; a fresh store holds that save. */
  const dieAfter = async (run: () => Promise<Leg<string>>, at: (e: AgentRunEnvelope) => boolean, ready: Promise<unknown>) => {
    const dying = run();
    const [{ envelope, mark }] = await Promise.all([store.waitFor(at), ready]);
    controller.abort();
    await dying;
    recorder.steps.splice(mark);
    captured.push(envelope);
    store = await seededStore(w.approval === 'gate' && !w.retryVerdict ? withoutVerdicts(envelope) : envelope);
    controller = new AbortController();
  };

  /** The resume a new process makes first, without answering the interrupted call. */
  const plainResume = async () => {
    const before = recorder.steps.length;
    const resumed = await resumeLeg(options());
    plain.push({ result: resumed.result, writes: store.saved.length, steps: recorder.steps.length - before });
    if (w.replay === 'idempotent') legs.push(resumed);
  };

  const operatorLeg = async (answer: CallWorld['operator'][number], dies: boolean) => {
    // An interrupted second call is retried along with the target, and its outcome recorded along with the target's.
    const both = second === 'interrupted';
    // A retry sends no verdict: an approved call passes its gate with the one the run recorded.
    const answers: Partial<ResumeOptions<string>> = answer === 'retry'
      ? { retryToolCallIds: both ? ['c1', 'c2'] : ['c1'] }
      : {
          reconciledToolResults: [
            answer === 'reconcile'
              ? { toolCallId: 'c1', output: { sent: to, id: 'msg-1' } }
              : { toolCallId: 'c1', output: 'smtp down', isError: true },
            ...(both ? [{ toolCallId: 'c2', output: 'second ok' }] : []),
          ],
        };
    const run = () => resumeLeg({ ...options(), ...answers });
    if (!dies) {
      legs.push(await run());
      return;
    }
    if (w.retryDiesIn === 'approval.deciding') {
      // The retry's process dies once the second call's `executing` receipt is saved with the target back in
      // approval.deciding (its receipt still `executing` from the first run); its admission is refused by the abort.
      await dieAfter(run, (e) => JSON.stringify(storedChildValue(e, TARGET)) === '{"approval":"deciding"}' &&
        e.receipts[TARGET_KEY]?.status === 'executing' && e.receipts[SECOND_KEY]?.status === 'executing', Promise.resolve());
    } else {
      // The retry's process dies too, once a save shows the call in unknownEffect; its admission is refused by the abort.
      await dieAfter(run, (e) => storedChildValue(e, TARGET) === 'unknownEffect', Promise.resolve());
    }
    await plainResume();
  };

  recorder.start();
  const legs: Leg<string>[] = [];
  try {
    for (leg = 0; leg <= resumes; leg += 1) {
      controller = new AbortController();
      if (leg === admissionLeg && leg > 0) admissionFault();
      const opts = { ...options(), ...(leg > 0 ? answersFor(legs[legs.length - 1]!.result) : {}) };
      const run = () => (leg === 0 ? startLeg(opts) : resumeLeg(opts));
      if (leg !== crashLeg) {
        legs.push(await run());
        continue;
      }
      // A second call that finishes or projects late has its outcome recorded (it is not interrupted); one that is
      // interrupted too has its `executing` receipt saved.
      const secondAt = (e: AgentRunEnvelope) => second === 'interrupted'
        ? e.receipts[SECOND_KEY]?.status === 'executing'
        : second === null || hasOutcome(e.receipts[SECOND_KEY]?.status);
      const at = w.crash === 'beginning'
        ? (e: AgentRunEnvelope) => JSON.stringify(storedChildValue(e, TARGET)) === '{"effectIdentity":"beginning"}' && secondAt(e)
        : (e: AgentRunEnvelope) => storedChildValue(e, TARGET) === 'execution' && secondAt(e);
      await dieAfter(run, (e) => at(e) && e.receipts[TARGET_KEY]?.status === 'executing', executeStarted.promise);
      crashing = false;
      await plainResume();
      for (let i = 0; i < w.operator.length; i += 1) await operatorLeg(w.operator[i]!, i < w.operator.length - 1);
    }
  } finally {
    recorder.stop();
  }
  const steps = recorder.stepsOf(TARGET);
  const toolMessage = model.calls[1]?.messages.find(
    (m): m is Extract<Message, { role: 'tool' }> => m.role === 'tool' && m.toolCallId === 'c1',
  );
  return {
    legs,
    steps,
    allSteps: [...recorder.steps],
    finalValue: steps[steps.length - 1]?.value,
    output: recorder.outputs.get(TARGET) as ToolCallOutput | undefined,
    model,
    store,
    captured,
    plain,
    executions,
    gateChecks,
    toolMessage,
    last: legs[legs.length - 1]!.result,
  };
}

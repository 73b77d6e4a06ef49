/**
 * Drives one tool-call world through the real runtime: streamAgent for the
 * first leg, resumeStreamAgent for each resume. A crash is a process that dies
 * right after the save that shows the call where the path needs it: that
 * envelope is copied into a fresh store, and a new process resumes from there,
 * first plainly (an interrupted call stops that resume), then with the
 * operator's answer (retryToolCallIds / reconciledToolResults).
 *
 * A crash during the effect needs a second call in the turn (`SECOND`, id
 * `c2`), whose saves show the target there (see `hasSecondCall`).
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
 * A crash in execution needs a second call in the turn: the target's own saves
 * never show it there (the write of its `executing` receipt shows it in
 * writingReceipt, its next save is its result's). The second call returns once
 * the target's effect started, and its result is saved (it is not
 * interrupted); on the restore it checkpoints again, which shows the target in
 * unknownEffect.
 */
export const hasSecondCall = (w: CallWorld) => w.crash === 'execution';

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
  /** The tool message the model received for the target call, if the run asked the model again. */
  toolMessage: Extract<Message, { role: 'tool' }> | undefined;
  last: AgentResult<string>;
}

/**
 * The record as if the run had kept no verdict with the call's approval request
 * (as an engine before verdicts were kept left it): a retry of the gated call is
 * then denied. The verdict is taken out of the snapshot, where the run keeps it,
 * and out of the envelope's projection of it.
 */
function withoutVerdicts(envelope: AgentRunEnvelope): AgentRunEnvelope {
  const copy = structuredClone(envelope);
  for (const approval of Object.values(copy.approvals)) delete approval.verdict;
  const snapshot = copy.snapshot as {
    context: { approvals: Record<string, { verdict?: unknown }> };
    children?: Record<string, { snapshot?: { context?: { approval?: { verdict?: unknown } | null } } }>;
  };
  for (const approval of Object.values(snapshot.context.approvals)) delete approval.verdict;
  for (const child of Object.values(snapshot.children ?? {})) delete child.snapshot?.context?.approval?.verdict;
  return copy;
}

const hasOutcome = (status: string | undefined) =>
  status !== undefined && ['executed', 'completed', 'failed', 'validation-failed', 'projection-failed', 'unstorable'].includes(status);

export async function driveCall(spec: DriveSpec): Promise<CallRun> {
  const { world: w, resumes, admissionLeg, crashLeg } = spec;
  const second = hasSecondCall(w);
  const clock = testClock();
  const baseIds = testIds();
  /** The id source breaks once, when the approval request's token is minted (world `issue-throws`). */
  let idsFail = false;
  const ids = () => {
    if (idsFail) {
      idsFail = false;
      throw new Error('id source failed');
    }
    return baseIds();
  };
  const deadline = w.admission === 'deadline' ? T0 + 1_000 : w.admission === 'clock-throws' ? T0 + 1_000_000_000 : undefined;
  let controller = new AbortController();
  let store = recordingStore();
  const captured: AgentRunEnvelope[] = [];
  const plain: PlainResume[] = [];
  const executeStarted = signal();
  let crashing = w.crash !== null;
  let executions = 0;
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
    needsApproval: w.approval === 'predicate-no'
      ? () => false
      : w.approval === 'predicate-throws'
      ? () => { throw new Error('approval predicate failed'); }
      : w.approval === 'issue-throws'
        ? () => {
            // The next id the run asks for is the request's token.
            idsFail = true;
            return true;
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
      needsApproval: w.approval === 'gate',
      execute: async () => {
        await executeStarted.promise;
        return 'second ok';
      },
    };
  }
  const options = (): ResumeOptions<string> => ({
    model,
    prompt: 'Email Ada the report.',
    tools,
    onToolCall: async ({ toolName }) => {
      if (toolName !== targetName) return { action: 'allow' };
      if (admissionLeg === 0 && leg === 0) admissionFault();
      switch (w.guard) {
        case 'block': return { action: 'block', reason: 'recipient not on the allowlist' };
        case 'rewrite': return { action: 'rewrite', args: { to: 'ops@example.com' } };
        case 'throw': throw new Error('onToolCall failed');
        default: return { action: 'allow' };
      }
    },
    onToolResult: async ({ toolName }) => {
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

  /** The operator's answer: run the call once more (an approved call passes its gate with the recorded verdict), or record what happened. */
  const operatorLeg = async (answer: NonNullable<CallWorld['operator']>) => {
    const answers: Partial<ResumeOptions<string>> = answer === 'retry'
      ? { retryToolCallIds: ['c1'] }
      : {
          reconciledToolResults: [
            answer === 'reconcile'
              ? { toolCallId: 'c1', output: { sent: to, id: 'msg-1' } }
              : { toolCallId: 'c1', output: 'smtp down', isError: true },
          ],
        };
    legs.push(await resumeLeg({ ...options(), ...answers }));
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
      // The second call's outcome is recorded (it is not interrupted).
      const at = w.crash === 'writingReceipt'
        ? (e: AgentRunEnvelope) => JSON.stringify(storedChildValue(e, TARGET)) === '{"effectIdentity":"writingReceipt"}'
        : (e: AgentRunEnvelope) => storedChildValue(e, TARGET) === 'execution' && hasOutcome(e.receipts[SECOND_KEY]?.status);
      // The process dies once the effect started: whether it landed, nobody knows.
      await dieAfter(run, (e) => at(e) && e.receipts[TARGET_KEY]?.status === 'executing', executeStarted.promise);
      crashing = false;
      await plainResume();
      if (w.operator !== null) await operatorLeg(w.operator);
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
    toolMessage,
    last: legs[legs.length - 1]!.result,
  };
}

/**
 * Drives one tool-call world through the real runtime: streamAgent for the
 * first leg, resumeStreamAgent for each resume. A crash is a process that dies
 * right after the save that shows the call where the path needs it: that
 * envelope is copied into a fresh store, and a new process resumes from there,
 * first plainly (an interrupted call stops that resume), then with the
 * operator's answer (retryToolCallIds / reconciledToolResults).
 */
import type { AgentResult, AgentRunEnvelope, AgentTool, Message, ResumeOptions } from 'cairn/agent';
import { createMockModel, type MockLanguageModel } from 'cairn/testing';
import type { ToolCallOutput } from '../../../machines/index.js';
import type { CallWorld } from './call-scenario.js';
import {
  recordingStore, resumeLeg, seededStore, signal, startLeg, storedChildValue, T0, testClock, testIds,
  type Leg, type RecordingStore,
} from './harness.js';
import { recorder, type Step } from './recorder.js';

/** The call under test is the first of its turn, at model step 0. */
export const TARGET = 'call-0-0';
export const TARGET_KEY = '0:c1';

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

const hasOutcome = (status: string | undefined) =>
  status !== undefined && ['executed', 'completed', 'failed', 'validation-failed', 'projection-failed'].includes(status);

export async function driveCall(spec: DriveSpec): Promise<CallRun> {
  const { world: w, resumes, admissionLeg, crashLeg } = spec;
  const clock = testClock();
  const ids = testIds();
  const deadline = w.admission === 'deadline' ? T0 + 1_000 : w.admission === 'clock-throws' ? T0 + 1_000_000_000 : undefined;
  let controller = new AbortController();
  let store = recordingStore();
  const captured: AgentRunEnvelope[] = [];
  const plain: PlainResume[] = [];
  const executeStarted = signal();
  const targetWaiting = signal();
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

  const calls: { toolName: string; toolCallId: string; args: { to?: string } }[] = [
    { toolName: targetName, toolCallId: 'c1', args: { to: 'ada@example.com' } },
  ];
  if (w.receiptFirst) calls.push({ toolName: 'twin', toolCallId: 'c1', args: {} });
  if (w.crash === 'execution') calls.push({ toolName: 'sibling', toolCallId: 'c2', args: {} });
  const model = createMockModel({ responses: [{ toolCalls: calls, finishReason: w.finishReason }, { text: 'Done.' }] });

  const project = w.projection === 'projection-failure'
    ? { toModelOutput: () => { throw new Error('cannot render'); } }
    : w.projection === 'validation-failure'
      ? {
          outputSchema: { type: 'object', required: ['id'] },
          validateResult: () => { throw new Error('result has no message id'); },
        }
      : { toModelOutput: (r: { sent?: string }) => (r && typeof r === 'object' && 'sent' in r ? `sent to ${r.sent}` : `client says ${JSON.stringify(r)}`) };
  const target: AgentTool = {
    description: 'Send an email.',
    parameters: { type: 'object', properties: { to: { type: 'string' } } },
    needsApproval: w.approval === 'predicate-throws'
      ? () => { throw new Error('approval predicate failed'); }
      : w.approval === 'gate' && w.receiptFirst && w.receiptWhen === 'while-waiting'
        ? () => { targetWaiting.resolve(); return true; }
        : w.approval === 'gate',
    replay: w.replay,
    ...(w.executor === 'server'
      ? {
          execute: async (args: { to: string }, ctx) => {
            executions += 1;
            if (crashing) {
              executeStarted.resolve();
              // Hangs until the process "dies" (the leg is aborted).
              return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('process died')), { once: true }));
            }
            if (w.execute === 'throws') throw new Error('smtp down');
            return { sent: args.to, id: 'msg-1' };
          },
        }
      : {}),
    ...project,
  };
  const tools: Record<string, AgentTool> = { target };
  if (w.receiptFirst) {
    tools.twin = {
      description: 'Another tool the model called under the same id.',
      parameters: { type: 'object' },
      execute: async () => {
        if (w.receiptWhen === 'while-waiting' || w.receiptWhen === 'while-running') {
          // Records its outcome only once the target waits for its verdict, or passed its guard (and every microtask has run).
          await targetWaiting.promise;
          await new Promise((r) => setImmediate(r));
        }
        if (w.receiptFirst === 'threw') throw new Error('twin exploded');
        return { sent: 'twin@example.com' };
      },
    };
  }
  if (w.crash === 'execution') {
    tools.sibling = {
      description: 'A call of the same turn that saves while the target runs.',
      parameters: { type: 'object' },
      needsApproval: w.approval === 'gate',
      execute: async () => {
        await executeStarted.promise;
        return 'sibling ok';
      },
    };
  }

  const options = (): ResumeOptions<string> => ({
    model,
    prompt: 'Email Ada the report.',
    tools,
    onToolCall: async ({ toolName }) => {
      if (toolName !== targetName) return { action: 'allow' };
      if (w.receiptFirst && w.receiptWhen === 'before-decision') await store.waitFor((e) => hasOutcome(e.receipts[TARGET_KEY]?.status));
      if (w.receiptFirst && w.receiptWhen === 'while-running' && leg === 0) {
        // Goes on once the same-id call's `executing` receipt is saved, and lets it finish only after.
        await store.waitFor((e) => e.receipts[TARGET_KEY]?.status === 'executing');
        targetWaiting.resolve();
      }
      if (admissionLeg === 0 && leg === 0) admissionFault();
      switch (w.guard) {
        case 'block': return { action: 'block', reason: 'recipient not on the allowlist' };
        case 'rewrite': return { action: 'rewrite', args: { to: 'ops@example.com' } };
        case 'throw': throw new Error('onToolCall failed');
        default: return { action: 'allow' };
      }
    },
    onToolResult: ({ toolName }) => {
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
    store = await seededStore(envelope);
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
    const envelope = captured[captured.length - 1]!;
    const answers: Partial<ResumeOptions<string>> = answer === 'retry'
      ? {
          retryToolCallIds: ['c1'],
          ...(w.retryVerdict
            ? {
                approvalResponses: Object.entries(envelope.approvals)
                  .filter(([, a]) => a.toolCallId === 'c1')
                  .map(([approvalId, a]) => ({ approvalId, token: a.token, approved: true })),
              }
            : {}),
        }
      : {
          reconciledToolResults: [answer === 'reconcile'
            ? { toolCallId: 'c1', output: { sent: to, id: 'msg-1' } }
            : { toolCallId: 'c1', output: 'smtp down', isError: true }],
        };
    const run = () => resumeLeg({ ...options(), ...answers });
    if (!dies) {
      legs.push(await run());
      return;
    }
    // The retry's process dies too, once a save shows the call in unknownEffect; its admission is refused by the abort.
    await dieAfter(run, (e) => storedChildValue(e, TARGET) === 'unknownEffect', Promise.resolve());
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
      const at = w.crash === 'beginning'
        ? (e: AgentRunEnvelope) => JSON.stringify(storedChildValue(e, TARGET)) === '{"effectIdentity":"beginning"}'
        // The sibling's own effect must have its outcome recorded, or it would be interrupted too.
        : (e: AgentRunEnvelope) => storedChildValue(e, TARGET) === 'execution' && hasOutcome(e.receipts['0:c2']?.status);
      await dieAfter(run, (e) => at(e) && e.receipts[TARGET_KEY]?.status === 'executing', executeStarted.promise);
      crashing = false;
      await plainResume();
      for (let i = 0; i < w.operator.length; i += 1) await operatorLeg(w.operator[i]!, i < w.operator.length - 1);
    }
  } finally {
    recorder.stop();
  }
  const steps = recorder.stepsOf(TARGET);
  const second = model.calls[1];
  const toolMessage = second?.messages.find(
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

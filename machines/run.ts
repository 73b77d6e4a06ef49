/**
 * The run actor: the life of one native run. Pure: model calls, saves,
 * validation and the verifier are named actors the runtime provides.
 *
 *   starting → loop (model call, record the turn, policy, dispatch, settle the
 *   calls, checkpoint) → finalizing (structured output, repair) → verifying →
 *   completed | stopped | failed, or suspended until a resume settles it.
 */
import { and, assign, enqueueActions, fromPromise, not, setup, type SnapshotFrom } from 'xstate';
import { byStepThenCall, toolCallMachine } from './tool-call.js';
import type {
  CallPhase, ErrorData, Json, ModelCallInput, ModelCallOutput, OutputCheck, PolicyOutput, RunContext, RunEvent, RunInput,
  ToolCallOutput, Turn, UsageTotals, ValidateInput, VerifierOutput, VerifyInput,
} from './types.js';

/**
 * Bumped whenever a stored snapshot of an older version would not restore as
 * it is: each bump comes with a migration (src/agent/migrations.ts). 2: the
 * receipts and approval requests moved into the snapshot. 3: the execution
 * budget can stop a model call (`budget-exceeded`), and a resume's settle can
 * fail the run on the execution policy (POLICY_VIOLATION).
 */
export const RUN_MACHINE_VERSION = 3;

/** The user turns the run adds itself. Plain strings, so the chart stays pure. */
export const RUN_PROMPTS = {
  finalize: 'Give your final answer now, as JSON that matches the requested schema. Do not call tools.',
  finalizeWithTool: 'Give your final answer now by calling the output tool with arguments that match its schema.',
  repair: (issue: string) => `That answer did not match the required output: ${issue} Answer again with JSON that matches the schema.`,
  feedback: (feedback: string) => `Your answer was checked and rejected: ${feedback} Give a corrected final answer.`,
};

const notProvided = (name: string) => () => {
  throw new Error(`The ${name} actor was not provided to the run machine.`);
};

type CallSnapshot = SnapshotFrom<typeof toolCallMachine>;

/** Where a call stands, read from its snapshot. */
export function callPhase(snapshot: CallSnapshot): CallPhase {
  if (snapshot.status !== 'active') return 'ended';
  if (snapshot.hasTag('needs-reconciliation')) return 'unknown';
  if (snapshot.hasTag('suspended')) return 'suspended';
  return 'active';
}

const phasesOf = (context: RunContext) => context.batch.map((id) => context.phases[id] ?? 'active');

function assistantMessage(turn: Turn): Json {
  return {
    role: 'assistant',
    content: turn.text,
    ...(turn.toolCalls.length > 0 ? { toolCalls: turn.toolCalls as unknown as Json } : {}),
    ...(turn.reasoning && turn.reasoning.length > 0 ? { reasoning: turn.reasoning } : {}),
    ...(turn.providerMetadata ? { providerMetadata: turn.providerMetadata } : {}),
  };
}

const OPTIONAL_USAGE = ['cacheReadTokens', 'cacheWriteTokens', 'reasoningTokens'] as const;
const ZERO_USAGE: UsageTotals = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };

function addUsage(a: UsageTotals, b: UsageTotals): UsageTotals {
  const out: UsageTotals = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
  for (const key of OPTIONAL_USAGE) if (a[key] !== undefined || b[key] !== undefined) out[key] = (a[key] ?? 0) + (b[key] ?? 0);
  return out;
}

const userMessage = (content: string): Json => ({ role: 'user', content });

const modelCallInput = (context: RunContext, phase: 'loop' | 'finalize'): ModelCallInput =>
  ({ step: context.step, phase, deadlineAt: context.deadlineAt, models: context.models ?? null });

export const runMachine = setup({
  types: {
    context: {} as RunContext,
    events: {} as RunEvent,
    input: {} as RunInput,
  },
  actors: {
    toolCall: toolCallMachine,
    saveCheckpoint: fromPromise<void, { at: string }>(notProvided('saveCheckpoint')),
    callModel: fromPromise<ModelCallOutput, ModelCallInput>(notProvided('callModel')),
    checkBatchPolicy: fromPromise<PolicyOutput, { step: number }>(notProvided('checkBatchPolicy')),
    validateOutput: fromPromise<OutputCheck, ValidateInput>(notProvided('validateOutput')),
    beginVerify: fromPromise<void, { attempt: number }>(notProvided('beginVerify')),
    runVerifier: fromPromise<VerifierOutput, VerifyInput>(notProvided('runVerifier')),
  },
  guards: {
    stepsLeft: ({ context }) => context.step < context.maxSteps,
    drainRequested: ({ context }) => context.drainRequested,
    drainedInFinalization: ({ context }) => context.drainedIn === 'finalize',
    startsInFinalization: ({ context }) => context.toolNames.length === 0 && context.outputMode !== 'none',
    anyActive: ({ context }) => phasesOf(context).includes('active'),
    // A call's snapshot changed where the run is concerned: its phase is not the one the run holds.
    callPhaseChanged: ({ context, event }) => {
      const id = event.type.slice('xstate.snapshot.'.length);
      return context.batch.includes(id)
        && context.phases[id] !== callPhase((event as unknown as { snapshot: CallSnapshot }).snapshot);
    },
    anySuspended: ({ context }) => phasesOf(context).includes('suspended'),
    anyUnknown: ({ context }) => phasesOf(context).includes('unknown'),
    allEnded: ({ context }) => phasesOf(context).every((phase) => phase === 'ended'),
    hasToolCalls: ({ context }) => (context.lastTurn?.toolCalls.length ?? 0) > 0,
    // The model call that just finished returned a turn with tool calls.
    turnHasCalls: ({ event }) => {
      const output = (event as unknown as { output?: ModelCallOutput }).output;
      return output?.kind === 'turn' && output.turn.toolCalls.length > 0;
    },
    refused: ({ context }) => context.lastTurn?.finishReason === 'content-filter' || context.lastTurn?.finishReason === 'refusal',
    cutOff: ({ context }) => context.lastTurn?.finishReason === 'length',
    structured: ({ context }) => context.outputMode !== 'none',
    verifies: ({ context }) => context.verify,
    verifyAttemptsLeft: ({ context }) => context.verifyAttempts < context.maxVerifyAttempts,
    // Another finalization attempt fits within maxOutputAttempts after this failed one.
    repairLeft: ({ context }) => context.outputAttempts + 1 < context.maxOutputAttempts,
    // The settled output of the invoked actor that just finished has this kind.
    outputIs: ({ event }, params: { kind: string }) => (event as unknown as { output?: { kind?: string } }).output?.kind === params.kind,
    anyNotDispatched: ({ context }) => context.batch.some((id) => context.outputs[id]?.outcome === 'not-dispatched'),
    anyNotAdmitted: ({ context }) => context.batch.some((id) => context.outputs[id]?.outcome === 'not-admitted'),
    deadlinePassed: ({ context }) => context.batch.some((id) => context.outputs[id]?.reason === 'deadline'),
    // The run's plan (see RunPlan); without one, every stage has work.
    checksPolicy: ({ context }) => context.plan?.policy ?? true,
    durable: ({ context }) => context.plan?.durable ?? true,
  },
  actions: {
    recordTurn: assign(({ context, event }) => {
      const output = (event as unknown as { output: ModelCallOutput }).output;
      if (output.kind !== 'turn') return {};
      const { turn } = output;
      return {
        lastTurn: turn,
        step: context.step + 1,
        messages: [...context.messages, assistantMessage(turn)],
        usage: addUsage(context.usage, turn.usage),
        ...(turn.model ? { usageByModel: { ...context.usageByModel, [turn.model]: addUsage(context.usageByModel?.[turn.model] ?? ZERO_USAGE, turn.usage) } } : {}),
        ...(output.models !== undefined ? { models: output.models } : {}),
      };
    }),
    // One tool-call actor per call, with an id that is stable across restores.
    spawnCalls: enqueueActions(({ context, enqueue }) => {
      const turn = context.lastTurn!;
      const batch: string[] = [];
      const phases: Record<string, CallPhase> = {};
      turn.toolCalls.forEach((call, index) => {
        const id = `call-${turn.step}-${index}`;
        batch.push(id);
        phases[id] = 'active';
        enqueue.spawnChild('toolCall', {
          id,
          syncSnapshot: true,
          input: {
            runId: context.runId,
            modelStep: turn.step,
            toolCallId: call.toolCallId,
            toolName: call.toolName,
            args: call.args,
            finishReason: turn.finishReason,
            known: context.toolNames.includes(call.toolName),
            deadlineAt: context.deadlineAt,
            verdict: null,
            clientResult: null,
            batchSize: turn.toolCalls.length,
            receipt: null,
            approval: null,
            plan: context.plan?.calls[call.toolName] ?? null,
          },
        });
      });
      enqueue.assign({ batch, phases, outputs: {} });
    }),
    noteCallSnapshot: assign(({ context, event }) => {
      const id = event.type.slice('xstate.snapshot.'.length);
      if (!context.batch.includes(id)) return {};
      const snapshot = (event as unknown as { snapshot: CallSnapshot }).snapshot;
      return { phases: { ...context.phases, [id]: callPhase(snapshot) } };
    }),
    noteCallDone: assign(({ context, event }) => {
      const id = event.type.slice('xstate.done.actor.'.length);
      if (!context.batch.includes(id)) return {};
      const output = (event as unknown as { output: ToolCallOutput }).output;
      // The call's approval request joins the run's record; its receipt stays in its output until the step is folded.
      return {
        phases: { ...context.phases, [id]: 'ended' as const },
        outputs: { ...context.outputs, [id]: output },
        ...(output.approval ? { approvals: { ...context.approvals, [output.approval.approvalId]: output.approval } } : {}),
      };
    }),
    // The settle: hand each waiting call what the resume brought for it.
    deliverAnswers: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'RESUME') return;
      const phases = { ...context.phases };
      for (const [id, answer] of Object.entries(event.answers)) {
        if (!context.batch.includes(id) || phases[id] === 'ended') continue;
        enqueue.sendTo(id, { type: 'RECHECK', ...answer });
        phases[id] = 'active';
      }
      enqueue.assign({ phases });
    }),
    // Every call of the step answered: their answers join the history.
    foldAnswers: enqueueActions(({ context, enqueue }) => {
      const toolMessages: Json[] = context.batch.map((id) => {
        const out = context.outputs[id]!;
        return {
          role: 'tool',
          toolCallId: out.toolCallId,
          toolName: out.toolName,
          content: out.modelOutput,
          ...(out.isError ? { isError: true } : {}),
        };
      });
      // The step's receipts join the run's, in call-id order so that the record does not depend on which call ended first.
      const receipts = context.batch
        .map((id) => context.outputs[id]!.receipt)
        .filter((r): r is NonNullable<typeof r> => r !== null)
        .sort(byStepThenCall);
      for (const id of context.batch) enqueue.stopChild(id);
      enqueue.assign({
        messages: [...context.messages, ...toolMessages],
        receipts: receipts.length > 0 ? [...context.receipts, ...receipts] : context.receipts,
        batch: [], phases: {}, outputs: {},
      });
    }),
    takeTextCandidate: assign(({ context }) => ({
      candidate: { text: context.lastTurn?.text ?? '', output: context.lastTurn?.text ?? '' },
    })),
    askForFinalAnswer: assign(({ context }) => ({
      messages: [...context.messages, userMessage(context.outputMode === 'tool' ? RUN_PROMPTS.finalizeWithTool : RUN_PROMPTS.finalize)],
      outputAttempts: 0,
    })),
    stopWith: assign((_, params: { reason: string }) => ({ stopReason: params.reason })),
    stopOnBudget: assign(({ event }) => {
      const output = (event as unknown as { output: ModelCallOutput }).output;
      return { stopReason: 'budget-exceeded', stopDetails: output.kind === 'budget' ? output.details : null };
    }),
    failWith: assign(({ event }) => {
      const e = event as unknown as { output?: { error?: RunContext['error'] }; error?: unknown };
      const fromOutput = e.output?.error;
      if (fromOutput) return { error: fromOutput };
      const raw = e.error as { name?: string; code?: string; message?: string; retry?: ErrorData['retry'] } | undefined;
      return {
        error: {
          name: raw?.name ?? 'Error',
          code: raw?.code ?? 'internal',
          message: raw?.message ?? String(raw),
          ...(raw?.retry ? { retry: raw.retry } : {}),
        },
      };
    }),
  },
}).createMachine({
  id: 'run',
  version: String(RUN_MACHINE_VERSION),
  context: ({ input }) => ({
    ...input,
    step: 0,
    lastTurn: null,
    batch: [],
    phases: {},
    outputs: {},
    outputAttempts: 0,
    verifyAttempts: 0,
    candidate: null,
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    stopReason: null,
    stopDetails: null,
    error: null,
    drainRequested: false,
    drainedIn: null,
    models: input.models ?? null,
    plan: input.plan ?? null,
    // Set from the start, like every field, so the context never grows one (see the tool-call machine's context).
    usageByModel: {},
    receipts: [],
    approvals: {},
  }),
  // Handled at the root so that nothing a call or the host sends is dropped,
  // whatever state the run is in when it arrives. (The host sends RESUME only
  // once the run is at rest in `suspended` or `reconciling`.)
  on: {
    'xstate.snapshot.*': { guard: 'callPhaseChanged', actions: 'noteCallSnapshot' },
    'xstate.done.actor.*': { actions: 'noteCallDone' },
    STORE_FAILED: { target: '.failed', actions: assign({ error: ({ event }) => event.error }) },
    POLICY_VIOLATION: { target: '.failed', actions: assign({ error: ({ event }) => event.error }) },
    CANCEL: { target: '.stopped', actions: { type: 'stopWith', params: { reason: 'aborted' } } },
    DRAIN: { actions: assign({ drainRequested: true }) },
    RETRY_FAILED: {
      actions: assign(({ context, event }) => ({
        step: context.step + 1,
        outputAttempts: event.phase === 'finalize' ? context.outputAttempts + 1 : context.outputAttempts,
      })),
    },
  },
  initial: 'starting',
  states: {
    starting: {
      invoke: {
        src: 'saveCheckpoint',
        id: 'saveStart',
        input: { at: 'start' },
        onDone: [
          { guard: 'startsInFinalization', target: 'finalizing.admitting' },
          { target: 'loop' },
        ],
        onError: { target: 'failed', actions: 'failWith' },
      },
    },
    loop: {
      initial: 'admitting',
      states: {
        // The model-step boundary: where a drain takes effect and the step budget is checked.
        admitting: {
          always: [
            { guard: 'drainRequested', target: '#run.draining', actions: assign({ drainedIn: 'loop' as const }) },
            { guard: 'stepsLeft', target: 'callingModel' },
            { target: '#run.stopped', actions: { type: 'stopWith', params: { reason: 'max-steps' } } },
          ],
        },
        callingModel: {
          invoke: {
            src: 'callModel',
            id: 'callModel',
            input: ({ context }) => modelCallInput(context, 'loop'),
            onDone: [
              { guard: { type: 'outputIs', params: { kind: 'aborted' } }, target: '#run.stopped', actions: { type: 'stopWith', params: { reason: 'aborted' } } },
              { guard: { type: 'outputIs', params: { kind: 'deadline' } }, target: '#run.failed', actions: 'failWith' },
              { guard: { type: 'outputIs', params: { kind: 'budget' } }, target: '#run.stopped', actions: 'stopOnBudget' },
              // A turn with calls is saved by the first save its calls make (the
              // `executing` receipt, a suspension, a checkpoint): none of them has
              // an effect before that save, so a restore before it may ask the
              // model again, and one after it replays the turn (see decision 003).
              { guard: and(['turnHasCalls', 'checksPolicy']), target: 'checkingPolicy', actions: 'recordTurn' },
              { guard: 'turnHasCalls', target: 'awaitingCalls', actions: ['recordTurn', 'spawnCalls'] },
              { target: 'recordingTurn', actions: 'recordTurn' },
            ],
            onError: { target: '#run.failed', actions: 'failWith' },
          },
        },
        // A turn without calls is durable before the run goes on from it. (A
        // snapshot saved here with calls, by an earlier engine, dispatches them.)
        recordingTurn: {
          invoke: {
            src: 'saveCheckpoint',
            id: 'saveTurn',
            input: { at: 'turn' },
            onDone: [
              { guard: 'hasToolCalls', target: 'checkingPolicy' },
              { guard: 'refused', target: '#run.stopped', actions: { type: 'stopWith', params: { reason: 'refusal' } } },
              { guard: 'cutOff', target: '#run.stopped', actions: { type: 'stopWith', params: { reason: 'length' } } },
              { guard: 'structured', target: '#run.finalizing', actions: 'askForFinalAnswer' },
              { guard: 'verifies', target: '#run.verifying', actions: 'takeTextCandidate' },
              { target: '#run.completed', actions: 'takeTextCandidate' },
            ],
            onError: { target: '#run.failed', actions: 'failWith' },
          },
        },
        // The execution policy decides for the whole batch before any call starts.
        checkingPolicy: {
          invoke: {
            src: 'checkBatchPolicy',
            id: 'checkBatchPolicy',
            input: ({ context }) => ({ step: context.step }),
            onDone: [
              { guard: { type: 'outputIs', params: { kind: 'violation' } }, target: '#run.failed', actions: 'failWith' },
              { target: 'dispatching' },
            ],
            onError: { target: '#run.failed', actions: 'failWith' },
          },
        },
        dispatching: {
          entry: 'spawnCalls',
          always: 'awaitingCalls',
        },
        // Decided level-triggered from the calls' phases, only once none moves. Once every call has ended,
        // the step's answers are folded into the history unless a call says the run must stop.
        awaitingCalls: {
          always: [
            { guard: and(['allEnded', 'anyNotDispatched', 'refused']), target: '#run.stopped', actions: { type: 'stopWith', params: { reason: 'refusal' } } },
            { guard: and(['allEnded', 'anyNotDispatched']), target: '#run.stopped', actions: { type: 'stopWith', params: { reason: 'length' } } },
            {
              guard: and(['allEnded', 'anyNotAdmitted', 'deadlinePassed']),
              target: '#run.failed',
              actions: assign({ error: { name: 'ExecutionPolicyError', code: 'deadline_exceeded', message: 'The execution deadline elapsed.' } }),
            },
            { guard: and(['allEnded', 'anyNotAdmitted']), target: '#run.stopped', actions: { type: 'stopWith', params: { reason: 'aborted' } } },
            { guard: and(['allEnded', 'durable']), target: 'checkpointing', actions: 'foldAnswers' },
            // With no store there is nothing to save the step to.
            { guard: 'allEnded', target: 'admitting', actions: 'foldAnswers' },
            { guard: and([not('anyActive'), 'anyUnknown']), target: '#run.reconciling' },
            { guard: and([not('anyActive'), 'anySuspended']), target: '#run.suspending' },
          ],
        },
        // The step's answers are saved before the next model call.
        checkpointing: {
          invoke: {
            src: 'saveCheckpoint',
            id: 'saveStep',
            input: { at: 'step' },
            onDone: { target: 'admitting' },
            onError: { target: '#run.failed', actions: 'failWith' },
          },
        },
      },
    },
    finalizing: {
      initial: 'admitting',
      states: {
        admitting: {
          always: [
            { guard: 'drainRequested', target: '#run.draining', actions: assign({ drainedIn: 'finalize' as const }) },
            { guard: 'stepsLeft', target: 'callingModel' },
            { target: '#run.stopped', actions: { type: 'stopWith', params: { reason: 'max-steps' } } },
          ],
        },
        callingModel: {
          invoke: {
            src: 'callModel',
            id: 'callModel',
            input: ({ context }) => modelCallInput(context, 'finalize'),
            onDone: [
              { guard: { type: 'outputIs', params: { kind: 'aborted' } }, target: '#run.stopped', actions: { type: 'stopWith', params: { reason: 'aborted' } } },
              { guard: { type: 'outputIs', params: { kind: 'deadline' } }, target: '#run.failed', actions: 'failWith' },
              { guard: { type: 'outputIs', params: { kind: 'budget' } }, target: '#run.stopped', actions: 'stopOnBudget' },
              { target: 'recordingTurn', actions: 'recordTurn' },
            ],
            onError: { target: '#run.failed', actions: 'failWith' },
          },
        },
        recordingTurn: {
          invoke: {
            src: 'saveCheckpoint',
            id: 'saveTurn',
            input: { at: 'turn' },
            onDone: [
              { guard: 'refused', target: '#run.stopped', actions: { type: 'stopWith', params: { reason: 'refusal' } } },
              { target: 'validating' },
            ],
            onError: { target: '#run.failed', actions: 'failWith' },
          },
        },
        // Schema validation (and repair): a valid shape is not yet a verified answer.
        validating: {
          invoke: {
            src: 'validateOutput',
            id: 'validateOutput',
            input: ({ context }) => ({ step: context.step, turn: context.lastTurn!, attempt: context.outputAttempts + 1 }),
            onDone: [
              {
                guard: and([{ type: 'outputIs', params: { kind: 'valid' } }, 'verifies']),
                target: '#run.verifying',
                actions: assign(({ event, context }) => ({
                  candidate: { text: context.lastTurn?.text ?? '', output: event.output.kind === 'valid' ? event.output.output : null },
                })),
              },
              {
                guard: { type: 'outputIs', params: { kind: 'valid' } },
                target: '#run.completed',
                actions: assign(({ event, context }) => ({
                  candidate: { text: context.lastTurn?.text ?? '', output: event.output.kind === 'valid' ? event.output.output : null },
                })),
              },
              {
                guard: 'repairLeft',
                target: 'admitting',
                actions: assign(({ event, context }) => ({
                  outputAttempts: context.outputAttempts + 1,
                  messages: [...context.messages, userMessage(RUN_PROMPTS.repair(event.output.kind === 'invalid' ? event.output.issue : ''))],
                })),
              },
              {
                target: '#run.stopped',
                actions: assign(({ event, context }) => ({
                  outputAttempts: context.outputAttempts + 1,
                  stopReason: 'output-attempts-exhausted',
                  stopDetails: { issue: event.output.kind === 'invalid' ? event.output.issue : '' },
                })),
              },
            ],
            onError: { target: '#run.failed', actions: 'failWith' },
          },
        },
      },
    },
    verifying: {
      initial: 'admitting',
      // A restore that finds the run here runs the verifier again on the same
      // candidate, and that repeat counts as a new attempt.
      on: { RESTORED: { target: '.admitting' } },
      states: {
        admitting: {
          always: [
            { guard: 'verifyAttemptsLeft', target: 'beginning', actions: assign({ verifyAttempts: ({ context }) => context.verifyAttempts + 1 }) },
            { target: '#run.stopped', actions: { type: 'stopWith', params: { reason: 'verification-attempts-exhausted' } } },
          ],
        },
        // The attempt count is durable before the verifier runs.
        beginning: {
          invoke: {
            src: 'beginVerify',
            id: 'beginVerify',
            input: ({ context }) => ({ attempt: context.verifyAttempts }),
            onDone: { target: 'checking' },
            onError: { target: '#run.failed', actions: 'failWith' },
          },
        },
        checking: {
          invoke: {
            src: 'runVerifier',
            id: 'runVerifier',
            input: ({ context }) => ({ attempt: context.verifyAttempts, candidate: context.candidate!, deadlineAt: context.deadlineAt }),
            onDone: [
              { guard: { type: 'outputIs', params: { kind: 'verified' } }, target: '#run.completed' },
              { guard: { type: 'outputIs', params: { kind: 'restarted' } }, target: 'admitting' },
              { guard: { type: 'outputIs', params: { kind: 'aborted' } }, target: '#run.stopped', actions: { type: 'stopWith', params: { reason: 'aborted' } } },
              { guard: { type: 'outputIs', params: { kind: 'deadline' } }, target: '#run.failed', actions: 'failWith' },
              {
                guard: { type: 'outputIs', params: { kind: 'inconclusive' } },
                target: '#run.stopped',
                actions: assign(({ event }) => ({
                  stopReason: 'verification-inconclusive',
                  stopDetails: { reason: event.output.kind === 'inconclusive' ? event.output.reason : '' },
                })),
              },
              {
                guard: and(['verifyAttemptsLeft', 'structured']),
                target: '#run.finalizing',
                actions: assign(({ event, context }) => ({
                  candidate: null,
                  outputAttempts: 0,
                  messages: [...context.messages, userMessage(RUN_PROMPTS.feedback(event.output.kind === 'rejected' ? event.output.feedback : ''))],
                })),
              },
              {
                guard: 'verifyAttemptsLeft',
                target: '#run.loop',
                actions: assign(({ event, context }) => ({
                  candidate: null,
                  messages: [...context.messages, userMessage(RUN_PROMPTS.feedback(event.output.kind === 'rejected' ? event.output.feedback : ''))],
                })),
              },
              {
                target: '#run.stopped',
                actions: assign(({ event }) => ({
                  stopReason: 'verification-attempts-exhausted',
                  stopDetails: { feedback: event.output.kind === 'rejected' ? event.output.feedback : '' },
                })),
              },
            ],
            onError: { target: '#run.failed', actions: 'failWith' },
          },
        },
      },
    },
    // The run waits on approvals or client results; the record is saved first.
    suspending: {
      invoke: {
        src: 'saveCheckpoint',
        id: 'saveSuspension',
        input: { at: 'suspend' },
        // A resume may have answered the calls while this save was under way.
        onDone: { target: 'settling' },
        onError: { target: 'failed', actions: 'failWith' },
      },
    },
    suspended: {
      tags: ['suspended'],
      on: { RESUME: { target: 'settling', actions: 'deliverAnswers' } },
    },
    // Drained at a model-step boundary: saved, then at rest until a resume (on any executor) goes on.
    draining: {
      invoke: {
        src: 'saveCheckpoint',
        id: 'saveDrain',
        input: { at: 'drain' },
        onDone: { target: 'drained' },
        onError: { target: 'failed', actions: 'failWith' },
      },
    },
    drained: {
      tags: ['drained'],
      on: {
        RESUME: [
          { guard: 'drainedInFinalization', target: 'finalizing.admitting', actions: assign({ drainRequested: false, drainedIn: null }) },
          { target: 'loop.admitting', actions: assign({ drainRequested: false, drainedIn: null }) },
        ],
      },
    },
    // An effect whose outcome is unknown: only an operator's answer moves on.
    reconciling: {
      tags: ['needs-reconciliation'],
      on: { RESUME: { target: 'settling', actions: 'deliverAnswers' } },
    },
    // The settle region: every waiting call got its answer; once they have all
    // moved, the run goes on with the step (whose checkpoint precedes any model call).
    settling: {
      always: [
        { guard: 'anyActive', target: 'loop.awaitingCalls' },
        { guard: 'anyUnknown', target: 'reconciling' },
        { target: 'suspended' },
      ],
    },
    completed: { type: 'final', tags: ['terminal'] },
    stopped: { type: 'final', tags: ['terminal'] },
    failed: { type: 'final', tags: ['terminal'] },
  },
});

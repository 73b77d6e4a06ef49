/**
 * The run actor: the life of one native run. Pure: model calls, saves,
 * validation and the verifier are named actors the runtime provides.
 *
 *   starting → loop (model call, record the turn, policy, dispatch, settle the
 *   calls, checkpoint) → finalizing (structured output, repair) → verifying →
 *   completed | stopped | failed, or suspended until a resume settles it.
 */
import { and, assign, not } from 'xstate';
import { modelCallInput, runSetup } from './run-setup.js';
import { finalizingState, verifyingState } from './run-finish.js';
import { endingState } from './run-memory.js';
import { drainedChatStates, failingState, stoppingState, suspendedStates } from './run-chat.js';
import { handingOffState } from './run-handoff.js';
export { callPhase, RUN_PROMPTS } from './run-setup.js';

/**
 * Bumped whenever a stored snapshot of an older version would not restore as
 * it is: each bump comes with a migration (src/agent/migrations.ts). 2: the
 * receipts and approval requests moved into the snapshot. 3: the execution
 * budget can stop a model call (`budget-exceeded`), and a resume's settle can
 * fail the run on the execution policy (POLICY_VIOLATION).
 */
export const RUN_MACHINE_VERSION = 3;

/** What `admitting` lets through to the next model call; a step's checkpoint that passes it goes there directly. */
const admitsModelCall = and([not('drainRequested'), 'stepsLeft']);

/** A turn without calls that ends the run as it is: `recordingTurn` would take it to `ending`, with nothing run between. */
const endsWithAnswer = and([not('hasToolCalls'), not('refused'), not('cutOff'), not('structured'), not('verifies')]);

/**
 * awaitingCalls' own handling of a call's done event. The done event of the batch's last open call, where the state
 * would go on to fold the step (no call refused, cut off or not admitted, no handoff), goes there itself: one
 * microstep, not the root's note of the call and then the state's decision (XState's microsteps are most of a step's
 * CPU). Any other done event is noted as the root notes it. (Typed loosely: XState's types take an actor's done
 * event by wildcard only at the root.)
 */
const lastCallDone = {
  'xstate.done.actor.*': [
    { guard: and(['endsStepPlainly', 'durable']), target: 'checkpointing', actions: ['noteCallDone', 'foldAnswers'] },
    { guard: and(['endsStepPlainly', admitsModelCall]), target: 'callingModel', actions: ['noteCallDone', 'foldAnswers'] },
    { guard: 'endsStepPlainly', target: 'admitting', actions: ['noteCallDone', 'foldAnswers'] },
    { actions: 'noteCallDone' },
  ],
} as {};

export const runMachine = runSetup.createMachine({
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
    // A call tells the run where it comes to rest; a call spawned by an earlier engine sends its every snapshot.
    CALL_PHASE: { guard: 'callPhaseSent', actions: 'noteCallPhase' },
    'xstate.snapshot.*': { guard: 'callPhaseChanged', actions: 'noteCallSnapshot' },
    'xstate.done.actor.*': { actions: 'noteCallDone' },
    STORE_FAILED: { target: '.failed', actions: assign({ error: ({ event }) => event.error }) },
    POLICY_VIOLATION: { target: '.failing', actions: assign({ error: ({ event }) => event.error }) },
    CANCEL: { target: '.stopping', actions: [{ type: 'stopWith', params: { reason: 'aborted' } }, 'noteCancel'] },
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
            { guard: admitsModelCall, target: 'callingModel' },
            { target: '#run.stopping', actions: { type: 'stopWith', params: { reason: 'max-steps' } } },
          ],
        },
        callingModel: {
          invoke: {
            src: 'callModel',
            id: 'callModel',
            input: ({ context }) => modelCallInput(context, 'loop'),
            onDone: [
              { guard: { type: 'outputIs', params: { kind: 'aborted' } }, target: '#run.stopping', actions: { type: 'stopWith', params: { reason: 'aborted' } } },
              { guard: { type: 'outputIs', params: { kind: 'deadline' } }, target: '#run.failing', actions: 'failWith' },
              { guard: { type: 'outputIs', params: { kind: 'budget' } }, target: '#run.stopping', actions: 'stopOnBudget' },
              // A turn with calls is saved by the first save its calls make (the
              // `executing` receipt, a suspension, a checkpoint): none of them has
              // an effect before that save, so a restore before it may ask the
              // model again, and one after it replays the turn (see decision 003).
              { guard: and(['turnHasCalls', 'checksPolicy']), target: 'checkingPolicy', actions: 'recordTurn' },
              { guard: 'turnHasCalls', target: 'awaitingCalls', actions: ['recordTurn', 'spawnCalls'] },
              { target: 'answering', actions: 'recordTurn' },
            ],
            onError: { target: '#run.failing', actions: 'failWith' },
          },
        },
        // A turn without calls that is the run's answer (no structured output, no verifier, not refused or cut off)
        // goes straight to the run's end, whose commit saves it with the result: nothing runs between the two, so
        // the run ends with one commit fewer. A crash before that commit asks the model again on resume (a model
        // call is not an effect), and the result is returned only once it is committed.
        answering: {
          always: [
            { guard: endsWithAnswer, target: '#run.ending', actions: 'takeTextCandidate' },
            { target: 'recordingTurn' },
          ],
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
              { guard: 'refused', target: '#run.stopping', actions: { type: 'stopWith', params: { reason: 'refusal' } } },
              { guard: 'cutOff', target: '#run.stopping', actions: { type: 'stopWith', params: { reason: 'length' } } },
              { guard: 'structured', target: '#run.finalizing', actions: 'askForFinalAnswer' },
              { guard: 'verifies', target: '#run.verifying', actions: 'takeTextCandidate' },
              { target: '#run.ending', actions: 'takeTextCandidate' },
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
              { guard: { type: 'outputIs', params: { kind: 'violation' } }, target: '#run.failing', actions: 'failWith' },
              { target: 'dispatching' },
            ],
            onError: { target: '#run.failing', actions: 'failWith' },
          },
        },
        dispatching: {
          entry: 'spawnCalls',
          always: 'awaitingCalls',
        },
        // Decided level-triggered from the calls' phases, only once none moves. Once every call has ended,
        // the step's answers are folded into the history unless a call says the run must stop. (The plain fold is
        // taken by the last call's done event itself, lastCallDone above; its branches here are the level-triggered
        // fallback.)
        awaitingCalls: {
          on: lastCallDone,
          always: [
            { guard: and(['allEnded', 'anyNotDispatched', 'refused']), target: '#run.stopping', actions: { type: 'stopWith', params: { reason: 'refusal' } } },
            { guard: and(['allEnded', 'anyNotDispatched']), target: '#run.stopping', actions: { type: 'stopWith', params: { reason: 'length' } } },
            {
              guard: and(['allEnded', 'anyNotAdmitted', 'deadlinePassed']),
              target: '#run.failing',
              actions: assign({ error: { name: 'ExecutionPolicyError', code: 'deadline_exceeded', message: 'The execution deadline elapsed.' } }),
            },
            { guard: and(['allEnded', 'anyNotAdmitted']), target: '#run.stopping', actions: { type: 'stopWith', params: { reason: 'aborted' } } },
            { guard: and(['allEnded', 'handsOff']), target: 'handingOff', actions: ['takeHandoff', 'foldAnswers'] },
            { guard: and(['allEnded', 'durable']), target: 'checkpointing', actions: 'foldAnswers' },
            // With no store there is nothing to save the step to.
            { guard: 'allEnded', target: 'admitting', actions: 'foldAnswers' },
            { guard: and([not('anyActive'), 'anyUnknown']), target: '#run.reconciling' },
            { guard: and([not('anyActive'), 'anySuspended']), target: '#run.suspending' },
          ],
        },
        handingOff: handingOffState,
        // The step's answers are saved before the next model call. (Straight to it when `admitting` would let it
        // through: one microstep a step fewer, and XState's microsteps are most of a step's CPU.)
        checkpointing: {
          invoke: {
            src: 'saveCheckpoint',
            id: 'saveStep',
            input: { at: 'step' },
            onDone: [
              { guard: admitsModelCall, target: 'callingModel' },
              { target: 'admitting' },
            ],
            onError: { target: '#run.failed', actions: 'failWith' },
          },
        },
      },
    },
    finalizing: finalizingState, verifying: verifyingState,
    ending: endingState,
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
    ...suspendedStates,
    // Drained at a model-step boundary: saved, then at rest until a resume (on any executor) goes on.
    draining: {
      invoke: {
        src: 'saveCheckpoint',
        id: 'saveDrain',
        input: { at: 'drain' },
        onDone: [{ guard: 'projectsChat', target: 'publishingDrain' }, { target: 'drained' }],
        onError: { target: 'failed', actions: 'failWith' },
      },
    },
    ...drainedChatStates,
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
        { guard: 'projectsChat', target: 'publishingSuspension' },
        { target: 'suspended' },
      ],
    },
    // On the way to `stopped` / `failed`: a run with a chat commits its end and writes the chat first (run-chat.ts).
    stopping: stoppingState, failing: failingState,
    completed: { type: 'final', tags: ['terminal'] },
    stopped: { type: 'final', tags: ['terminal'] },
    failed: { type: 'final', tags: ['terminal'] },
  },
});

/**
 * The run chart's last stages: finalizing (the structured answer, with its
 * repair turns) and verifying (the verifier's verdict, with its feedback
 * turns). Part of the run machine (run.ts).
 */
import { and, assign } from 'xstate';
import { modelCallInput, RUN_PROMPTS, runSetup, userMessage } from './run-setup.js';

/** After the tool loop: the final answer, and its repair while it does not match the schema. */
export const finalizingState = runSetup.createStateConfig({
  initial: 'admitting',
  states: {
    admitting: {
      always: [
        { guard: 'drainRequested', target: '#run.draining', actions: assign({ drainedIn: 'finalize' as const }) },
        { guard: 'stepsLeft', target: 'callingModel' },
        { target: '#run.stopping', actions: { type: 'stopWith', params: { reason: 'max-steps' } } },
      ],
    },
    callingModel: {
      invoke: {
        src: 'callModel',
        id: 'callModel',
        input: ({ context }) => modelCallInput(context, 'finalize'),
        onDone: [
          { guard: { type: 'outputIs', params: { kind: 'aborted' } }, target: '#run.stopping', actions: { type: 'stopWith', params: { reason: 'aborted' } } },
          { guard: { type: 'outputIs', params: { kind: 'deadline' } }, target: '#run.failing', actions: 'failWith' },
          { guard: { type: 'outputIs', params: { kind: 'budget' } }, target: '#run.stopping', actions: 'stopOnBudget' },
          { target: 'recordingTurn', actions: 'recordTurn' },
        ],
        onError: { target: '#run.failing', actions: 'failWith' },
      },
    },
    recordingTurn: {
      invoke: {
        src: 'saveCheckpoint',
        id: 'saveTurn',
        input: { at: 'turn' },
        onDone: [
          { guard: 'refused', target: '#run.stopping', actions: { type: 'stopWith', params: { reason: 'refusal' } } },
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
            target: '#run.ending',
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
            target: '#run.stopping',
            actions: assign(({ event, context }) => ({
              outputAttempts: context.outputAttempts + 1,
              stopReason: 'output-attempts-exhausted',
              stopDetails: { issue: event.output.kind === 'invalid' ? event.output.issue : '' },
            })),
          },
        ],
        onError: { target: '#run.failing', actions: 'failWith' },
      },
    },
  },
});

/** The verifier judges the candidate answer: verified, rejected with feedback (another attempt), or inconclusive. */
export const verifyingState = runSetup.createStateConfig({
  initial: 'admitting',
  // A restore that finds the run here runs the verifier again on the same
  // candidate, and that repeat counts as a new attempt.
  on: { RESTORED: { target: '.admitting' } },
  states: {
    admitting: {
      always: [
        { guard: 'verifyAttemptsLeft', target: 'beginning', actions: assign({ verifyAttempts: ({ context }) => context.verifyAttempts + 1 }) },
        { target: '#run.stopping', actions: { type: 'stopWith', params: { reason: 'verification-attempts-exhausted' } } },
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
          { guard: { type: 'outputIs', params: { kind: 'verified' } }, target: '#run.ending' },
          { guard: { type: 'outputIs', params: { kind: 'restarted' } }, target: 'admitting' },
          { guard: { type: 'outputIs', params: { kind: 'aborted' } }, target: '#run.stopping', actions: { type: 'stopWith', params: { reason: 'aborted' } } },
          { guard: { type: 'outputIs', params: { kind: 'deadline' } }, target: '#run.failing', actions: 'failWith' },
          {
            guard: { type: 'outputIs', params: { kind: 'inconclusive' } },
            target: '#run.stopping',
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
            target: '#run.stopping',
            actions: assign(({ event }) => ({
              stopReason: 'verification-attempts-exhausted',
              stopDetails: { feedback: event.output.kind === 'rejected' ? event.output.feedback : '' },
            })),
          },
        ],
        onError: { target: '#run.failing', actions: 'failWith' },
      },
    },
  },
});

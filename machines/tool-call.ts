/**
 * The tool-call actor: one per call the model makes, the eight stages of the
 * tool path as states, in order (with the check of the call's arguments between
 * the policy and the approval; the first stage, the finish-reason gate, is the
 * policy stage's first transition). Pure: every effect is a named actor that the
 * runtime provides (`machine.provide`). Every way a call ends is its own final
 * state; `unknownEffect` is a stable state that only a reconciliation leaves.
 */
import { and, assign, emit, enqueueActions, not } from 'xstate';
import { after, callFacts, invalidArguments, toAdmission, toApproval, toEffectIdentity, toolCallSetup, withVerdict } from './tool-call-setup.js';
import type { ToolCallOutput } from './types.js';
import { effectIdentityState, executionState, resultReceiptState } from './tool-call-effect.js';
import { delegationState } from './sub-agent.js';

export { byStepThenCall, receiptKey } from './tool-call-setup.js';

export const TOOL_CALL_MACHINE_VERSION = 2;

export const toolCallMachine = toolCallSetup.createMachine({
  id: 'toolCall',
  version: String(TOOL_CALL_MACHINE_VERSION),
  // Every field is set from the start (none is added later): V8 keeps an object that grows new fields in a slow
  // dictionary form, and XState copies the context on every assignment.
  context: ({ input }) => ({
    ...input,
    plan: input.plan ?? null,
    retried: false,
    argumentsChecked: null,
    clientRequested: false,
    outcome: null,
    modelOutput: null,
    isError: false,
    reason: null,
  }),
  // 1. A refused or cut-off turn dispatches none of its calls (the allowlist's first transition). A dispatchable
  // call whose arguments a JSON Schema checks is checked here, on entry, so that the policy stage's first
  // microstep already decides from the verdict (a gate of its own before the policy was one microstep a call more).
  entry: enqueueActions(({ check, enqueue }) => {
    if (check('dispatchable') && check('checksArgumentsInline')) enqueue('checkArgumentsInline');
  }),
  initial: 'policy',
  states: {
    // 2. Policy. The run already checked the batch against the execution policy;
    // here an unknown tool is refused and the onToolCall guardrails block or rewrite.
    policy: {
      initial: 'allowlist',
      states: {
        allowlist: {
          always: [
            {
              guard: not('dispatchable'),
              target: '#toolCall.notDispatched',
              actions: assign({ outcome: 'not-dispatched' as const, modelOutput: 'Tool call not dispatched: the turn was cut off or refused.', isError: true }),
            },
            { guard: and(['toolKnown', 'runsGuardrails']), target: 'guardrails' },
            // The arguments were checked on the way in: the argument-check stage has nothing left to do.
            { guard: 'argumentsRefused', target: '#toolCall.invalidArguments', actions: 'refuseArguments' },
            ...after('argumentsPassed', toApproval),
            { guard: 'toolKnown', target: '#toolCall.argumentCheck' },
            {
              target: '#toolCall.policyViolation',
              actions: assign(({ context }) => ({
                outcome: 'policy-violation' as const,
                modelOutput: `Tool "${context.toolName}" is not available.`,
                isError: true,
              })),
            },
          ],
        },
        guardrails: {
          invoke: {
            src: 'guardCall',
            id: 'guardCall',
            input: ({ context }) => context,
            onDone: [
              {
                guard: { type: 'outputIs', params: { kind: 'block' } },
                target: '#toolCall.blocked',
                actions: assign(({ event }) => ({
                  outcome: 'blocked' as const,
                  modelOutput: `Tool call blocked: ${event.output.kind === 'block' ? event.output.reason : ''}`,
                  isError: true,
                })),
              },
              {
                guard: { type: 'outputIs', params: { kind: 'rewrite' } },
                target: '#toolCall.argumentCheck',
                actions: assign({ args: ({ event, context }) => (event.output.kind === 'rewrite' ? event.output.args : context.args) }),
              },
              { target: '#toolCall.argumentCheck' },
            ],
            onError: { target: '#toolCall.failed', actions: 'noteError' },
          },
        },
      },
    },
    // The arguments (as the guardrails left them) against the tool's `parameters`,
    // before any human is asked about them or any effect can start.
    argumentCheck: {
      invoke: {
        src: 'checkArguments',
        id: 'checkArguments',
        input: ({ context }) => context,
        onDone: [
          {
            guard: { type: 'outputIs', params: { kind: 'invalid' } },
            target: 'invalidArguments',
            actions: assign(({ event }) => invalidArguments(event.output.kind === 'invalid' ? event.output.message : '')),
          },
          ...toApproval,
        ],
        // A Standard Schema validator that throws: the check itself failed.
        onError: { target: 'failed', actions: 'noteError' },
      },
    },
    // 3. Approval: an outcome a receipt already records (then no gate at all), a
    // verdict the run asked for and a resume brought (it decides, whatever the
    // predicate says now), or needsApproval (boolean or predicate).
    approval: {
      initial: 'deciding',
      states: {
        deciding: {
          invoke: {
            src: 'decideApproval',
            id: 'decideApproval',
            input: ({ context }) => context,
            onDone: [
              { guard: and([{ type: 'outputIs', params: { kind: 'wait' } }, 'hasApproval']), target: 'awaitingApproval' },
              { guard: { type: 'outputIs', params: { kind: 'wait' } }, target: 'issuing' },
              {
                guard: { type: 'outputIs', params: { kind: 'denied' } },
                target: '#toolCall.denied',
                actions: assign(({ event }) => ({
                  outcome: 'denied' as const,
                  modelOutput: `Tool call denied. Reason: ${event.output.kind === 'denied' ? event.output.reason : ''}`,
                  isError: true,
                })),
              },
              // 'receipt': the call already ran; its receipt answers it.
              { guard: { type: 'outputIs', params: { kind: 'receipt' } }, target: '#toolCall.effectIdentity' },
              ...toAdmission,
            ],
            onError: { target: '#toolCall.failed', actions: 'noteError' },
          },
        },
        // The request's id and single token are issued once, and announced by this transition.
        issuing: {
          invoke: {
            src: 'issueApproval',
            id: 'issueApproval',
            input: ({ context }) => context,
            onDone: {
              target: 'awaitingApproval',
              actions: [
                assign(({ event, context }) => ({
                  approval: {
                    approvalId: event.output.approvalId, token: event.output.token,
                    toolCallId: context.toolCallId, modelStep: context.modelStep, client: event.output.client,
                  },
                  clientRequested: context.clientRequested || event.output.client,
                })),
                emit(({ context, event }) => ({
                  type: 'approval-request' as const,
                  approval: { approvalId: event.output.approvalId, token: event.output.token, ...callFacts(context) },
                })),
                // A gated client tool waits for both: its verdict and its result come in one resume.
                enqueueActions(({ context, event, enqueue }) => {
                  if (event.output.client) enqueue.emit({ type: 'client-call-request', call: callFacts(context) });
                }),
              ],
            },
            onError: { target: '#toolCall.failed', actions: 'noteError' },
          },
        },
        awaitingApproval: {
          tags: ['suspended', 'awaiting-approval'],
          entry: 'noteSuspended',
          on: {
            RECHECK: {
              target: 'deciding',
              actions: assign(({ event, context }) => {
                const verdict = event.verdict ?? context.verdict;
                return { verdict, clientResult: event.clientResult ?? context.clientResult, approval: withVerdict(context, verdict) };
              }),
            },
          },
        },
      },
    },
    // 4. Admission: deadline and cancellation, checked right before the effect.
    admission: {
      invoke: {
        src: 'admit',
        id: 'admit',
        input: ({ context }) => context,
        onDone: [
          {
            guard: { type: 'outputIs', params: { kind: 'refused' } },
            target: 'notAdmitted',
            actions: assign(({ event }) => ({
              outcome: 'not-admitted' as const,
              reason: event.output.kind === 'refused' ? event.output.reason : null,
              modelOutput: 'Tool call not admitted.',
              isError: true,
            })),
          },
          ...toEffectIdentity,
        ],
        onError: { target: 'failed', actions: 'noteError' },
      },
    },
    // 5. Effect identity: [modelStep, toolCallId] and the durable `executing`
    // receipt. Only a receipt written here, in this process, permits the effect.
    effectIdentity: effectIdentityState,
    // 6. Execution. Guarded by the permit: a restart of this invocation after a
    // restore finds none and re-decides from the receipt.
    execution: executionState,
    // 6'. A sub-agent's effect: its child run, driven to its next rest (machines/sub-agent.ts).
    delegation: delegationState,
    // 7. The raw result (or the error the tool threw) is committed before
    // validation, projection and onToolResult decide what the model sees
    // (for a tool with none of them, the checkpoint commits it).
    resultReceipt: resultReceiptState,
    // 8. Checkpoint: the run's record holds the answer before the run goes on
    // from it (for the batch's last open call, the run's step checkpoint does).
    checkpoint: {
      invoke: {
        src: 'checkpoint',
        id: 'checkpoint',
        input: ({ context }) => ({ batchSize: context.batchSize }),
        onDone: [
          { guard: { type: 'outcomeIs', params: { outcome: 'failed' } }, target: 'failed' },
          { guard: { type: 'outcomeIs', params: { outcome: 'validation-failure' } }, target: 'validationFailure' },
          { guard: { type: 'outcomeIs', params: { outcome: 'projection-failure' } }, target: 'projectionFailure' },
          { guard: { type: 'outcomeIs', params: { outcome: 'client-result' } }, target: 'clientResult' },
          { guard: { type: 'outcomeIs', params: { outcome: 'unstorable-result' } }, target: 'unstorableResult' },
          { target: 'completed' },
        ],
        onError: { target: 'failed', actions: 'noteError' },
      },
    },
    // An `executing` receipt without an outcome: the effect may or may not have
    // happened. Nothing is guessed; an operator reconciles it.
    unknownEffect: {
      tags: ['needs-reconciliation'],
      entry: [
        assign({ outcome: 'unknown-effect' as const, isError: true, modelOutput: 'The outcome of this tool call is unknown.' }),
        'noteUnknown',
      ],
      on: {
        RECHECK: [
          // Run once more: the call takes the path again from the policy, gated like a new call.
          {
            guard: 'retryAsked',
            target: 'policy',
            actions: assign(({ event, context }) => ({
              verdict: event.verdict ?? context.verdict,
              approval: withVerdict(context, event.verdict),
              retried: true,
              argumentsChecked: null,
              outcome: null,
              modelOutput: null,
              isError: false,
              reason: null,
            })),
          },
          // An outcome was recorded for it: the receipt answers.
          {
            target: 'effectIdentity',
            actions: assign(({ event, context }) => ({
              receipt: event.receipt ?? context.receipt, outcome: null, modelOutput: null, isError: false, reason: null,
            })),
          },
        ],
      },
    },
    notDispatched: { type: 'final' },
    policyViolation: { type: 'final' },
    blocked: { type: 'final' },
    invalidArguments: { type: 'final' },
    denied: { type: 'final' },
    notAdmitted: { type: 'final' },
    failed: { type: 'final' },
    validationFailure: { type: 'final' },
    projectionFailure: { type: 'final' },
    clientResult: { type: 'final' },
    unstorableResult: { type: 'final' },
    completed: { type: 'final' },
  },
  output: ({ context }): ToolCallOutput => ({
    toolCallId: context.toolCallId,
    toolName: context.toolName,
    modelStep: context.modelStep,
    outcome: context.outcome === 'completed' ? null : context.outcome,
    modelOutput: context.modelOutput,
    isError: context.isError,
    reason: context.reason,
    receipt: context.receipt,
    approval: context.approval,
  }),
});

/**
 * The tool-call actor: one per call the model makes, the eight stages of the
 * tool path as states, in order (with the check of the call's arguments between
 * the policy and the approval). Pure: every effect is a named actor that the
 * runtime provides (`machine.provide`). Every way a call ends is its own final
 * state; `unknownEffect` is a stable state that only a reconciliation leaves.
 */
import { and, assign, emit, enqueueActions, fromPromise, setup } from 'xstate';
import type {
  AdmitOutput, ArgumentsOutput, BeginEffectOutput, CallReceipt, CheckpointInput, ExecuteOutput, GuardOutput, ApprovalOutput,
  IssueApprovalOutput, PersistReceiptOutput, ProjectOutput, ReceiptWriteInput, RecordResultInput, ToolCallInput, ToolCallOutput,
  ToolCallContext, ToolCallEmitted, ToolCallEvent,
} from './types.js';

const notProvided = (name: string) => () => {
  throw new Error(`The ${name} actor was not provided to the tool-call machine.`);
};
const actionNotProvided = (name: string) => () => {
  throw new Error(`The ${name} action was not provided to the tool-call machine.`);
};

export const TOOL_CALL_MACHINE_VERSION = 2;

/** Effect identity: the root model turn and the provider's call id. */
export const receiptKey = (modelStep: number, toolCallId: string) => `${modelStep}:${toolCallId}`;

/** The order the run keeps receipts in: by model step, then by call id (never by which call ended first). */
export function byStepThenCall(a: CallReceipt, b: CallReceipt): number {
  return a.modelStep - b.modelStep || (a.toolCallId < b.toolCallId ? -1 : a.toolCallId > b.toolCallId ? 1 : 0);
}

/** The fields every receipt of this call carries. */
const receiptBase = (c: ToolCallContext, idempotent: boolean) => ({
  key: receiptKey(c.modelStep, c.toolCallId), toolCallId: c.toolCallId, toolName: c.toolName, modelStep: c.modelStep, idempotent,
});
/** The call's approval request with the verdict that answers it recorded (a retry passes the gate with it). */
const withVerdict = (c: ToolCallContext, verdict: ToolCallContext['verdict'] | undefined) =>
  (c.approval && verdict ? { ...c.approval, verdict } : c.approval);
const idempotentOf = (c: ToolCallContext) => c.receipt?.idempotent ?? false;
const callFacts = (c: ToolCallContext) => ({ toolCallId: c.toolCallId, toolName: c.toolName, args: c.args, modelStep: c.modelStep });

/*
 * Into a stage, passing those with no work for this call (see CallPlan): each
 * list is the transitions of one stage's entry, in order, ending with the
 * stage itself or the next stage's entry.
 */
const toEffectIdentity = [
  { guard: and(['opensReceipt', 'durable']), target: '#toolCall.effectIdentity.writingReceipt', actions: ['openReceipt', 'intendEffect'] },
  { guard: 'opensReceipt', target: '#toolCall.execution', actions: ['openReceipt', 'permitEffect'] },
  { target: '#toolCall.effectIdentity' },
] as const;
const toAdmission = [{ guard: 'admissionHasWork', target: '#toolCall.admission' }, ...toEffectIdentity] as const;
const toApproval = [{ guard: 'approvalHasWork', target: '#toolCall.approval' }, ...toAdmission] as const;
/** The same entries, each taken only when `guard` also holds. */
const after = (guard: string, entries: readonly { guard?: unknown; target: string; actions?: unknown }[]) =>
  entries.map((t) => ({ ...t, guard: t.guard ? and([guard, t.guard as never]) : guard })) as unknown as typeof toApproval;

const invalidArguments = (message: string) => ({ outcome: 'invalid-arguments' as const, modelOutput: message, isError: true });

export const toolCallMachine = setup({
  types: {
    context: {} as ToolCallContext,
    events: {} as ToolCallEvent,
    input: {} as ToolCallInput,
    output: {} as ToolCallOutput,
    emitted: {} as ToolCallEmitted,
  },
  actors: {
    guardCall: fromPromise<GuardOutput, ToolCallContext>(notProvided('guardCall')),
    checkArguments: fromPromise<ArgumentsOutput, ToolCallContext>(notProvided('checkArguments')),
    decideApproval: fromPromise<ApprovalOutput, ToolCallContext>(notProvided('decideApproval')),
    issueApproval: fromPromise<IssueApprovalOutput, ToolCallContext>(notProvided('issueApproval')),
    admit: fromPromise<AdmitOutput, ToolCallContext>(notProvided('admit')),
    beginEffect: fromPromise<BeginEffectOutput, ToolCallContext>(notProvided('beginEffect')),
    writeReceipt: fromPromise<PersistReceiptOutput, ReceiptWriteInput>(notProvided('writeReceipt')),
    executeTool: fromPromise<ExecuteOutput, ToolCallContext>(notProvided('executeTool')),
    recordResult: fromPromise<void, RecordResultInput>(notProvided('recordResult')),
    projectResult: fromPromise<ProjectOutput, ToolCallContext>(notProvided('projectResult')),
    checkpoint: fromPromise<void, CheckpointInput>(notProvided('checkpoint')),
  },
  actions: {
    // The fresh `executing` receipt of a call that passes the effect-identity stage without its actor.
    openReceipt: assign(({ context }) => ({
      receipt: { ...receiptBase(context, context.plan?.idempotent ?? false), status: 'executing' as const },
      retried: false,
    })),
    refuseArguments: assign(({ context }) =>
      invalidArguments(context.argumentsChecked?.valid === false ? context.argumentsChecked.message : '')),
    // What the tool returned (or threw) becomes the receipt.
    keepResult: assign(({ context, event }) => ({ receipt: receiptOf(context, (event as unknown as { output: ExecuteOutput }).output) })),
    // Provided by the runtime: the check of the arguments against the tool's JSON Schema, into `argumentsChecked`.
    checkArgumentsInline: actionNotProvided('checkArgumentsInline'),
    // Provided by the runtime (the permit is the process's, not the chart's): the receipt write
    // entered next, made durable by this process, issues the effect's permit; with no store, the permit is issued at once.
    intendEffect: actionNotProvided('intendEffect'),
    permitEffect: actionNotProvided('permitEffect'),
    // Provided by the runtime: the answer to the model is the result as it is (capped), and the receipt completes.
    projectAsIs: actionNotProvided('projectAsIs'),
    // An invoked actor rejected: keep what it said as plain data.
    noteError: assign(({ event, context }) => {
      const error = (event as { error?: { code?: string; message?: string } }).error;
      return {
        outcome: context.outcome ?? ('failed' as const),
        isError: true,
        reason: error?.code ?? 'internal',
        modelOutput: context.modelOutput ?? (error?.message ?? 'Tool call failed.'),
      };
    }),
  },
  guards: {
    // A turn cut off by its length limit or refused by a content filter dispatches nothing.
    dispatchable: ({ context }) => context.finishReason !== 'length' && context.finishReason !== 'content-filter',
    toolKnown: ({ context }) => context.known,
    hasApproval: ({ context }) => context.approval !== null,
    clientRequested: ({ context }) => context.clientRequested,
    retryAsked: ({ event }) => event.type === 'RECHECK' && event.retry === true,
    // The settled output of the invoked actor that just finished has this kind.
    outputIs: ({ event }, params: { kind: string }) => (event as unknown as { output?: { kind?: string } }).output?.kind === params.kind,
    outcomeIs: ({ context }, params: { outcome: string }) => context.outcome === params.outcome,
    // The call's plan (see CallPlan) says which stages have work; without a plan every stage does.
    runsGuardrails: ({ context }) => context.plan?.guardrails ?? true,
    checksArgumentsInline: ({ context }) => context.plan?.argumentsInline === true,
    argumentsPassed: ({ context }) => context.argumentsChecked?.valid === true,
    argumentsRefused: ({ context }) => context.argumentsChecked?.valid === false,
    approvalHasWork: ({ context }) => !context.plan || context.plan.approval || context.verdict !== null || context.receipt !== null,
    admissionHasWork: ({ context }) => !context.plan || context.plan.admission || context.deadlineAt !== null,
    // A first run of a tool that runs here: its `executing` receipt is opened on the way into the stage.
    opensReceipt: ({ context }) => !!context.plan?.executes && context.receipt === null,
    durable: ({ context }) => context.plan?.durable ?? true,
    // The tool returned a result that no validation, projection or onToolResult sees: it is the model's answer as it is.
    resultIsAnswer: ({ context, event }) =>
      !!context.plan && !context.plan.projects && (event as unknown as { output?: ExecuteOutput }).output?.kind === 'result',
    // The tool returned a result, and there is no store to commit it to before its projection.
    resultNeedsNoCommit: ({ context, event }) =>
      !!context.plan && !context.plan.durable && (event as unknown as { output?: ExecuteOutput }).output?.kind === 'result',
    // The run's own step checkpoint (or nothing, with no store) commits this call's answer.
    runCheckpoints: ({ context }) => !!context.plan && (!context.plan.durable || context.batchSize <= 1),
  },
}).createMachine({
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
  initial: 'finishReasonGate',
  states: {
    // 1. A refused or cut-off turn dispatches none of its calls.
    finishReasonGate: {
      always: [
        { guard: and(['dispatchable', 'checksArgumentsInline']), target: 'policy', actions: 'checkArgumentsInline' },
        { guard: 'dispatchable', target: 'policy' },
        { target: 'notDispatched', actions: assign({
          outcome: 'not-dispatched' as const,
          modelOutput: 'Tool call not dispatched: the turn was cut off or refused.',
          isError: true,
        }) },
      ],
    },
    // 2. Policy. The run already checked the batch against the execution policy;
    // here an unknown tool is refused and the onToolCall guardrails block or rewrite.
    policy: {
      initial: 'allowlist',
      states: {
        allowlist: {
          always: [
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
    effectIdentity: {
      initial: 'beginning',
      states: {
        beginning: {
          invoke: {
            src: 'beginEffect',
            id: 'beginEffect',
            input: ({ context }) => context,
            onDone: [
              // The `executing` receipt goes into the record; the write that makes it durable issues the permit.
              {
                guard: { type: 'outputIs', params: { kind: 'write' } },
                target: 'writingReceipt',
                actions: assign(({ event, context }) => ({
                  receipt: {
                    ...receiptBase(context, event.output.kind === 'write' && event.output.idempotent),
                    status: 'executing' as const,
                  },
                  retried: false,
                })),
              },
              { guard: { type: 'outputIs', params: { kind: 'replay' } }, target: '#toolCall.resultReceipt.projecting' },
              {
                guard: { type: 'outputIs', params: { kind: 'replay-failed' } },
                target: '#toolCall.checkpoint',
                actions: assign(({ event }) => ({
                  outcome: 'failed' as const,
                  modelOutput: event.output.kind === 'replay-failed' ? event.output.message : '',
                  isError: true,
                })),
              },
              {
                guard: { type: 'outputIs', params: { kind: 'client-result' } },
                target: '#toolCall.resultReceipt.recording',
                actions: assign(({ context }) => ({
                  receipt: {
                    ...receiptBase(context, false),
                    status: 'executed' as const,
                    rawResult: context.clientResult!.output,
                    isError: context.clientResult!.isError,
                    client: true,
                  },
                })),
              },
              { guard: and([{ type: 'outputIs', params: { kind: 'await-client' } }, 'clientRequested']), target: 'awaitingClientResult' },
              {
                guard: { type: 'outputIs', params: { kind: 'await-client' } },
                target: 'awaitingClientResult',
                actions: [assign({ clientRequested: true }), emit(({ context }) => ({ type: 'client-call-request' as const, call: callFacts(context) }))],
              },
              { target: '#toolCall.unknownEffect' },
            ],
            onError: { target: '#toolCall.failed', actions: 'noteError' },
          },
        },
        // The `executing` receipt is made durable before the effect. Restored here, the
        // write was not made by this process: it permits nothing and the call decides again.
        writingReceipt: {
          invoke: {
            src: 'writeReceipt',
            id: 'writeReceipt',
            input: ({ context }) => ({ modelStep: context.modelStep, toolCallId: context.toolCallId }),
            onDone: [
              { guard: { type: 'outputIs', params: { kind: 'restarted' } }, target: 'beginning' },
              { target: '#toolCall.execution' },
            ],
            // The executing receipt could not be written: the tool never ran.
            onError: { target: '#toolCall.failed', actions: 'noteError' },
          },
        },
        awaitingClientResult: {
          tags: ['suspended', 'awaiting-client'],
          on: {
            RECHECK: {
              target: 'beginning',
              actions: assign(({ event, context }) => ({
                clientResult: event.clientResult ?? context.clientResult,
              })),
            },
          },
        },
      },
    },
    // 6. Execution. Guarded by the permit: a restart of this invocation after a
    // restore finds none and re-decides from the receipt.
    execution: {
      tags: ['effect'],
      invoke: {
        src: 'executeTool',
        id: 'executeTool',
        input: ({ context }) => context,
        onDone: [
          { guard: { type: 'outputIs', params: { kind: 'replay' } }, target: 'resultReceipt.projecting' },
          { guard: { type: 'outputIs', params: { kind: 'unknown' } }, target: 'unknownEffect' },
          // What the tool returned (or threw) becomes the receipt, committed next (or by the
          // checkpoint, when nothing runs between the two; or by nothing, with no store).
          { guard: and(['resultIsAnswer', 'runCheckpoints']), target: 'completed', actions: ['keepResult', 'projectAsIs'] },
          { guard: 'resultIsAnswer', target: 'checkpoint', actions: ['keepResult', 'projectAsIs'] },
          { guard: 'resultNeedsNoCommit', target: 'resultReceipt.projecting', actions: 'keepResult' },
          { target: 'resultReceipt.recording', actions: 'keepResult' },
        ],
        onError: { target: 'unknownEffect', actions: 'noteError' },
      },
    },
    // 7. The raw result (or the error the tool threw) is committed before
    // validation, projection and onToolResult decide what the model sees
    // (for a tool with none of them, the checkpoint commits it).
    resultReceipt: {
      initial: 'recording',
      states: {
        recording: {
          invoke: {
            src: 'recordResult',
            id: 'recordResult',
            input: ({ context }) => ({
              modelStep: context.modelStep,
              toolCallId: context.toolCallId,
              toolName: context.toolName,
              receipt: context.receipt && { status: context.receipt.status, error: context.receipt.error },
            }),
            onDone: { target: 'projecting' },
            onError: { target: '#toolCall.failed', actions: 'noteError' },
          },
        },
        projecting: {
          invoke: {
            src: 'projectResult',
            id: 'projectResult',
            input: ({ context }) => context,
            onDone: {
              target: '#toolCall.checkpoint',
              actions: assign(({ event, context }) => ({
                outcome: event.output.outcome,
                modelOutput: event.output.modelOutput,
                isError: event.output.isError,
                receipt: event.output.receipt ?? context.receipt,
              })),
            },
            onError: { target: '#toolCall.failed', actions: 'noteError' },
          },
        },
      },
    },
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
      entry: assign({ outcome: 'unknown-effect' as const, isError: true, modelOutput: 'The outcome of this tool call is unknown.' }),
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

/** The receipt of what the tool did: its result, the error it threw, or why its result cannot be kept. */
function receiptOf(c: ToolCallContext, output: ExecuteOutput): CallReceipt | null {
  const base = receiptBase(c, idempotentOf(c));
  if (output.kind === 'result') return { ...base, status: 'executed', rawResult: output.value };
  if (output.kind === 'threw') return { ...base, status: 'failed', error: output.error };
  if (output.kind === 'unstorable') return { ...base, status: 'unstorable', error: output.error };
  return c.receipt;
}

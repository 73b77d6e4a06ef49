/**
 * What the tool-call chart (tool-call.ts) names: its types, the actors the
 * runtime provides, its guards and its actions, with the receipt helpers and
 * the stage-entry transitions they share.
 */
import { notProvided as notProvidedTo } from './not-provided.js';
import { and, assign, enqueueActions, fromPromise, or, setup } from 'xstate';
import type {
  AdmitOutput, ArgumentsOutput, BeginEffectOutput, CallReceipt, CheckpointInput, ExecuteOutput, GuardOutput, ApprovalOutput,
  IssueApprovalOutput, PersistReceiptOutput, ProjectOutput, ReceiptWriteInput, RecordResultInput, ToolCallInput, ToolCallOutput,
  ToolCallContext, ToolCallEmitted, ToolCallEvent,
} from './types.js';
import type { RunChildInput, RunChildOutput } from './sub-agent-types.js';

const notProvided = notProvidedTo('tool-call');
const actionNotProvided = (name: string) => () => {
  throw new Error(`The ${name} action was not provided to the tool-call machine.`);
};


/** Effect identity: the root model turn and the provider's call id. */
export const receiptKey = (modelStep: number, toolCallId: string) => `${modelStep}:${toolCallId}`;

/** The order the run keeps receipts in: by model step, then by call id (never by which call ended first). */
export function byStepThenCall(a: CallReceipt, b: CallReceipt): number {
  return a.modelStep - b.modelStep || (a.toolCallId < b.toolCallId ? -1 : a.toolCallId > b.toolCallId ? 1 : 0);
}

/** The fields every receipt of this call carries. */
export const receiptBase = (c: ToolCallContext, idempotent: boolean) => ({
  key: receiptKey(c.modelStep, c.toolCallId), toolCallId: c.toolCallId, toolName: c.toolName, modelStep: c.modelStep, idempotent,
});
/** The call's approval request with the verdict that answers it recorded (a retry passes the gate with it). */
export const withVerdict = (c: ToolCallContext, verdict: ToolCallContext['verdict'] | undefined) =>
  (c.approval && verdict ? { ...c.approval, verdict } : c.approval);
const idempotentOf = (c: ToolCallContext) => c.receipt?.idempotent ?? false;
export const callFacts = (c: ToolCallContext) => ({ toolCallId: c.toolCallId, toolName: c.toolName, args: c.args, modelStep: c.modelStep });

/*
 * Into a stage, passing those with no work for this call (see CallPlan): each
 * list is the transitions of one stage's entry, in order, ending with the
 * stage itself or the next stage's entry.
 */
export const toEffectIdentity = [
  // A sub-agent call takes the receipt write even without a store (which then saves nothing): it leads to its child run.
  { guard: and(['opensReceipt', or(['durable', 'delegates'])]), target: '#toolCall.effectIdentity.writingReceipt', actions: ['openReceipt', 'intendEffect'] },
  { guard: 'opensReceipt', target: '#toolCall.execution', actions: ['openReceipt', 'permitEffect'] },
  { target: '#toolCall.effectIdentity' },
] as const;
export const toAdmission = [{ guard: 'admissionHasWork', target: '#toolCall.admission' }, ...toEffectIdentity] as const;
export const toApproval = [{ guard: 'approvalHasWork', target: '#toolCall.approval' }, ...toAdmission] as const;
/** The same entries, each taken only when `guard` also holds. */
export const after = (guard: string, entries: readonly { guard?: unknown; target: string; actions?: unknown }[]) =>
  entries.map((t) => ({ ...t, guard: t.guard ? and([guard, t.guard as never]) : guard })) as unknown as typeof toApproval;

/** A call run under a run (not alone, as the chart's own tests run it) tells it its phase (see noteSuspended). */
const hasParent = (self: unknown) => (self as { _parent?: unknown })._parent !== undefined;

export const invalidArguments = (message: string) => ({ outcome: 'invalid-arguments' as const, modelOutput: message, isError: true });

export const toolCallSetup = setup({
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
    runChild: fromPromise<RunChildOutput, RunChildInput>(notProvided('runChild')),
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
    // Provided by the runtime: the answer is the engine's own projection of the result (see CallPlan.projectsInline), and the receipt completes.
    projectInline: actionNotProvided('projectInline'),
    // The call comes to rest (waiting on an answer, or on an operator): it tells the run, which decides from its calls'
    // phases. (A call spawned by an earlier engine also sends the run its every snapshot; see the run's noteCallSnapshot.)
    noteSuspended: enqueueActions(({ self, enqueue }) => {
      if (hasParent(self)) enqueue.sendParent({ type: 'CALL_PHASE', id: self.id, phase: 'suspended' });
    }),
    noteUnknown: enqueueActions(({ self, enqueue }) => {
      if (hasParent(self)) enqueue.sendParent({ type: 'CALL_PHASE', id: self.id, phase: 'unknown' });
    }),
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
    // A sub-agent (agentTool): its effect is a child run (machines/sub-agent.ts).
    delegates: ({ context }) => context.plan?.delegates === true,
    // The tool returned a result that no validation, projection or onToolResult sees: it is the model's answer as it is.
    resultIsAnswer: ({ context, event }) =>
      !!context.plan && !context.plan.projects && (event as unknown as { output?: ExecuteOutput }).output?.kind === 'result',
    // The tool returned a result whose only projection is the engine's own, pure and total: no user code sees it.
    resultProjectsInline: ({ context, event }) =>
      context.plan?.projectsInline === true && (event as unknown as { output?: ExecuteOutput }).output?.kind === 'result',
    // The tool returned a result, and there is no store to commit it to before its projection.
    resultNeedsNoCommit: ({ context, event }) =>
      !!context.plan && !context.plan.durable && (event as unknown as { output?: ExecuteOutput }).output?.kind === 'result',
    // The run's own step checkpoint (or nothing, with no store) commits this call's answer.
    runCheckpoints: ({ context }) => !!context.plan && (!context.plan.durable || context.batchSize <= 1),
  },
});

/** The receipt of what the tool did: its result, the error it threw, or why its result cannot be kept. */
function receiptOf(c: ToolCallContext, output: ExecuteOutput): CallReceipt | null {
  const base = receiptBase(c, idempotentOf(c));
  if (output.kind === 'result') return { ...base, status: 'executed', rawResult: output.value };
  if (output.kind === 'threw') return { ...base, status: 'failed', error: output.error };
  if (output.kind === 'unstorable') return { ...base, status: 'unstorable', error: output.error };
  return c.receipt;
}

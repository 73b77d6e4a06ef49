/**
 * What the run chart (run.ts) names: its types, the actors the runtime
 * provides, its guards and its actions, with the few pure helpers they use.
 * The chart itself, its states and transitions, is in run.ts and
 * run-finish.ts.
 */
import { notProvided as notProvidedTo } from './not-provided.js';
import { assign, enqueueActions, fromPromise, setup, type SnapshotFrom } from 'xstate';
import { byStepThenCall, toolCallMachine } from './tool-call.js';
import { memoryIntentMachine } from './memory-intent.js';
import type { MemoryIntentOutput } from './memory-intent-types.js';
import { handsOff, takeHandoff, type HandoffOutput } from './run-handoff-logic.js';
import type {
  CallPhase, ErrorData, Json, ModelCallInput, ModelCallOutput, OutputCheck, PolicyOutput, RunChat, RunContext, RunEvent, RunInput,
  ToolCallOutput, Turn, UsageTotals, ValidateInput, VerifierOutput, VerifyInput,
} from './types.js';


/** The user turns the run adds itself. Plain strings, so the chart stays pure. */
export const RUN_PROMPTS = {
  finalize: 'Give your final answer now, as JSON that matches the requested schema. Do not call tools.',
  finalizeWithTool: 'Give your final answer now by calling the output tool with arguments that match its schema.',
  repair: (issue: string) => `That answer did not match the required output: ${issue} Answer again with JSON that matches the schema.`,
  feedback: (feedback: string) => `Your answer was checked and rejected: ${feedback} Give a corrected final answer.`,
};

const notProvided = notProvidedTo('run');

type CallSnapshot = SnapshotFrom<typeof toolCallMachine>;

/** Where a call stands, read from its snapshot. */
export function callPhase(snapshot: CallSnapshot): CallPhase {
  if (snapshot.status !== 'active') return 'ended';
  if (snapshot.hasTag('needs-reconciliation')) return 'unknown';
  if (snapshot.hasTag('suspended')) return 'suspended';
  return 'active';
}

/** Whether some call of the batch is in `phase` (a call the run has no phase for yet is active). Allocates nothing: awaitingCalls asks it often. */
function somePhase(context: RunContext, phase: CallPhase): boolean {
  const { batch, phases } = context;
  for (let i = 0; i < batch.length; i++) if ((phases[batch[i]!] ?? 'active') === phase) return true;
  return false;
}

function allPhases(context: RunContext, phase: CallPhase): boolean {
  const { batch, phases } = context;
  for (let i = 0; i < batch.length; i++) if ((phases[batch[i]!] ?? 'active') !== phase) return false;
  return true;
}

/**
 * Whether `event` is the done event of the batch's last open call, after which awaitingCalls would fold the step:
 * every other call ended, and with this call's output in place no call was not dispatched or not admitted and none
 * hands the run over (see awaitingCalls in run.ts). Read as awaitingCalls reads the context after noteCallDone,
 * without making that context. Allocates nothing.
 */
function endsStepPlainly(context: RunContext, event: RunEvent): boolean {
  const id = event.type.slice('xstate.done.actor.'.length);
  const { batch, phases, outputs, handoffs } = context;
  let found = false;
  for (let i = 0; i < batch.length; i++) {
    const callId = batch[i]!;
    if (callId === id) found = true;
    else if ((phases[callId] ?? 'active') !== 'ended') return false;
    const output = callId === id ? (event as unknown as { output?: ToolCallOutput }).output : outputs[callId];
    if (!output || output.outcome === 'not-dispatched' || output.outcome === 'not-admitted') return false;
    if (handoffs && output.outcome === null && typeof handoffs[output.toolName] === 'string') return false;
  }
  return found;
}

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

export const userMessage = (content: string): Json => ({ role: 'user', content });

export const modelCallInput = (context: RunContext, phase: 'loop' | 'finalize'): ModelCallInput =>
  ({ step: context.step, phase, deadlineAt: context.deadlineAt, models: context.models ?? null });

export const runSetup = setup({
  types: {
    context: {} as RunContext,
    events: {} as RunEvent,
    input: {} as RunInput,
  },
  actors: {
    toolCall: toolCallMachine,
    memoryIntent: memoryIntentMachine,
    // `cursor`: what the chat acknowledged before this write (a write that fails acknowledges nothing new).
    writeChat: fromPromise<Pick<RunChat, 'status' | 'cursor' | 'error'>, { at: string; cursor?: number }>(notProvided('writeChat')),
    saveCheckpoint: fromPromise<void, { at: string }>(notProvided('saveCheckpoint')),
    callModel: fromPromise<ModelCallOutput, ModelCallInput>(notProvided('callModel')),
    checkBatchPolicy: fromPromise<PolicyOutput, { step: number }>(notProvided('checkBatchPolicy')),
    validateOutput: fromPromise<OutputCheck, ValidateInput>(notProvided('validateOutput')),
    beginVerify: fromPromise<void, { attempt: number }>(notProvided('beginVerify')),
    runVerifier: fromPromise<VerifierOutput, VerifyInput>(notProvided('runVerifier')),
    // Puts the handoff target's model, instructions and tools in place for the next step (see run-handoff.ts).
    enterHandoff: fromPromise<HandoffOutput, { agent: string; models: Json | null }>(notProvided('enterHandoff')),
  },
  guards: {
    stepsLeft: ({ context }) => context.step < context.maxSteps,
    drainRequested: ({ context }) => context.drainRequested,
    drainedInFinalization: ({ context }) => context.drainedIn === 'finalize',
    startsInFinalization: ({ context }) => context.toolNames.length === 0 && context.outputMode !== 'none',
    anyActive: ({ context }) => somePhase(context, 'active'),
    // A call of the batch says it came to rest in a phase the run does not hold yet.
    callPhaseSent: ({ context, event }) =>
      event.type === 'CALL_PHASE' && context.batch.includes(event.id) && context.phases[event.id] !== event.phase,
    // A call spawned by an earlier engine (which spawned every call with syncSnapshot) sent its snapshot, and its
    // phase is not the one the run holds. Calls spawned now send none: each says where it rests (CALL_PHASE).
    callPhaseChanged: ({ context, event }) => {
      const id = event.type.slice('xstate.snapshot.'.length);
      return context.batch.includes(id)
        && context.phases[id] !== callPhase((event as unknown as { snapshot: CallSnapshot }).snapshot);
    },
    anySuspended: ({ context }) => somePhase(context, 'suspended'),
    anyUnknown: ({ context }) => somePhase(context, 'unknown'),
    allEnded: ({ context }) => allPhases(context, 'ended'),
    endsStepPlainly: ({ context, event }) => endsStepPlainly(context, event),
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
    // The run extracts memory once it completed (see run-memory.ts).
    extractsMemory: ({ context }) => typeof context.memory?.operationId === 'string',
    // The run projects its transcript to a chat (see run-chat.ts).
    projectsChat: ({ context }) => Boolean(context.chat),
    endsWithWork: ({ context }) => Boolean(context.chat) || typeof context.memory?.operationId === 'string',
    // A call of the ended batch completed a transfer tool (see run-handoff.ts).
    handsOff: ({ context }) => handsOff(context),
  },
  actions: {
    recordTurn: assign(({ context, event }) => {
      const output = (event as unknown as { output: ModelCallOutput }).output;
      if (output.kind !== 'turn') return {};
      const { turn } = output;
      return {
        lastTurn: turn,
        step: context.step + 1,
        // concat, not spread: the transcript is copied once a step, and concat copies it as a block (3x faster at 2,000 messages).
        messages: output.contextMessages ? context.messages.concat(output.contextMessages, [assistantMessage(turn)]) : context.messages.concat([assistantMessage(turn)]),
        usage: addUsage(context.usage, turn.usage),
        ...(turn.model ? { usageByModel: { ...context.usageByModel, [turn.model]: addUsage(context.usageByModel?.[turn.model] ?? ZERO_USAGE, turn.usage) } } : {}),
        ...(output.models !== undefined ? { models: output.models } : {}),
        ...(output.toolNames !== undefined ? { toolNames: output.toolNames } : {}),
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
        // No syncSnapshot: a call's every snapshot would be an event of the run's (a macrostep, its guards evaluated)
        // where only its rests matter to the run, and a call says those itself (CALL_PHASE).
        enqueue.spawnChild('toolCall', {
          id,
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
    noteCallPhase: assign(({ context, event }) =>
      (event.type === 'CALL_PHASE' ? { phases: { ...context.phases, [event.id]: event.phase } } : {})),
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
        messages: context.messages.concat(toolMessages),
        receipts: receipts.length > 0 ? context.receipts.concat(receipts) : context.receipts,
        batch: [], phases: {}, outputs: {},
      });
    }),
    takeHandoff: assign(({ context }) => takeHandoff(context)),
    // The target's tools (and their plan) from the next step on.
    noteHandoff: assign(({ event }) => {
      const output = (event as unknown as { output: HandoffOutput }).output;
      return { toolNames: output.toolNames, plan: output.plan, ...(output.models !== undefined ? { models: output.models } : {}) };
    }),
    takeTextCandidate: assign(({ context }) => ({
      candidate: { text: context.lastTurn?.text ?? '', output: context.lastTurn?.text ?? '' },
    })),
    askForFinalAnswer: assign(({ context }) => ({
      messages: [...context.messages, userMessage(context.outputMode === 'tool' ? RUN_PROMPTS.finalizeWithTool : RUN_PROMPTS.finalize)],
      outputAttempts: 0,
    })),
    stopWith: assign((_, params: { reason: string }) => ({ stopReason: params.reason })),
    markExtractionPending: assign(({ context }) => (typeof context.memory?.operationId === 'string'
      ? { memory: { ...context.memory, extraction: { operationId: context.memory.operationId, status: 'pending' as const } } }
      : {})),
    // Where the chat write left the projection (its output is the projection's new state).
    noteChat: assign(({ context, event }) => {
      const { error: _previous, ...chat } = context.chat!;
      return { chat: { ...chat, ...(event as unknown as { output: Partial<RunChat> }).output } };
    }),
    // A cancel queued for the run says when it was asked for, and why (src/runtime/cancel.ts).
    noteCancel: assign(({ event }) => (event.type === 'CANCEL' && event.details !== undefined ? { stopDetails: event.details } : {})),
    noteExtraction: assign(({ context, event }) => ({
      memory: { ...context.memory!, extraction: (event as unknown as { output: MemoryIntentOutput }).output },
    })),
    // The intent's own failures are data; an exception here is a bug, recorded as a failed extraction.
    noteExtractionCrash: assign(({ context, event }) => {
      const raw = (event as unknown as { error?: { name?: string; message?: string } }).error;
      const error = { name: raw?.name ?? 'Error', code: 'internal', message: raw?.message ?? String(raw) };
      const operationId = context.memory!.operationId!;
      return { memory: { ...context.memory!, extraction: { operationId, status: 'failed' as const, planned: null, deletes: 0, mutations: 0, error } } };
    }),
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
});

/**
 * Stages 5 to 7 of the tool path, the effect half of the tool-call chart:
 * effect identity (the durable `executing` receipt), execution under the
 * permit, and the result receipt. Part of the tool-call machine (tool-call.ts).
 */
import { and, assign, emit, not } from 'xstate';
import { callFacts, receiptBase, toolCallSetup } from './tool-call-setup.js';

/**
 * 5. Effect identity: [modelStep, toolCallId] and the durable `executing`
 * receipt. Only a receipt written here, in this process, permits the effect.
 */
export const effectIdentityState = toolCallSetup.createStateConfig({
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
          { guard: not('delegates'), target: '#toolCall.execution' },
          // A sub-agent call's effect is its child run (machines/sub-agent.ts).
          { target: '#toolCall.delegation' },
        ],
        // The executing receipt could not be written: the tool never ran.
        onError: { target: '#toolCall.failed', actions: 'noteError' },
      },
    },
    awaitingClientResult: {
      tags: ['suspended', 'awaiting-client'],
      entry: 'noteSuspended',
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
});

/**
 * 6. Execution. Guarded by the permit: a restart of this invocation after a
 * restore finds none and re-decides from the receipt.
 */
export const executionState = toolCallSetup.createStateConfig({
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
      // Its only projection is the engine's own, pure and total (an MCP tool's): applied on this transition, so the
      // completed receipt holds the raw result and the answer, and one commit (the checkpoint's) makes both durable.
      { guard: and(['resultProjectsInline', 'runCheckpoints']), target: 'completed', actions: ['keepResult', 'projectInline'] },
      { guard: 'resultProjectsInline', target: 'checkpoint', actions: ['keepResult', 'projectInline'] },
      { guard: 'resultNeedsNoCommit', target: 'resultReceipt.projecting', actions: 'keepResult' },
      { target: 'resultReceipt.recording', actions: 'keepResult' },
    ],
    onError: { target: 'unknownEffect', actions: 'noteError' },
  },
});

/**
 * 7. The raw result (or the error the tool threw) is committed before
 * validation, projection and onToolResult decide what the model sees
 * (for a tool with none of them, the checkpoint commits it).
 */
export const resultReceiptState = toolCallSetup.createStateConfig({
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
});

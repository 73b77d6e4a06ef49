/**
 * The run chart's end, for a run that completed with a chat to write or
 * memory to extract: the terminal commit (the result, and the extraction
 * pending under its operation id), then the chat projection, then the
 * memory-intent actor; the host saves their outcome once the run is done. A
 * run with nothing to do after its end passes straight to `completed`. The
 * other ends project their chat in run-chat.ts. Part of the run machine (run.ts).
 */
import { assign } from 'xstate';
import { runSetup } from './run-setup.js';

export const endingState = runSetup.createStateConfig({
  initial: 'deciding',
  states: {
    deciding: {
      always: [
        { guard: 'endsWithWork', target: 'committing', actions: 'markExtractionPending' },
        { target: '#run.completed' },
      ],
    },
    // The terminal commit: the run's result is durable before anything is written to memory.
    committing: {
      invoke: {
        src: 'saveCheckpoint',
        id: 'saveEnd',
        input: { at: 'end' },
        onDone: [
          { guard: 'projectsChat', target: 'publishing', actions: assign({ committedEnd: true }) },
          { guard: 'extractsMemory', target: 'extracting', actions: assign({ committedEnd: true }) },
          { target: '#run.completed', actions: assign({ committedEnd: true }) },
        ],
        onError: { target: '#run.failed', actions: 'failWith' },
      },
    },
    // The transcript goes to the chat after the checkpoint; a chat store that throws never fails the run.
    publishing: {
      on: { STORE_FAILED: {} },
      invoke: {
        src: 'writeChat',
        id: 'writeChat',
        input: ({ context }) => ({ at: 'end', cursor: context.chat?.cursor ?? 0 }),
        onDone: [
          { guard: 'extractsMemory', target: 'extracting', actions: 'noteChat' },
          { target: '#run.completed', actions: 'noteChat' },
        ],
        onError: { target: '#run.completed' },
      },
    },
    // After the terminal commit the result stands: a save that fails from here on leaves the extraction for reconcileAgentRun.
    extracting: {
      on: { STORE_FAILED: {} },
      invoke: {
        src: 'memoryIntent',
        id: 'memoryIntent',
        input: ({ context }) => ({
          runId: context.runId, operationId: context.memory!.operationId!, mode: 'fresh' as const, inputCount: context.memory!.inputCount,
        }),
        onDone: { target: '#run.completed', actions: 'noteExtraction' },
        onError: { target: '#run.completed', actions: 'noteExtractionCrash' },
      },
    },
  },
});

/**
 * The run chart's chat projection, at every place a run comes to rest. The
 * transcript is written to the chat after a checkpoint that holds it, and
 * where that write left the projection is recorded by a later save:
 *
 *   - a suspension: its checkpoint, the write, a save of the write's outcome, `suspended`;
 *   - a drain: the drain's checkpoint, the write, a save of its outcome, `drained`;
 *   - a stop (a cancel included) or a failure: `stopping` / `failing` make the
 *     terminal commit (the result is durable), then the write; the host's
 *     terminal save once the run is done records the outcome;
 *   - a completion: run-memory.ts (the same commit, then the write, then the memory's extraction).
 *
 * A run without a chat passes `stopping` / `failing` straight to its final
 * state. A failed save never publishes: it goes to `failed` directly. Part of
 * the run machine (run.ts).
 */
import { assign, not } from 'xstate';
import { runSetup } from './run-setup.js';

/** The suspension's chat write, after its checkpoint; a chat store that throws never fails the run (the write's output says how it went). */
export const suspendedStates = {
  publishingSuspension: runSetup.createStateConfig({
    invoke: {
      src: 'writeChat',
      id: 'writeChat',
      input: ({ context }) => ({ at: 'suspend', cursor: context.chat?.cursor ?? 0 }),
      onDone: { target: 'recordingChat', actions: 'noteChat' },
      onError: { target: 'suspended' },
    },
  }),
  // Where the chat write left the projection is saved before the run rests.
  recordingChat: runSetup.createStateConfig({
    invoke: {
      src: 'saveCheckpoint',
      id: 'saveChat',
      input: { at: 'chat' },
      onDone: { target: 'suspended' },
      onError: { target: 'failed', actions: 'failWith' },
    },
  }),
  suspended: runSetup.createStateConfig({
    tags: ['suspended'],
    on: { RESUME: { target: 'settling', actions: 'deliverAnswers' } },
  }),
};

/** The drain's chat write, after the drain's checkpoint, and the save of where it left the projection. */
export const drainedChatStates = {
  publishingDrain: runSetup.createStateConfig({
    invoke: {
      src: 'writeChat',
      id: 'writeChat',
      input: ({ context }) => ({ at: 'drain', cursor: context.chat?.cursor ?? 0 }),
      onDone: { target: 'recordingDrain', actions: 'noteChat' },
      onError: { target: 'drained' },
    },
  }),
  recordingDrain: runSetup.createStateConfig({
    invoke: {
      src: 'saveCheckpoint',
      id: 'saveChat',
      input: { at: 'chat' },
      onDone: { target: 'drained' },
      onError: { target: 'failed', actions: 'failWith' },
    },
  }),
};

/**
 * The way to a final state that is not `completed`: with a chat, the terminal
 * commit (skipped without a store), then the chat write. Once the commit is
 * saved the result stands: a save that fails later (or a lost lease) no longer
 * changes how the run ended.
 */
function closingState(final: '#run.stopped' | '#run.failed') {
  return runSetup.createStateConfig({
    initial: 'deciding',
    states: {
      deciding: {
        always: [
          { guard: not('projectsChat'), target: final },
          { guard: 'durable', target: 'committing' },
          { target: 'publishing' },
        ],
      },
      committing: {
        invoke: {
          src: 'saveCheckpoint',
          id: 'saveEnd',
          input: { at: 'end' },
          onDone: { target: 'publishing', actions: assign({ committedEnd: true }) },
          onError: { target: '#run.failed', actions: 'failWith' },
        },
      },
      publishing: {
        on: { STORE_FAILED: {} },
        invoke: {
          src: 'writeChat',
          id: 'writeChat',
          input: ({ context }) => ({ at: 'end', cursor: context.chat?.cursor ?? 0 }),
          onDone: { target: final, actions: 'noteChat' },
          onError: { target: final },
        },
      },
    },
  });
}

export const stoppingState = closingState('#run.stopped');
export const failingState = closingState('#run.failed');

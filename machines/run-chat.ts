/**
 * The run chart's suspension, with the chat projection: once the
 * suspension's checkpoint is saved (and the settle found nothing to go on
 * with), a run with a chat writes its transcript there, saves where that
 * write left the projection, and rests in `suspended`. Part of the run
 * machine (run.ts); the projection at the run's end is in run-memory.ts.
 */
import { runSetup } from './run-setup.js';

export const suspendedStates = {
  // After the checkpoint: a chat store that throws never fails the run (the write's output says how it went).
  publishingSuspension: runSetup.createStateConfig({
    invoke: {
      src: 'writeChat',
      id: 'writeChat',
      input: { at: 'suspend' },
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

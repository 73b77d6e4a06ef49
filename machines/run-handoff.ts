/**
 * The run chart's handoff. Once every call of a step has ended and one of them
 * completed a transfer tool (`transfer_to_<agent>`), the step's answers are
 * folded with the new active agent recorded (run-handoff-logic.ts), the
 * target's model, instructions and tools are put in place, and the step's
 * checkpoint (the same one a step without a handoff makes) saves the active
 * agent before the target's first model call. Part of the run machine (run.ts).
 */
import { runSetup } from './run-setup.js';

export const handingOffState = runSetup.createStateConfig({
  invoke: {
    src: 'enterHandoff',
    id: 'enterHandoff',
    input: ({ context }) => ({ agent: context.activeAgent ?? '', models: context.models ?? null }),
    onDone: [
      { guard: 'durable', target: 'checkpointing', actions: 'noteHandoff' },
      // With no store there is nothing to save the step to.
      { target: 'admitting', actions: 'noteHandoff' },
    ],
    onError: { target: '#run.failing', actions: 'failWith' },
  },
});

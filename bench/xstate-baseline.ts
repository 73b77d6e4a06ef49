/**
 * The baseline of the engine section: a bare XState v5 loop with the shape of
 * a Cairn step and nothing else. Each step: a model turn (a promise actor that
 * answers at once with one tool call), a checkpoint, the tool (a promise actor
 * that returns at once), a checkpoint. A checkpoint is what a save of the
 * engine starts from: the actor's persisted snapshot (`getPersistedSnapshot`)
 * copied to plain JSON. No transcript, receipts or events: its context holds
 * the step, the last turn and the last result, so a checkpoint is the same
 * size at step 10 and at step 1,000, and the figure is what XState itself
 * costs for this shape.
 *
 * `keepTranscript` appends every turn and result to an array in the context,
 * as the run machine does with its messages: XState's getPersistedSnapshot
 * walks every value of the context, so the checkpoint then grows with the
 * history (shown as a separate row, for comparison).
 */
import { assign, createActor, fromPromise, setup, type AnyActorRef } from 'xstate';

export interface Turn {
  toolCalls: { toolCallId: string; toolName: string; args: { n: number } }[];
}

/** A transcript entry, shaped as the run's messages are. */
export type Entry =
  | { role: 'assistant'; content: string; toolCalls: Turn['toolCalls'] }
  | { role: 'tool'; toolCallId: string; toolName: string; content: unknown };

export interface BaselineContext {
  step: number;
  steps: number;
  lastTurn: Turn | null;
  lastResult: unknown;
  transcript: Entry[] | null;
}

const PAD = 'x'.repeat(200);

/**
 * The bare loop, shared by the engine, concurrency and memory baselines: each provides its own `checkpoint`
 * (a JSON copy here, real commits in bench/concurrent-baseline.ts, a Map in bench/memory-xstate-worker.ts).
 */
export const baselineMachine = setup({
  types: { context: {} as BaselineContext, input: {} as { steps: number; keepTranscript: boolean } },
  actors: {
    model: fromPromise<Turn, { step: number }>(async ({ input }) => ({
      toolCalls: [{ toolCallId: `c${input.step}`, toolName: 'step', args: { n: input.step } }],
    })),
    tool: fromPromise<unknown, { args: { n: number } }>(async ({ input }) => ({ ok: true, n: input.args.n, pad: PAD })),
    checkpoint: fromPromise<void, { at: 'turn' | 'step' }>(async () => {
      throw new Error('checkpoint is provided per actor');
    }),
  },
  guards: {
    stepsLeft: ({ context }) => context.step < context.steps,
  },
}).createMachine({
  id: 'baseline',
  context: ({ input }) => ({ step: 0, steps: input.steps, lastTurn: null, lastResult: null, transcript: input.keepTranscript ? [] : null }),
  initial: 'admitting',
  states: {
    admitting: {
      always: [{ guard: 'stepsLeft', target: 'callingModel' }, { target: 'done' }],
    },
    callingModel: {
      invoke: {
        src: 'model',
        input: ({ context }) => ({ step: context.step }),
        onDone: {
          target: 'savingTurn',
          actions: assign(({ context, event }) => ({
            lastTurn: event.output,
            transcript: context.transcript
              ? [...context.transcript, { role: 'assistant' as const, content: '', toolCalls: event.output.toolCalls }]
              : null,
          })),
        },
      },
    },
    savingTurn: {
      invoke: { src: 'checkpoint', input: { at: 'turn' }, onDone: 'callingTool' },
    },
    callingTool: {
      invoke: {
        src: 'tool',
        input: ({ context }) => ({ args: context.lastTurn!.toolCalls[0]!.args }),
        onDone: {
          target: 'checkpointing',
          actions: assign(({ context, event }) => ({
            lastResult: event.output,
            step: context.step + 1,
            transcript: context.transcript
              ? [...context.transcript, { role: 'tool' as const, toolCallId: `c${context.step}`, toolName: 'step', content: event.output }]
              : null,
          })),
        },
      },
    },
    checkpointing: {
      invoke: { src: 'checkpoint', input: { at: 'step' }, onDone: 'admitting' },
    },
    done: { type: 'final' },
  },
});

/** Runs the baseline loop of `steps` steps to its end; resolves with how many checkpoints it took. */
export function baselineLoop(steps: number, keepTranscript = false): Promise<number> {
  let checkpoints = 0;
  let actor: AnyActorRef | null = null;
  const machine = baselineMachine.provide({
    actors: {
      checkpoint: fromPromise<void, { at: 'turn' | 'step' }>(async () => {
        const persisted = actor!.getPersistedSnapshot();
        // The JSON-able copy a store would encode.
        JSON.parse(JSON.stringify(persisted));
        checkpoints++;
      }),
    },
  });
  return new Promise((resolve, reject) => {
    actor = createActor(machine, { input: { steps, keepTranscript } });
    actor.subscribe({ complete: () => resolve(checkpoints), error: reject });
    actor.start();
  });
}

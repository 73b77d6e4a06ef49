/**
 * The memory-intent actor: one extraction of a completed run into memory, as
 * a chart. Pure: the memory LLM, the saves and the store writes are named
 * actors that src/ provides (src/memory/run-actors.ts in a run,
 * src/memory/reconcile.ts in a reconciliation).
 *
 *   pending (the memory LLM plans) → planned (the plan's size is saved
 *   before any write) → writing (deletions first) → completed | partial |
 *   failed. A reconciliation starts in `opening`, which counts what the store
 *   already holds of the operation (`confirming`) before anything runs again.
 */
import { notProvided as notProvidedTo } from './not-provided.js';
import { and, assign, fromPromise, setup } from 'xstate';
import type {
  ApplyPlanOutput, ConfirmPlanOutput, MemoryIntentContext, MemoryIntentInput, MemoryIntentOutput, MemoryPlan, PlanExtractionOutput,
  SavePlanOutput, IntentError,
} from './memory-intent-types.js';

/** Bumped whenever a stored intent snapshot of an older version would not restore as it is. */
export const MEMORY_INTENT_MACHINE_VERSION = 1;

const notProvided = notProvidedTo('memory-intent');

const sizeOf = (plan: MemoryPlan) => plan.deletes.length + plan.writes.length;
const outputOf = (event: unknown) => (event as { output: unknown }).output;

function errorOf(event: unknown): IntentError {
  const raw = (event as { error?: { name?: string; code?: string; message?: string } }).error;
  return { name: raw?.name ?? 'Error', code: raw?.code ?? 'internal', message: raw?.message ?? String(raw) };
}

/** The error a partly applied extraction records: the pass is never run again. */
export const partialError = (mutations: number, planned: number): IntentError => ({
  name: 'MemoryError',
  code: 'memory_extraction_partial',
  message: `The extraction applied ${mutations} of its ${planned} planned memory mutations; it is not run again.`,
});

export const memoryIntentSetup = setup({
  types: {
    context: {} as MemoryIntentContext,
    input: {} as MemoryIntentInput,
    output: {} as MemoryIntentOutput,
  },
  actors: {
    planExtraction: fromPromise<PlanExtractionOutput, { operationId: string; inputCount: number }>(notProvided('planExtraction')),
    savePlan: fromPromise<SavePlanOutput, { operationId: string }>(notProvided('savePlan')),
    applyPlan: fromPromise<ApplyPlanOutput, { operationId: string; plan: MemoryPlan }>(notProvided('applyPlan')),
    confirmPlan: fromPromise<ConfirmPlanOutput, { operationId: string }>(notProvided('confirmPlan')),
  },
  guards: {
    settles: ({ context }) => context.mode === 'settle',
    planIsEmpty: ({ event }) => sizeOf((outputOf(event) as PlanExtractionOutput).plan) === 0,
    outputIs: ({ event }, params: { kind: string }) => (outputOf(event) as { kind?: string } | undefined)?.kind === params.kind,
    appliedSome: ({ event }) => ((outputOf(event) as { mutations?: number }).mutations ?? 0) > 0,
    // No size was saved: an earlier engine's record, or nothing got as far as the plan. Any record of the operation settles it.
    noSizeSaved: ({ context }) => context.planned === null,
    anyFound: ({ event }) => (outputOf(event) as ConfirmPlanOutput).found > 0,
    // Every planned write is in the store (the deletions ran before them); a plan of deletions only counts as applied.
    allFound: ({ context, event }) => (outputOf(event) as ConfirmPlanOutput).found >= (context.planned ?? 0) - context.deletes,
  },
  actions: {
    failWith: assign(({ event }) => ({ error: errorOf(event) })),
  },
});

export const memoryIntentMachine = memoryIntentSetup.createMachine({
  id: 'memoryIntent',
  version: String(MEMORY_INTENT_MACHINE_VERSION),
  context: ({ input }) => ({
    runId: input.runId,
    operationId: input.operationId,
    mode: input.mode,
    inputCount: input.inputCount,
    plan: null,
    planned: input.planned ?? null,
    deletes: input.deletes ?? 0,
    mutations: 0,
    error: null,
  }),
  initial: 'opening',
  states: {
    opening: {
      always: [{ guard: 'settles', target: 'confirming' }, { target: 'pending' }],
    },
    // The memory LLM reads the run's turns and decides what to add, update and delete. Nothing is written yet.
    pending: {
      invoke: {
        src: 'planExtraction',
        id: 'planExtraction',
        input: ({ context }) => ({ operationId: context.operationId, inputCount: context.inputCount }),
        onDone: [
          {
            guard: 'planIsEmpty',
            target: 'completed',
            actions: assign({ planned: 0, deletes: 0, mutations: 0, error: null }),
          },
          {
            target: 'planned',
            actions: assign(({ event }) => ({
              plan: event.output.plan,
              planned: sizeOf(event.output.plan),
              deletes: event.output.plan.deletes.length,
              mutations: 0,
            })),
          },
        ],
        onError: { target: 'failed', actions: 'failWith' },
      },
    },
    // The plan's size is durable before the first write; a failed save writes nothing.
    planned: {
      invoke: {
        src: 'savePlan',
        id: 'savePlan',
        input: ({ context }) => ({ operationId: context.operationId }),
        onDone: [
          { guard: { type: 'outputIs', params: { kind: 'restarted' } }, target: 'confirming' },
          { target: 'writing' },
        ],
        onError: { target: 'failed', actions: 'failWith' },
      },
    },
    // Deletions first, then the writes, each record carrying the run's and the operation's ids.
    writing: {
      invoke: {
        src: 'applyPlan',
        id: 'applyPlan',
        input: ({ context }) => ({ operationId: context.operationId, plan: context.plan! }),
        onDone: [
          { guard: { type: 'outputIs', params: { kind: 'restarted' } }, target: 'confirming' },
          {
            guard: { type: 'outputIs', params: { kind: 'applied' } },
            target: 'completed',
            actions: assign(({ event }) => ({ mutations: event.output.kind === 'applied' ? event.output.mutations : 0, error: null })),
          },
          {
            guard: 'appliedSome',
            target: 'partial',
            actions: assign(({ event, context }) => {
              const mutations = event.output.kind === 'stopped' ? event.output.mutations : 0;
              return { mutations, error: partialError(mutations, context.planned ?? 0) };
            }),
          },
          {
            target: 'failed',
            actions: assign(({ event }) => ({ error: event.output.kind === 'stopped' ? event.output.error : null })),
          },
        ],
        onError: { target: 'failed', actions: 'failWith' },
      },
    },
    // What the store holds of the operation decides: all of it, part of it, or nothing (then it runs again).
    confirming: {
      invoke: {
        src: 'confirmPlan',
        id: 'confirmPlan',
        input: ({ context }) => ({ operationId: context.operationId }),
        onDone: [
          {
            guard: and(['noSizeSaved', 'anyFound']),
            target: 'completed',
            actions: assign(({ event }) => ({ mutations: event.output.found, error: null })),
          },
          { guard: 'noSizeSaved', target: 'pending' },
          {
            guard: 'allFound',
            target: 'completed',
            actions: assign(({ context }) => ({ mutations: context.planned ?? 0, error: null })),
          },
          {
            guard: 'anyFound',
            target: 'partial',
            actions: assign(({ event, context }) => {
              const mutations = context.deletes + event.output.found;
              return { mutations, error: partialError(mutations, context.planned ?? 0) };
            }),
          },
          { target: 'pending', actions: assign({ plan: null, planned: null, deletes: 0, mutations: 0 }) },
        ],
        onError: { target: 'failed', actions: 'failWith' },
      },
    },
    completed: { type: 'final' },
    partial: { type: 'final' },
    failed: { type: 'final' },
  },
  // Each final state leaves its mark in `error`: none for completed, the partial code for partial, the cause for failed.
  output: ({ context }) => {
    const code = context.error?.code;
    return {
      operationId: context.operationId,
      status: code === undefined ? 'completed' : code === 'memory_extraction_partial' ? 'partial' : 'failed',
      planned: context.planned,
      deletes: context.deletes,
      mutations: context.mutations,
      error: context.error,
    };
  },
});

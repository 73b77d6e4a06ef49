/**
 * The memory-intent machine's actors. In a run they find the run's leg
 * through the actor system the run lives in; a reconciliation binds a leg of
 * its own (src/memory/reconcile.ts).
 *
 * The plan's save issues the single-use permit to write: only a save made in
 * this process right after this process planned issues one. A restored
 * intent (its save or its writes were under way when the record was taken)
 * finds no permit and counts what the store holds of the operation instead
 * of writing again.
 */
import { fromPromise } from 'xstate';
import { serializeError } from '../errors/index.js';
import { memoryIntentMachine } from '../../machines/memory-intent.js';
import type {
  ApplyPlanOutput, ConfirmPlanOutput, MemoryPlan, PlanExtractionOutput, SavePlanOutput,
} from '../../machines/memory-intent-types.js';
import { legOf } from '../runtime/host-state.js';
import { extractionSource, planExtraction } from './extract.js';
import { embed } from './recall.js';
import { bindMemoryLeg, memoryLegOf, type MemoryLeg } from './run-leg.js';
import type { MemoryMetadata } from './types.js';

type AnySystem = Parameters<typeof legOf>[0];

/** The memory leg of a run: built once from the run's leg, the first time one of its memory actors runs. */
function legFor(system: AnySystem): MemoryLeg {
  const bound = memoryLegOf(system);
  if (bound) return bound;
  const run = legOf(system);
  const memory = run.opts.memory;
  if (!memory) throw new Error('A memory intent ran in a run without memory.');
  const leg: MemoryLeg = {
    runId: run.runId,
    memory,
    permits: run.permits,
    signal: run.signal,
    emit: (warning) => run.emit(warning),
    save: () => run.save(),
    transcript: () => run.transcript(),
    charge: { runId: run.runId, execution: memory.execution, emit: (warning) => run.emit(warning), warned: new Set() },
  };
  bindMemoryLeg(system, leg);
  return leg;
}

const permitKey = (operationId: string) => `memory:${operationId}`;

/** Deletions first (they leave no record to find), then the writes, each carrying the run's and the operation's ids. */
async function apply(leg: MemoryLeg, operationId: string, plan: MemoryPlan): Promise<ApplyPlanOutput> {
  const { store, clock } = leg.memory.seams;
  const scope = leg.memory.scope;
  const metadata: MemoryMetadata = { cairn: { runId: leg.runId, operationId } };
  let mutations = 0;
  try {
    for (const id of plan.deletes) {
      await store.delete({ id, scope });
      mutations++;
    }
    for (const write of plan.writes) {
      const embedding = await embed(leg.charge, leg.memory, `${operationId}:embed:${write.id}`, write.text, leg.signal);
      const common = { scope, text: write.text, metadata, at: clock.now(), ...(embedding ? { embedding } : {}) };
      if (write.event === 'ADD') await store.add({ id: write.id, ...common });
      else if (!(await store.update({ id: write.id, ...common }))) {
        // The record went away since the plan was made: the fact is kept as a new one under the same id.
        await store.add({ id: write.id, ...common });
      }
      mutations++;
    }
    if (leg.memory.sweeps) await store.sweep({ scope, now: clock.now() });
    return { kind: 'applied', mutations };
  } catch (error) {
    const e = serializeError(error);
    return { kind: 'stopped', mutations, error: { name: e.name, code: e.code, message: e.message } };
  }
}

export const memoryIntentActors = {
  planExtraction: fromPromise<PlanExtractionOutput, { operationId: string; inputCount: number }>(async ({ input, system }) => {
    const leg = legFor(system);
    const source = extractionSource(leg.transcript(), input.inputCount);
    const plan = await planExtraction(leg.charge, leg.memory, input.operationId, source, leg.signal);
    leg.permits.intend(permitKey(input.operationId));
    return { kind: 'plan', plan };
  }),
  savePlan: fromPromise<SavePlanOutput, { operationId: string }>(async ({ input, system }) => {
    const leg = legFor(system);
    await leg.save();
    return leg.permits.issue(permitKey(input.operationId)) ? { kind: 'written' } : { kind: 'restarted' };
  }),
  applyPlan: fromPromise<ApplyPlanOutput, { operationId: string; plan: MemoryPlan }>(async ({ input, system }) => {
    const leg = legFor(system);
    if (!leg.permits.take(permitKey(input.operationId))) return { kind: 'restarted' };
    return apply(leg, input.operationId, input.plan);
  }),
  confirmPlan: fromPromise<ConfirmPlanOutput, { operationId: string }>(async ({ input, system }) => {
    const leg = legFor(system);
    const found = await leg.memory.seams.store.list({ scope: leg.memory.scope, operationId: input.operationId });
    return { found: found.length };
  }),
};

/** The memory-intent machine with its actors, provided once per process. */
export const memoryIntentLogic = memoryIntentMachine.provide({ actors: memoryIntentActors });

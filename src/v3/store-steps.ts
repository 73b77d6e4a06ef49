/**
 * A V3 run's context steps as rows of their own, beside its transcript rows: one
 * row per step, so a save writes the steps it added (or the ones from the first
 * it changed), not every step's manifest again inside the run's head.
 */
import { StoredRecordError } from '../errors/index.js';
import type { AgentRunContextStep, AgentRunEnvelopeV3 } from './envelope.js';
import { stripStoreFields } from './store-load.js';

/** The envelope the planner gets (its context's steps emptied: they are rows) and the steps; null steps for no context. */
export function splitSteps(envelope: AgentRunEnvelopeV3): { head: AgentRunEnvelopeV3; steps: AgentRunContextStep[] | null } {
  const stripped = stripStoreFields(envelope);
  const context = stripped.context;
  if (context === undefined || context === null) return { head: stripped, steps: null };
  // The same keys in the same order; a data property copied as a value, an accessor (an engine envelope's receipts,
  // built only when read) as itself, so it stays unbuilt. Not all descriptors at once: defining every key through
  // descriptors costs several times this.
  const head: Record<string, unknown> = {};
  const source = stripped as unknown as Record<string, unknown>;
  for (const key of Object.keys(source)) {
    if (key === 'context') {
      head.context = { ...context, steps: [] };
      continue;
    }
    const descriptor = Object.getOwnPropertyDescriptor(source, key)!;
    if (descriptor.get !== undefined || descriptor.set !== undefined) Object.defineProperty(head, key, descriptor);
    else head[key] = descriptor.value;
  }
  return { head: head as unknown as AgentRunEnvelopeV3, steps: context.steps };
}

/** What the store holds of a run's step rows: their JSON, and the objects a save last wrote them from (if known). */
export interface StoredSteps {
  jsons: readonly string[];
  objects: readonly unknown[];
}

/** Which step rows a save writes: from `from` on (rows before it are unchanged), deleting stored rows from `deleteFrom`. */
export interface StepPlan {
  rows: { idx: number; body: string }[];
  deleteFrom: number | null;
  jsons: string[];
}

export function planSteps(steps: readonly AgentRunContextStep[], stored: StoredSteps): StepPlan {
  const jsons = new Array<string>(steps.length);
  let from = -1;
  for (let i = 0; i < steps.length; i++) {
    if (from < 0 && i < stored.jsons.length) {
      // The very object last written there holds the same JSON (a step entry is not edited in place once saved).
      if (steps[i] === stored.objects[i]) {
        jsons[i] = stored.jsons[i]!;
        continue;
      }
      const json = JSON.stringify(steps[i]);
      jsons[i] = json;
      if (json === stored.jsons[i]) continue;
      from = i;
      continue;
    }
    jsons[i] = JSON.stringify(steps[i]);
    if (from < 0) from = i;
  }
  if (from < 0) from = steps.length;
  return {
    rows: jsons.slice(from).map((body, k) => ({ idx: from + k, body })),
    deleteFrom: from < stored.jsons.length ? from : null,
    jsons,
  };
}

/** The step rows this store object's last committed save of each running run left, by the revision it saved. */
export class StepMemory {
  private readonly runs = new Map<string, { revision: number; stored: StoredSteps }>();

  known(runId: string, storedRevision: number | undefined): StoredSteps | undefined {
    const kept = this.runs.get(runId);
    return kept !== undefined && kept.revision === storedRevision ? kept.stored : undefined;
  }

  keep(runId: string, revision: number, steps: readonly unknown[] | null, jsons: readonly string[], status: string): void {
    if (status === 'running') this.runs.set(runId, { revision, stored: { jsons, objects: steps ?? [] } });
    else this.runs.delete(runId);
  }

  forget(runId: string): void {
    this.runs.delete(runId);
  }
}

/** Puts a loaded record's step rows back into its context; refused as corrupt unless the rows are the ones its head counts. */
export function joinSteps(record: AgentRunEnvelopeV3, runId: string, count: number | null, rows: readonly string[]): void {
  const corrupt = () => new StoredRecordError('record_corrupt', runId, `Stored context steps of run ${runId} do not match its head.`);
  if (count === null) {
    if (rows.length > 0 || record.context !== undefined) throw corrupt();
    return;
  }
  if (record.context === undefined || record.context === null || rows.length !== count) throw corrupt();
  try {
    record.context.steps = rows.map((body) => JSON.parse(body) as AgentRunContextStep);
  } catch {
    throw corrupt();
  }
}

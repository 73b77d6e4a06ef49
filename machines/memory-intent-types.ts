/**
 * Context, input and output of the memory-intent machine (memory-intent.ts):
 * plain JSON, since its persisted snapshot is part of the run's checkpoint.
 */
/** An error as plain data (the same shape as the run's ErrorData). */
export interface IntentError {
  name: string;
  code: string;
  message: string;
}

/** One write the extraction planned: a new fact, or a new text for a stored record. */
export interface MemoryWrite {
  event: 'ADD' | 'UPDATE';
  /** The record an UPDATE rewrites; for an ADD, the id the new record gets. */
  id: string;
  text: string;
}

/** What the memory LLM decided: deletions (applied first), then writes. */
export interface MemoryPlan {
  deletes: string[];
  writes: MemoryWrite[];
}

export interface MemoryIntentInput {
  runId: string;
  operationId: string;
  /**
   * `fresh`: the run that completed starts its extraction. `settle`: a
   * reconciliation picks up an extraction that a crash or a failed save left
   * unsettled; the intent first counts what the memory store holds of it.
   */
  mode: 'fresh' | 'settle';
  /** How many of the run's first messages were its input (the extraction reads the last user turn among them). */
  inputCount: number;
  /** What an earlier attempt saved: how many mutations it planned, and how many of them were deletions. */
  planned?: number | null;
  deletes?: number;
}

export interface MemoryIntentContext {
  runId: string;
  operationId: string;
  mode: 'fresh' | 'settle';
  inputCount: number;
  plan: MemoryPlan | null;
  /** Mutations planned (deletions and writes), durable before any is applied; null until a plan is saved. */
  planned: number | null;
  /** How many of the planned mutations were deletions (they leave no record to count). */
  deletes: number;
  /** Mutations applied (or confirmed in the store). */
  mutations: number;
  error: IntentError | null;
}

export type PlanExtractionOutput = { kind: 'plan'; plan: MemoryPlan };
/** `restarted`: the save was restored, not made in this process: it permits no write, and the intent counts what landed. */
export type SavePlanOutput = { kind: 'written' } | { kind: 'restarted' };
export type ApplyPlanOutput =
  | { kind: 'applied'; mutations: number }
  /** A write failed after `mutations` were applied. */
  | { kind: 'stopped'; mutations: number; error: IntentError }
  | { kind: 'restarted' };
/** How many records of the operation the memory store holds. */
export interface ConfirmPlanOutput {
  found: number;
}

export interface MemoryIntentOutput {
  operationId: string;
  status: 'completed' | 'failed' | 'partial';
  planned: number | null;
  deletes: number;
  mutations: number;
  error: IntentError | null;
}

/**
 * The pure parts of a handoff (machines/run-handoff.ts): which call of an
 * ended batch hands the run over, and what the run keeps of it. The guard and
 * the actions that use them are registered in run-setup.ts.
 */
import type { Json, RunContext, RunPlan, ToolCallOutput } from './types.js';

/** What taking a handoff leaves the run with: the target's tools and their plan. */
export interface HandoffOutput {
  toolNames: string[];
  plan: RunPlan | null;
  /** The fail-over record with the target's model as the one the run calls now; absent while the run has none. */
  models?: Json;
}

/** The first call of the batch, in the turn's order, that ran a transfer tool to its end. */
function transferOf(context: RunContext): { id: string; output: ToolCallOutput; target: string } | null {
  const handoffs = context.handoffs;
  if (!handoffs) return null;
  for (const id of context.batch) {
    const output = context.outputs[id];
    const target = output && output.outcome === null ? handoffs[output.toolName] : undefined;
    if (output && typeof target === 'string') return { id, output, target };
  }
  return null;
}

/** A call of the ended batch completed a transfer: the run hands over before its next model call. */
export const handsOff = (context: RunContext): boolean => transferOf(context) !== null;

/**
 * The run's new active agent. Only the first transfer of a turn is taken; any
 * other transfer the same turn completed is answered as not taken, so the
 * model is never told it was handed to two agents.
 */
export function takeHandoff(context: RunContext): Partial<RunContext> {
  const taken = transferOf(context);
  if (!taken) return {};
  const outputs = { ...context.outputs };
  for (const id of context.batch) {
    const output = outputs[id];
    if (id === taken.id || !output || output.outcome !== null || typeof context.handoffs?.[output.toolName] !== 'string') continue;
    const modelOutput: Json = `Not transferred: the conversation was handed to ${taken.target} by another call of the same turn.`;
    outputs[id] = { ...output, modelOutput };
  }
  return { activeAgent: taken.target, outputs };
}

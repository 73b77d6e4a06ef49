/**
 * Types of a sub-agent call (machines/sub-agent.ts): what the parent's call
 * keeps of its child run, and what driving the child answers. Plain JSON.
 */
import type { ExecuteOutput, Json, ToolCallContext } from './types.js';

/** The child run of a sub-agent call, as the parent's receipt records it. */
export interface ChildRunFacts {
  /** The child's run id (derived from the parent run, the model step and the call id). */
  runId: string;
  /** Where the child stands while the parent's call waits on it: its approvals, or effects to reconcile. */
  waits?: 'approval' | 'reconciliation';
  /** The child's pending approvals (each with the run id of the run that issued it), while it waits on them. */
  pendingApprovals?: Json[];
  /** The child's interrupted effects (each with the run id of its run), while they wait on an operator. */
  unknownEffects?: Json[];
}

/** What driving the child takes: which call it is (the child's identity derives from it). */
export type RunChildInput = Pick<ToolCallContext, 'modelStep' | 'toolCallId' | 'toolName' | 'args'>;

/**
 * What driving the child answers: its answer (or its failure) as a tool's
 * result, or that it rests on approvals or on an operator's reconciliation.
 */
export type RunChildOutput =
  | (Extract<ExecuteOutput, { kind: 'result' } | { kind: 'threw' }> & { child: ChildRunFacts })
  | { kind: 'suspended'; child: ChildRunFacts }
  | { kind: 'reconcile'; child: ChildRunFacts };

/**
 * Evidence reconciliation: settle a tool call whose effect a crash left
 * unknown from verified evidence of the system it touched. The root `cairn`
 * entry re-exports it. See docs/evidence.md.
 */
export { reconcileAgentToolExecution, digestOfToolInput } from './reconcile.js';
export { ToolEvidenceError, type ToolEvidenceReason } from './errors.js';
export { evidenceStreamId } from './journal.js';
/** The operation id of a call: its tools' `context.idempotencyKey` (the same function as the root's `idempotencyKeyOf`). */
export { idempotencyKeyOf as toolOperationId } from '../sdk/tool.js';
export type {
  ReconcileAgentToolExecutionOptions, ToolEvidenceDecision, ToolExecutionEvidence, ToolExecutionJournalView, ToolReconciliationStore,
} from './types.js';

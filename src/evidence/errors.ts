/** The evidence reconciliation's typed error. */
import { CairnError } from '../errors/index.js';

/**
 * Why evidence did not settle a call:
 * - `invalid`: the evidence or the options are malformed; nothing was read.
 * - `not-found`: the run has no call with this operation id and tool call id.
 * - `binding-mismatch`: the evidence names another tool, other arguments (its input digest) or another call.
 * - `verifier-false`, `verifier-invalid` (a non-boolean answer), `verifier-threw`: the verifier did not accept it.
 * - `conflict`: the operation was settled by other evidence, or the run recorded its own outcome for the call.
 * - `run-ended`: the run completed, failed or stopped; it has nothing left to settle.
 */
export type ToolEvidenceReason =
  | 'invalid' | 'not-found' | 'binding-mismatch' | 'verifier-false' | 'verifier-invalid' | 'verifier-threw' | 'conflict' | 'run-ended';

const CODES = {
  invalid: 'evidence_invalid',
  conflict: 'evidence_conflict',
  'run-ended': 'evidence_conflict',
} as const;

/**
 * Evidence that did not settle a call. The operation stays blocked as it was
 * (a resume still stops with `tool-reconciliation-required`); rejections and
 * conflicts are recorded in the journal, malformed evidence is not.
 */
export class ToolEvidenceError extends CairnError {
  readonly reason: ToolEvidenceReason;
  /** The operation the evidence named, when it named one. */
  readonly operationId?: string;

  constructor(reason: ToolEvidenceReason, message: string, operationId?: string, cause?: unknown) {
    super(reason in CODES ? CODES[reason as keyof typeof CODES] : 'evidence_rejected', message, { fault: 'user', cause });
    this.name = 'ToolEvidenceError';
    this.reason = reason;
    if (operationId !== undefined) this.operationId = operationId;
  }
}

/**
 * What `reconcileAgentToolExecution` takes: the evidence an application
 * gathered from the system a tool's effect touched, the verifier that
 * authenticates it, and the store the run lives in.
 */
import type { JsonValue } from '../agent/json.js';
import type { AgentRunStore, LeaseProvider } from '../stores/types.js';
import type { AgentStreamJournal } from '../ui/journal.js';

/**
 * Evidence that a tool call's effect happened, as the system it touched
 * confirms it. Every field binds it to one call: the operation id (the
 * call's `idempotencyKey`, which the tool handed to that system), the run and
 * its scope, the tool call, a digest of the exact arguments, what the effect
 * returned, where the confirmation comes from and its proof.
 */
export interface ToolExecutionEvidence {
  /** The call's idempotency key (`context.idempotencyKey` of the tool; `idempotencyKeyOf(runId, modelStep, toolCallId)`). */
  operationId: string;
  runId: string;
  /** The run's tenant scope: the run is loaded under it, and refused under any other. */
  scope: string;
  toolCallId: string;
  toolName: string;
  /** `sha256:<hex>` of the canonical JSON of the call's arguments (`digestOfToolInput(args)`): what the effect was asked to do. */
  inputDigest: string;
  /** What the effect returned, as the tool would have returned it: it becomes the call's raw result. */
  output: JsonValue;
  /** The effect happened and failed: the call is answered as failed, with `output` as its message. @default false */
  isError?: boolean;
  /** Who confirms it (a ledger, a payment provider, ...). Kept in the journal. */
  source: string;
  /** What the verifier checks (a signed receipt, an external id). Only its digest is kept. */
  proof: JsonValue;
}

/** The call, as the run's record says it stands, handed to the verifier beside the evidence. */
export interface ToolExecutionJournalView {
  operationId: string;
  runId: string;
  scope: string;
  toolCallId: string;
  toolName: string;
  modelStep: number;
  /** The arguments the model gave, and their digest. */
  input: JsonValue;
  inputDigest: string;
  /** The receipt's status: `executing` for a call awaiting reconciliation. */
  status: string;
  /** Decisions the journal holds for this operation, oldest first. */
  decisions: ToolEvidenceDecision[];
}

/** One decision as the journal keeps it: digests, never the output or the proof themselves. */
export interface ToolEvidenceDecision {
  type: 'tool-evidence-decision';
  operationId: string;
  toolCallId: string;
  toolName: string;
  modelStep: number;
  decision: 'accepted' | 'rejected';
  /** Why it was rejected (see ToolEvidenceError's reasons). */
  reason?: string;
  evidenceDigest: string;
  inputDigest: string;
  outputDigest: string;
  proofDigest: string;
  isError: boolean;
  source: string;
  /** The call's outcome before the decision: its receipt's status, and a digest of its result when it had one. */
  previous: { status: string; outputDigest: string | null };
  /** When it was decided (ms, on `deps.clock`). */
  at: number;
}

/**
 * Where the run lives: its run store, the lease provider its executors use,
 * and a journal (the ops stores' `journal`). The SQLite and PostgreSQL ops
 * stores are such a store as they are; in memory, build one with
 * `createInMemoryAgentRunStore([], { leases })`, the same `leases` and
 * `createInMemoryAgentStreamJournal()`. The run store must check the lease
 * on save (the three built-in ones do when they know the provider).
 */
export interface ToolReconciliationStore {
  agentRuns: AgentRunStore;
  leases: LeaseProvider;
  journal: AgentStreamJournal;
}

export interface ReconcileAgentToolExecutionOptions {
  store: ToolReconciliationStore;
  evidence: ToolExecutionEvidence;
  /**
   * Authenticates the evidence against the system it names (its receipt, its
   * tenant): `true` accepts it. `false`, anything that is not a boolean, or a
   * throw rejects it. Never return true unconditionally.
   */
  verifyEvidence: (candidate: ToolExecutionEvidence, journal: ToolExecutionJournalView) => boolean | Promise<boolean>;
  /** How long the call holds the run's lease while it works (ms). @default 30000 */
  leaseTtlMs?: number;
  deps?: {
    /** The time of the decision and of the save (`updatedAt`). @default Date.now */
    clock?: { now(): number };
    /** The lease owner. @default nanoid */
    generateId?: () => string;
  };
}

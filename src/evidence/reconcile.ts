/**
 * reconcileAgentToolExecution: settles a call whose effect is unknown (an
 * `executing` receipt a crash left) from evidence the application gathered
 * in the system the effect touched. It builds on the resume's own
 * reconciliation: the accepted evidence becomes the receipt an operator's
 * `reconciledToolResults` would have written (raw result, `reconciled:
 * true`), and the next ordinary resume answers the call from it.
 *
 * Order of writes: the decision goes to the journal first, then the run's
 * record is saved at its next revision under the run's lease. A crash
 * between the two leaves an accepted decision and an unchanged record; the
 * same evidence again finds the decision and makes the save.
 */
import { nanoid } from 'nanoid';
import { digestOf } from '../agent/digest.js';
import { checkEnvelope, receiptKey, receiptOf } from '../agent/envelope.js';
import { interruptedCalls, reconciledReceipt } from '../agent/interrupted.js';
import type { JsonValue } from '../agent/json.js';
import { agentRunLeaseKey, claim } from '../agent/run-agent.js';
import { refreshInvocationInputs } from '../agent/stored-call.js';
import type { AgentRunEnvelope, AgentToolReceipt } from '../agent/types.js';
import { AgentRunLeaseError, RunIdentityError } from '../errors/index.js';
import { keepLease, type LeaseKeeper } from '../runtime/lease-keeper.js';
import { agentStateOf, type AgentState } from '../sdk/state.js';
import { idempotencyKeyOf } from '../sdk/tool.js';
import { checkOptions } from './check.js';
import { ToolEvidenceError, type ToolEvidenceReason } from './errors.js';
import { appendDecision, evidenceDigestOf, evidenceStreamId, readDecisions } from './journal.js';
import type { ReconcileAgentToolExecutionOptions, ToolEvidenceDecision, ToolExecutionEvidence, ToolExecutionJournalView } from './types.js';

const DEFAULT_TTL_MS = 30_000;

/** `sha256:` of a call's arguments as the evidence's `inputDigest` names them. */
export function digestOfToolInput(args: unknown): string {
  return digestOf(args);
}

interface StoredCall {
  value?: unknown;
  status?: string;
  context?: { modelStep: number; toolCallId: string; toolName: string; args?: JsonValue; receipt?: AgentToolReceipt | null };
  children?: Record<string, { snapshot?: { input?: unknown } } | undefined>;
}

/** The open calls of the record's current step that carry this tool call id. */
function callsOf(stored: AgentRunEnvelope, toolCallId: string): StoredCall[] {
  const snapshot = stored.snapshot as { context?: { batch?: string[] }; children?: Record<string, { snapshot?: StoredCall } | undefined> };
  return (snapshot.context?.batch ?? [])
    .map((id) => snapshot.children?.[id]?.snapshot)
    .filter((call): call is StoredCall => call?.context?.toolCallId === toolCallId);
}

/**
 * Settles one interrupted tool call from verified evidence, and returns the
 * run's state: the call answered from the evidence, the run still to be
 * continued (`runAgent(agent, { state })` or any resume goes on from it).
 *
 * Rejects, with nothing changed in the run, with ToolEvidenceError
 * (`evidence_invalid` before anything is read; `evidence_rejected` when the
 * verifier does not return true or the evidence names other arguments, another
 * tool or no call of the run; `evidence_conflict` when the operation was
 * settled by other evidence or has its own outcome), AgentRunLeaseError
 * `lease_held` while an executor holds the run, RunIdentityError for a run
 * that is missing or of another scope, UnsupportedStoreError for a store
 * without leases and a journal, and the store's errors.
 *
 * @example
 * ```ts
 * const state = await reconcileAgentToolExecution({ store: ops, evidence, verifyEvidence: (e, call) => ledger.confirms(e, call) });
 * ```
 */
export async function reconcileAgentToolExecution(options: ReconcileAgentToolExecutionOptions): Promise<AgentState> {
  const evidence = checkOptions(options);
  const { store } = options;
  const clock = options.deps?.clock ?? { now: () => Date.now() };
  const run = { runId: evidence.runId, scope: evidence.scope };
  const ttl = options.leaseTtlMs ?? DEFAULT_TTL_MS;
  const releaseClaim = claim(store.agentRuns, run.runId);
  let keeper: LeaseKeeper | null = null;
  try {
    // The lease first: while an executor holds the run, nothing is read, decided or written.
    const key = agentRunLeaseKey(run);
    const lease = await store.leases.acquire(key, (options.deps?.generateId ?? (() => nanoid()))(), ttl);
    if (!lease) throw new AgentRunLeaseError('lease_held', key, `Run ${run.runId} has an active executor (lease ${key}); its call stays blocked.`);
    keeper = keepLease(store.leases, lease, ttl);
    const loaded = await store.agentRuns.load(run.runId, { scope: run.scope });
    if (loaded === undefined) throw new RunIdentityError('run_not_found', run.runId);
    const stored = checkEnvelope(loaded, run.runId, run.scope);
    const streamId = evidenceStreamId(run);
    const journal = await readDecisions(store.journal, streamId);
    const settle = new Settle(options, evidence, stored, journal.decisions, clock);
    const plan = settle.decide();
    let seq = journal.seq;
    if (plan.kind === 'done') return agentStateOf({ record: stored, scope: run.scope });
    if (plan.kind === 'refuse') {
      if (plan.record) await appendDecision(store.journal, streamId, seq, run.scope, settle.decision('rejected', plan.reason));
      throw plan.error;
    }
    if (plan.kind === 'verify') {
      const verdict = await settle.verify(journal.decisions);
      if (verdict !== true) {
        await appendDecision(store.journal, streamId, seq, run.scope, settle.decision('rejected', verdict.reason));
        throw verdict;
      }
      if (keeper.lost) throw new AgentRunLeaseError('lease_lost', key);
      seq = await appendDecision(store.journal, streamId, seq, run.scope, settle.decision('accepted'));
    }
    // Accepted now, or by an earlier call whose save did not land: the record takes the evidence as the call's receipt.
    if (keeper.lost) throw new AgentRunLeaseError('lease_lost', key);
    const next = settle.settledRecord();
    await store.agentRuns.save(next, { lease: keeper.lease });
    return agentStateOf({ record: next, scope: run.scope });
  } finally {
    if (keeper) {
      keeper.stop();
      await store.leases.release(keeper.lease).catch(() => undefined);
    }
    releaseClaim();
  }
}

type Plan =
  | { kind: 'done' }
  | { kind: 'save' }
  | { kind: 'verify' }
  | { kind: 'refuse'; error: ToolEvidenceError; reason: ToolEvidenceReason; record: boolean };

/** One reconciliation's facts and decisions: which call, what the journal and the receipt say, what to do. */
class Settle {
  readonly digest: string;
  readonly call: StoredCall | undefined;
  readonly receipt: AgentToolReceipt | undefined;
  readonly modelStep: number;

  constructor(
    private readonly options: ReconcileAgentToolExecutionOptions,
    private readonly evidence: ToolExecutionEvidence,
    private readonly stored: AgentRunEnvelope,
    private readonly decisions: readonly ToolEvidenceDecision[],
    private readonly clock: { now(): number },
  ) {
    this.digest = evidenceDigestOf(evidence);
    this.call = callsOf(stored, evidence.toolCallId).find((c) => idempotencyKeyOf(stored.runId, c.context!.modelStep, evidence.toolCallId) === evidence.operationId);
    this.modelStep = this.call?.context?.modelStep ?? -1;
    this.receipt = this.call ? receiptOf(stored, receiptKey(this.modelStep, evidence.toolCallId)) : undefined;
  }

  private refuse(reason: ToolEvidenceReason, message: string, record = true): Plan {
    return { kind: 'refuse', reason, record, error: new ToolEvidenceError(reason, message, this.evidence.operationId) };
  }

  decide(): Plan {
    const { evidence, stored } = this;
    const id = evidence.operationId;
    if (!this.call || !this.receipt) return this.refuse('not-found', `Run ${stored.runId} has no open call ${evidence.toolCallId} with operation id ${id}.`, false);
    const accepted = this.decisions.find((d) => d.operationId === id && d.decision === 'accepted');
    const settledByEvidence = this.receipt.reconciled === true && this.receipt.status !== 'executing';
    if (accepted && accepted.evidenceDigest !== this.digest) {
      return this.refuse('conflict', `Operation ${id} was settled by other evidence; this evidence is not taken.`);
    }
    if (accepted) return settledByEvidence ? { kind: 'done' } : this.waiting() ? { kind: 'save' } : this.refuse('conflict', `Operation ${id} has an outcome of its own.`);
    if (stored.status === 'completed' || stored.status === 'failed' || stored.status === 'stopped') {
      return this.refuse('run-ended', `Run ${stored.runId} is ${stored.status}: it has no call left to settle.`);
    }
    if (!this.waiting()) {
      // A journal pruned past its retention no longer says it; the receipt still does.
      if (settledByEvidence && this.receipt.rawResult !== undefined && digestOf(this.receipt.rawResult) === digestOf(evidence.output)) return { kind: 'done' };
      return this.refuse('conflict', `Operation ${id} is not awaiting reconciliation: its receipt is ${this.receipt.status}.`);
    }
    if (this.receipt.toolName !== evidence.toolName) return this.refuse('binding-mismatch', `The evidence names tool ${evidence.toolName}; operation ${id} is a call of another tool.`);
    if (digestOfToolInput(this.call.context!.args ?? null) !== evidence.inputDigest) {
      return this.refuse('binding-mismatch', `The evidence's inputDigest is not the digest of operation ${id}'s arguments.`);
    }
    return { kind: 'verify' };
  }

  /** Whether the call is one the run cannot settle on its own: an interrupted, non-idempotent effect. */
  private waiting(): boolean {
    return interruptedCalls(this.stored).some((r) => r.key === this.receipt!.key);
  }

  view(decisions: readonly ToolEvidenceDecision[]): ToolExecutionJournalView {
    const { evidence, stored } = this;
    const input = structuredClone(this.call!.context!.args ?? null);
    return {
      operationId: evidence.operationId, runId: stored.runId, scope: stored.scope, toolCallId: evidence.toolCallId,
      toolName: this.receipt!.toolName, modelStep: this.modelStep, input, inputDigest: digestOfToolInput(input),
      status: this.receipt!.status, decisions: decisions.filter((d) => d.operationId === evidence.operationId).map((d) => structuredClone(d)),
    };
  }

  /** true, or the error that rejects the evidence: only a boolean true accepts it. */
  async verify(decisions: readonly ToolEvidenceDecision[]): Promise<true | ToolEvidenceError> {
    const id = this.evidence.operationId;
    let verdict: unknown;
    try {
      verdict = await this.options.verifyEvidence(structuredClone(this.evidence), this.view(decisions));
    } catch (error) {
      return new ToolEvidenceError('verifier-threw', `verifyEvidence threw for operation ${id}; the evidence is rejected.`, id, error);
    }
    if (verdict === true) return true;
    if (verdict === false) return new ToolEvidenceError('verifier-false', `verifyEvidence rejected the evidence for operation ${id}.`, id);
    return new ToolEvidenceError('verifier-invalid', `verifyEvidence returned ${typeof verdict}, not a boolean, for operation ${id}; the evidence is rejected.`, id);
  }

  decision(decision: 'accepted' | 'rejected', reason?: ToolEvidenceReason): ToolEvidenceDecision {
    const { evidence, receipt } = this;
    const previous = receipt?.rawResult !== undefined ? digestOf(receipt.rawResult) : receipt?.error !== undefined ? digestOf(receipt.error) : null;
    return {
      type: 'tool-evidence-decision', operationId: evidence.operationId, toolCallId: evidence.toolCallId,
      toolName: receipt?.toolName ?? evidence.toolName, modelStep: this.modelStep, decision, ...(reason ? { reason } : {}),
      evidenceDigest: this.digest, inputDigest: evidence.inputDigest, outputDigest: digestOf(evidence.output),
      proofDigest: digestOf(evidence.proof), isError: evidence.isError === true, source: evidence.source,
      previous: { status: receipt?.status ?? 'none', outputDigest: previous }, at: this.clock.now(),
    };
  }

  /** The record at its next revision with the evidence as the call's receipt, in the envelope and in the call's own context. */
  settledRecord(): AgentRunEnvelope {
    const { evidence } = this;
    const receipt = reconciledReceipt(this.receipt!, { toolCallId: evidence.toolCallId, output: evidence.output, ...(evidence.isError ? { isError: true } : {}) });
    const next = structuredClone(this.stored);
    next.receipts[receipt.key] = receipt;
    for (const call of callsOf(next, evidence.toolCallId)) {
      if (call.context!.modelStep !== this.modelStep) continue;
      // A retry a leg began is withdrawn: the receipt answers the call.
      Object.assign(call.context!, { receipt: structuredClone(receipt), retried: false });
      refreshInvocationInputs(call);
    }
    return { ...next, revision: this.stored.revision + 1, updatedAt: this.clock.now() };
  }
}

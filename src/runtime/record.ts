/**
 * The stored envelope as a pure function of the run actor's persisted
 * snapshot and the run's identity. Everything a store lists and a reader
 * inspects (status, what the run waits for, receipts, approval requests,
 * unknown effects, the fail-over record) is read from the snapshot, which is
 * where the run keeps it: the ended calls' receipts and requests in the run's
 * context, each open call's in its own. Building an envelope changes nothing
 * and emits nothing.
 */
import { RUN_MACHINE_VERSION } from '../../machines/index.js';
import type { CallApproval, CallReceipt, RunContext, ToolCallContext } from '../../machines/index.js';
import { envelopeVersion, ENVELOPE_KIND, lazyReceipts, receiptHasOutcome, RUN_MACHINE_ID } from '../agent/envelope.js';
import { describeUnknownEffects } from '../agent/interrupted.js';
import { memoryOfSnapshot } from '../memory/run-envelope.js';
import { chatOfSnapshot } from '../chat/projection-envelope.js';
import type {
  AgentResult, AgentRunBinding, AgentRunEnvelope, AgentRunModels, AgentRunStatus, AgentToolReceipt, JsonValue, PendingApproval,
  PendingClientCall, UnknownEffect,
} from '../agent/types.js';

/** A run actor's persisted snapshot, as plain JSON. */
export interface PersistedRun {
  status: string;
  value: unknown;
  context: RunContext;
  children?: Record<string, { src?: unknown; snapshot?: PersistedCall } | undefined>;
}

/** A tool-call actor's persisted snapshot. */
export interface PersistedCall {
  status: string;
  value: unknown;
  context: ToolCallContext;
}

export interface RunIdentity {
  runId: string;
  scope: string;
  /** The revision this envelope is saved as. */
  revision: number;
  binding: AgentRunBinding;
  createdAt: number;
  updatedAt: number;
}

export interface Pending {
  approvals: PendingApproval[];
  clientCalls: PendingClientCall[];
}

/** The top-level state of a run (`loop`, `suspended`, `completed`, ...). */
export function runState(snapshot: Pick<PersistedRun, 'value'>): string {
  const value = snapshot.value;
  return typeof value === 'string' ? value : Object.keys(value as object)[0] ?? '';
}

/** What an open call waits for, read from its state (`child`: a sub-agent call whose child run waits on approvals). */
export function callWait(call: Pick<PersistedCall, 'value'>): 'approval' | 'client' | 'unknown' | 'child' | null {
  const value = call.value as string | Record<string, unknown>;
  if (value === 'unknownEffect') return 'unknown';
  if (typeof value !== 'object' || value === null) return null;
  if (value.delegation === 'childSuspended') return 'child';
  if (value.delegation === 'childNeedsReconciliation') return 'unknown';
  if (value.approval === 'awaitingApproval') return 'approval';
  if (value.effectIdentity === 'awaitingClientResult') return 'client';
  return null;
}

/** The calls of the current batch that have not ended, in the turn's order. */
export function openCalls(snapshot: PersistedRun): PersistedCall[] {
  const out: PersistedCall[] = [];
  for (const id of snapshot.context.batch) {
    const call = snapshot.children?.[id]?.snapshot;
    if (call && call.status === 'active') out.push(call);
  }
  return out;
}

/** The receipt of each call of the current step: an ended call's from its output, an open one's from its own context. */
function batchReceipts(snapshot: PersistedRun): CallReceipt[] {
  const out: CallReceipt[] = [];
  for (const id of snapshot.context.batch) {
    const output = snapshot.context.outputs[id];
    const receipt = output ? output.receipt : snapshot.children?.[id]?.snapshot?.context.receipt;
    if (receipt) out.push(receipt);
  }
  return out;
}

/** Every approval request the run issued, with the verdict each got. */
export function approvalsOf(snapshot: PersistedRun): AgentRunEnvelope['approvals'] {
  const all: Record<string, CallApproval> = { ...snapshot.context.approvals };
  for (const call of openCalls(snapshot)) if (call.context.approval) all[call.context.approval.approvalId] = call.context.approval;
  const out: AgentRunEnvelope['approvals'] = {};
  for (const [approvalId, a] of Object.entries(all)) {
    out[approvalId] = { toolCallId: a.toolCallId, modelStep: a.modelStep, token: a.token, ...(a.verdict ? { verdict: { ...a.verdict } } : {}) };
  }
  return out;
}

/** What the run waits for: approvals (with their tokens) and client results. */
export function pendingOf(snapshot: PersistedRun): Pending {
  const approvals: PendingApproval[] = [];
  const clientCalls: PendingClientCall[] = [];
  for (const call of openCalls(snapshot)) {
    const c = call.context;
    if (receiptHasOutcome(c.receipt as AgentToolReceipt | null ?? undefined)) continue;
    const facts = { toolCallId: c.toolCallId, toolName: c.toolName, args: c.args as JsonValue, modelStep: c.modelStep };
    const wait = callWait(call);
    // A sub-agent's child asks through the root: its approvals (and its children's) are the run's, each with its runId.
    if (wait === 'child') approvals.push(...((c.receipt?.child?.pendingApprovals ?? []) as unknown as PendingApproval[]));
    if (wait === 'approval' && c.approval) {
      approvals.push({ approvalId: c.approval.approvalId, token: c.approval.token, ...facts });
      if (c.approval.client) clientCalls.push(facts);
    } else if (wait === 'client') {
      clientCalls.push(facts);
    }
  }
  return { approvals, clientCalls };
}

/** Receipts of open calls left `executing` (their effect may or may not have happened), with the verdict each ran under. */
export function unknownEffectsOf(snapshot: PersistedRun): UnknownEffect[] {
  const calls = openCalls(snapshot).filter((call) => callWait(call) === 'unknown' && call.context.receipt);
  const receipts = calls.filter((call) => !call.context.receipt!.child).map((call) => call.context.receipt as AgentToolReceipt);
  // A sub-agent call's child lists its own (each with its runId): they are reconciled at the child.
  const delegated = calls.flatMap((call) => (call.context.receipt!.child?.unknownEffects ?? []) as unknown as UnknownEffect[]);
  return [...describeUnknownEffects(receipts, approvalsOf(snapshot)), ...delegated];
}

/** The stored status, and what a suspended run waits for. */
export function statusOf(snapshot: PersistedRun): { status: AgentRunStatus; pending: Pending } {
  const none: Pending = { approvals: [], clientCalls: [] };
  const state = runState(snapshot);
  if (state === 'completed' || state === 'failed' || state === 'stopped') return { status: state, pending: none };
  // The run completed; its terminal commit and what follows it (the memory's extraction) are under way.
  if (state === 'ending') return { status: 'completed', pending: none };
  // The run stopped or failed; its terminal commit and its chat write are under way (machines/run-chat.ts).
  if (state === 'stopping') return { status: 'stopped', pending: none };
  if (state === 'failing') return { status: 'failed', pending: none };
  if (state === 'drained' || state === 'draining' || state === 'publishingDrain' || state === 'recordingDrain') return { status: 'drained', pending: none };
  // `suspending` is the save on the way to `suspended`; restored, it may already have been answered.
  // `publishingSuspension` and `recordingChat`: the suspension's chat write (machines/run-chat.ts), after its checkpoint.
  if (state === 'suspended' || state === 'suspending' || state === 'publishingSuspension' || state === 'recordingChat') {
    const pending = pendingOf(snapshot);
    if (pending.approvals.length + pending.clientCalls.length > 0) return { status: 'suspended', pending };
  }
  return { status: 'running', pending: none };
}

export interface EnvelopeExtras {
  /** A terminal save carries the run's result. */
  result?: AgentResult<unknown>;
  /**
   * A run that failed for a transient cause is stored from its last checkpoint
   * (`retryFailed` goes on from there), with what failed.
   */
  retryFrom?: { snapshot: PersistedRun; retry: NonNullable<AgentRunEnvelope['retry']> };
  /** The execution ledger the save found (a run with `execution`). */
  ledger?: NonNullable<AgentRunEnvelope['ledger']>;
}

/** The envelope of a run: a pure function of its persisted snapshot and identity. */
export function envelopeOf(snapshot: PersistedRun, identity: RunIdentity, extras: EnvelopeExtras = {}): AgentRunEnvelope {
  const { status, pending } = statusOf(snapshot);
  const stored = extras.retryFrom?.snapshot ?? snapshot;
  const approvals = approvalsOf(stored);
  const open = openCalls(stored);
  const openReceipts = open.map((c) => c.context.receipt).filter((r): r is CallReceipt => r !== null) as AgentToolReceipt[];
  const counts: Record<string, number> = {};
  for (const { toolCallId } of Object.values(approvals)) counts[toolCallId] = (counts[toolCallId] ?? 0) + 1;
  const models = (snapshot.context.models ?? null) as AgentRunModels | null;
  const memory = memoryOfSnapshot(snapshot);
  const chat = chatOfSnapshot(identity.runId, snapshot.context);
  const envelope: AgentRunEnvelope = {
    kind: ENVELOPE_KIND,
    // Memory (and chat) are state an older reader would ignore: such a record is version 2.
    version: memory || chat ? 2 : envelopeVersion(pending.approvals, openReceipts, open.some((c) => c.context.approval !== null)),
    runId: identity.runId,
    scope: identity.scope,
    revision: identity.revision,
    bindingId: identity.binding.bindingId,
    binding: identity.binding,
    machine: { id: RUN_MACHINE_ID, version: RUN_MACHINE_VERSION },
    snapshot: stored as unknown as JsonValue,
    // Replaced below by the record built when first read: a save through a row store never reads it.
    receipts: {},
    approvalRequestCounts: counts,
    approvals,
    status,
    pendingApprovals: pending.approvals,
    pendingClientCalls: pending.clientCalls,
    ...(extras.result ? { result: extras.result } : {}),
    ...(extras.retryFrom ? { retry: extras.retryFrom.retry } : {}),
    ...(models ? { models } : {}),
    ...(memory ? { memory } : {}),
    ...(chat ? { chat } : {}),
    ...(extras.ledger ? { ledger: extras.ledger } : {}),
    ...(typeof snapshot.context.activeAgent === 'string' ? { activeAgent: snapshot.context.activeAgent } : {}),
    createdAt: identity.createdAt,
    updatedAt: identity.updatedAt,
  };
  return lazyReceipts(envelope, stored.context.receipts as unknown as AgentToolReceipt[], batchReceipts(stored) as unknown as AgentToolReceipt[]);
}

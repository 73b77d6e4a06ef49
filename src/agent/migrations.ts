/**
 * Snapshot migrations: how a record written by an older run machine becomes
 * one the current machine restores. The chain is append-only: a machine
 * version bump adds one step from the version before it, and no step is ever
 * edited or removed, so a record of any earlier version walks the chain to the
 * current one. A migration works on the loaded record in memory, before any
 * check or write; the migrated record is then validated like any other.
 */
import { CheckpointVersionError } from '../errors/index.js';
import { RUN_MACHINE_VERSION } from '../../machines/index.js';
import { byStepThenCall, receiptKey, type CallApproval, type CallReceipt, type Json } from '../../machines/index.js';
import { approvalIdFor } from './approval-id.js';
import { refreshInvocationInputs } from './stored-call.js';
import type { AgentRunEnvelope } from './types.js';

export interface RunMigration {
  /** The machine version this step reads; it writes `from + 1`. */
  from: number;
  /** What changed, for people reading the chain. */
  description: string;
  migrate(record: AgentRunEnvelope): AgentRunEnvelope;
}

type Obj = Record<string, unknown>;
interface StoredChild { src?: unknown; snapshot?: { status?: string; value?: unknown; context?: Obj; children?: Record<string, StoredChild | undefined> } }

/**
 * 1 → 2: the receipts and approval requests moved from beside the snapshot into
 * it. Each open call takes its own receipt and request (and learns how many
 * calls its turn made); the ended calls' go to the run's context. A call that
 * v1 marked retried had its retry taken already, so it is cleared. What an
 * invocation in flight was started with is refreshed from its call's context,
 * since a restore restarts it with that input.
 */
function v1ToV2(record: AgentRunEnvelope): AgentRunEnvelope {
  const snapshot = structuredClone(record.snapshot) as unknown as { context: Obj; children?: Record<string, StoredChild | undefined> };
  const context = snapshot.context;
  const batch = (context.batch as string[] | undefined) ?? [];
  const receipts: Record<string, CallReceipt> = structuredClone(record.receipts ?? {}) as never;
  const approvals = structuredClone(record.approvals ?? {});
  const clientKeys = new Set((record.pendingClientCalls ?? []).map((c) => receiptKey(c.modelStep, c.toolCallId)));
  const ranged: Record<string, CallApproval> = {};
  for (const [approvalId, a] of Object.entries(approvals)) {
    ranged[approvalId] = {
      approvalId, token: a.token, toolCallId: a.toolCallId, modelStep: a.modelStep,
      client: clientKeys.has(receiptKey(a.modelStep, a.toolCallId)), ...(a.verdict ? { verdict: a.verdict } : {}),
    };
  }
  for (const [id, child] of Object.entries(snapshot.children ?? {})) {
    const call = child?.snapshot;
    if (child?.src !== 'toolCall' || !call?.context) continue;
    const c = call.context as { modelStep: number; toolCallId: string; toolName: string; args: Json } & Obj;
    const key = receiptKey(c.modelStep, c.toolCallId);
    const approvalId = approvalIdFor(record.runId, c);
    const inBatch = batch.includes(id);
    c.batchSize = batch.length;
    c.receipt = receipts[key] ?? null;
    c.approval = ranged[approvalId] ?? null;
    c.clientRequested = clientKeys.has(key) || JSON.stringify(call.value).includes('awaitingClientResult');
    c.retried = false;
    if (inBatch) {
      // The current step's calls keep their own: an open call in its context, an ended one in its output.
      const output = (context.outputs as Record<string, Obj> | undefined)?.[id];
      if (output) {
        output.receipt = receipts[key] ?? null;
        output.approval = ranged[approvalId] ?? null;
      }
      delete receipts[key];
      if (call.status === 'active') delete ranged[approvalId];
    }
    refreshInvocationInputs(call as Parameters<typeof refreshInvocationInputs>[0]);
  }
  context.receipts = Object.values(receipts).sort(byStepThenCall);
  context.approvals = ranged;
  if (context.models === undefined || context.models === null) context.models = (record.models ?? null) as Json;
  // The run's own invocations in flight: the model call and the checks take their inputs from the context now.
  for (const child of Object.values(snapshot.children ?? {})) {
    const promise = child?.snapshot as { input?: Obj } | undefined;
    if (!child || !promise?.input || child.src === 'toolCall') continue;
    if (child.src === 'callModel') Object.assign(promise.input, { deadlineAt: context.deadlineAt ?? null, models: context.models ?? null });
    if (child.src === 'validateOutput') {
      Object.assign(promise.input, { turn: context.lastTurn, attempt: ((context.outputAttempts as number | undefined) ?? 0) + 1 });
    }
    if (child.src === 'runVerifier') Object.assign(promise.input, { candidate: context.candidate, deadlineAt: context.deadlineAt ?? null });
  }
  return { ...record, machine: { ...record.machine, version: 2 }, snapshot: snapshot as unknown as AgentRunEnvelope['snapshot'] };
}

/**
 * 2 → 3: the machine learned two ways to end (a model call the execution
 * budget refused stops the run with `budget-exceeded`; a resume whose settle
 * finds a call the execution policy forbids fails it). No state or field of a
 * version-2 snapshot changed, so the snapshot is kept as it is.
 */
function v2ToV3(record: AgentRunEnvelope): AgentRunEnvelope {
  return { ...record, machine: { ...record.machine, version: 3 } };
}

/** The chain, oldest first. Append only. */
export const RUN_MIGRATIONS: readonly RunMigration[] = Object.freeze([
  { from: 1, description: 'Receipts and approval requests move into the snapshot.', migrate: v1ToV2 },
  { from: 2, description: 'The budget stop and the settle\'s policy check; the snapshot is unchanged.', migrate: v2ToV3 },
]);

/**
 * The record as the current machine reads it: unchanged when it is current,
 * migrated step by step when it is older, refused with CheckpointVersionError
 * when it is newer than this reader (or of no version it knows).
 */
export function migrateRecord(record: AgentRunEnvelope): AgentRunEnvelope {
  const version = record.machine?.version;
  const known = [...RUN_MIGRATIONS.map((m) => m.from), RUN_MACHINE_VERSION];
  if (typeof version !== 'number' || !known.includes(version)) throw new CheckpointVersionError(version ?? null, known);
  let current = record;
  for (const step of RUN_MIGRATIONS) {
    if (current.machine.version === step.from) current = step.migrate(current);
  }
  return current;
}

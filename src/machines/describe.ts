/**
 * `describeRun`: one stored run as plain data, for a person or a tool that
 * draws it on its charts. It reads the record only (no model, no tool, no
 * store), migrates a record of an older machine in memory first, and shows
 * no more than `inspectRun` does: no tokens, no raw results, no arguments,
 * no transcript text.
 */
import { checkEnvelope } from '../agent/envelope.js';
import type { AgentRunEnvelopeV3 } from '../v3/envelope.js';
import { describeV3Fields, engineViewOfV3, isV3Record, type DescribedV3 } from '../v3/store-read.js';
import { interruptedCalls } from '../agent/interrupted.js';
import type { AgentRunEnvelope, AgentRunStatus, AgentToolReceipt } from '../agent/types.js';
import { InvalidOptionsError } from '../errors/index.js';
import { statePaths } from './chart-model.js';

export { statePaths };
import { totalsOf } from '../policy/ledger.js';
import { hierarchyOf, type RunHierarchy } from '../delegation/agent-tool-hierarchy.js';
import type { LedgerTotals } from '../policy/types.js';

/** A call of the step under way, where it stands in the tool-call chart. */
export interface DescribedCall {
  /** The child actor's id in the run's snapshot. */
  actorId: string;
  toolCallId: string;
  toolName: string;
  modelStep: number;
  /** The active states of the call's chart, as dotted paths (`approval.awaitingApproval`). */
  states: string[];
  /** The call's stage: the chart's top-level state it is in. */
  stage: string;
  /** Its receipt's status, when it has one. */
  receipt: AgentToolReceipt['status'] | null;
}

/** A receipt without its result or error. */
export interface DescribedReceipt {
  key: string;
  toolCallId: string;
  toolName: string;
  modelStep: number;
  status: AgentToolReceipt['status'];
  idempotent: boolean;
  reconciled: boolean;
  client: boolean;
}

/** One model turn of the run's history, from its transcript and receipts. */
export interface DescribedStep {
  step: number;
  /** How long the turn's text was (its text is not shown). */
  textLength: number;
  /** The revision of the save that wrote the turn, when the envelope carries `saves` (see `load(runId, { saves: true })`); else null. */
  savedAt: number | null;
  calls: {
    toolCallId: string;
    toolName: string;
    /** `answered` once the transcript holds the call's result (`error` when that result is an error), else `open`. */
    outcome: 'answered' | 'error' | 'open';
    receipt: AgentToolReceipt['status'] | null;
    /** The revision of the save that wrote the call's result into the transcript (null: no result yet, or not known). */
    resultSavedAt: number | null;
    /** The revision of the save that last wrote the call's receipt (its latest status); null when not known. */
    receiptSavedAt: number | null;
  }[];
}

export interface RunDescription {
  runId: string;
  /** The machine the record was written by, and the one it reads as now (after migration). */
  machine: { id: string; version: number; storedVersion: number };
  status: AgentRunStatus;
  /** The record's revision: how many saves it has had. */
  revision: number;
  createdAt: number;
  updatedAt: number;
  /** The active states of the run's chart, as dotted paths. */
  states: string[];
  /** The calls of the step under way (the run's tool-call children), in the turn's order. */
  calls: DescribedCall[];
  receipts: { byStatus: Partial<Record<AgentToolReceipt['status'], number>>; list: DescribedReceipt[] };
  pendingApprovals: { approvalId: string; toolCallId: string; toolName: string; modelStep: number }[];
  pendingClientCalls: { toolCallId: string; toolName: string; modelStep: number }[];
  /** Calls whose effect may or may not have happened (their receipt says `executing`). */
  unknownEffects: { toolCallId: string; toolName: string; modelStep: number }[];
  steps: DescribedStep[];
  usage: { inputTokens: number; outputTokens: number; totalTokens: number };
  /** Why it stopped, its error code, and whether a failed run can be retried. */
  outcome: { stopReason: string | null; errorCode: string | null; retryable: boolean };
  /**
   * The execution ledger the run checkpoints (a run with `execution`): its name, the context's scope, whether it is
   * only this context's slice, how many entries, and what they add up to. Null without one.
   */
  ledger: { name: string; scope: string; subtree: boolean; entries: number; totals: LedgerTotals } | null;
  /** A V3 record's own fields (its packages, working memory, memory intents, redactions); absent for version 1 and 2. */
  v3?: DescribedV3;
  /** The sub-agent hierarchy (docs/delegation.md#sub-agents): the run that started this one (null at the top) and the child runs it started. */
  parentRunId: RunHierarchy['parentRunId'];
  childRuns: RunHierarchy['childRuns'];
}

interface PersistedActor {
  value?: unknown;
  context?: Record<string, unknown>;
  children?: Record<string, { src?: unknown; snapshot?: PersistedActor }>;
}


const receiptView = (r: AgentToolReceipt): DescribedReceipt => ({
  key: r.key, toolCallId: r.toolCallId, toolName: r.toolName, modelStep: r.modelStep, status: r.status,
  idempotent: r.idempotent === true, reconciled: r.reconciled === true, client: r.client === true,
});

/**
 * Describes one stored run. The envelope is checked like any record a resume
 * loads (refused with the same typed errors: `invalid_envelope`, or
 * CheckpointVersionError for a machine newer than this reader); a record of
 * an older machine version is described after its migration.
 *
 * @example
 * const description = describeRun(await store.load('run-1'));
 * console.log(description.states, description.calls.map((c) => c.stage));
 */
export function describeRun(stored: AgentRunEnvelope | AgentRunEnvelopeV3): RunDescription {
  if (stored === null || typeof stored !== 'object') throw new InvalidOptionsError('describeRun: pass a stored run (an envelope).', 'invalid_envelope');
  // A V3 record is described as the run it is, plus its own fields.
  const envelope = isV3Record(stored) ? engineViewOfV3(stored) : stored as AgentRunEnvelope;
  const storedVersion = envelope.machine?.version;
  const record = checkEnvelope(envelope, envelope.runId, envelope.scope);
  const snapshot = record.snapshot as PersistedActor;
  const context = snapshot.context ?? {};
  const receipts = Object.values(record.receipts).sort((a, b) => a.modelStep - b.modelStep || a.key.localeCompare(b.key));
  const receiptOf = new Map(receipts.map((r) => [`${r.modelStep}:${r.toolCallId}`, r] as const));

  const calls: DescribedCall[] = [];
  for (const [actorId, child] of Object.entries(snapshot.children ?? {})) {
    const callContext = child.snapshot?.context;
    if (child.src !== 'toolCall' || !callContext) continue;
    const states = statePaths(child.snapshot?.value);
    const modelStep = Number(callContext.modelStep);
    const toolCallId = String(callContext.toolCallId);
    calls.push({
      actorId, toolCallId, toolName: String(callContext.toolName), modelStep, states,
      stage: states[0]?.split('.')[0] ?? 'unknown',
      receipt: receiptOf.get(`${modelStep}:${toolCallId}`)?.status ?? null,
    });
  }
  const batch = Array.isArray(context.batch) ? (context.batch as string[]) : [];
  calls.sort((a, b) => batch.indexOf(a.actorId) - batch.indexOf(b.actorId));

  const byStatus: Partial<Record<AgentToolReceipt['status'], number>> = {};
  for (const r of receipts) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
  const usage = (context.usage ?? {}) as Partial<RunDescription['usage']>;
  const error = context.error as { code?: string } | null | undefined;
  const ledger = record.ledger
    ? { name: record.ledger.name, scope: record.ledger.scope, subtree: record.ledger.subtree, entries: record.ledger.entries.length, totals: totalsOf(record.ledger.entries) }
    : null;

  return {
    runId: record.runId,
    machine: { id: record.machine.id, version: record.machine.version, storedVersion: typeof storedVersion === 'number' ? storedVersion : record.machine.version },
    status: record.status,
    revision: record.revision,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    states: statePaths(snapshot.value),
    calls,
    receipts: { byStatus, list: receipts.map(receiptView) },
    pendingApprovals: record.pendingApprovals.map(({ approvalId, toolCallId, toolName, modelStep }) => ({ approvalId, toolCallId, toolName, modelStep })),
    pendingClientCalls: record.pendingClientCalls.map(({ toolCallId, toolName, modelStep }) => ({ toolCallId, toolName, modelStep })),
    unknownEffects: interruptedCalls(record).map(({ toolCallId, toolName, modelStep }) => ({ toolCallId, toolName, modelStep })),
    steps: stepsOf(Array.isArray(context.messages) ? context.messages : [], receiptOf, envelope.saves),
    usage: { inputTokens: usage.inputTokens ?? 0, outputTokens: usage.outputTokens ?? 0, totalTokens: usage.totalTokens ?? 0 },
    outcome: {
      stopReason: typeof context.stopReason === 'string' ? context.stopReason : null,
      errorCode: record.retry?.error.code ?? error?.code ?? (record.result?.status === 'failed' ? record.result.error.code : null),
      retryable: record.status === 'failed' && record.retry !== undefined,
    },
    ledger,
    ...hierarchyOf(record),
    ...(isV3Record(stored) ? { v3: describeV3Fields(stored) } : {}),
  };
}

type StoredMessage = { role?: string; content?: unknown; toolCalls?: { toolCallId: string; toolName: string }[]; toolCallId?: string; isError?: boolean };

/** The model turns in the transcript: each assistant message is a step, its calls answered by the tool messages after it. */
function stepsOf(
  messages: readonly unknown[], receiptOf: ReadonlyMap<string, AgentToolReceipt>, saves: AgentRunEnvelope['saves'],
): DescribedStep[] {
  const steps: DescribedStep[] = [];
  const savedAt = (index: number) => saves?.messages[index] ?? null;
  messages.forEach((raw, index) => {
    const message = raw as StoredMessage;
    if (message?.role === 'assistant') {
      const step = steps.length;
      steps.push({
        step,
        textLength: typeof message.content === 'string' ? message.content.length : 0,
        savedAt: savedAt(index),
        calls: (message.toolCalls ?? []).map((c) => {
          const receipt = receiptOf.get(`${step}:${c.toolCallId}`);
          return {
            toolCallId: c.toolCallId, toolName: c.toolName, outcome: 'open' as const, receipt: receipt?.status ?? null,
            resultSavedAt: null, receiptSavedAt: receipt ? saves?.receipts[receipt.key] ?? null : null,
          };
        }),
      });
    } else if (message?.role === 'tool' && steps.length > 0) {
      const call = steps[steps.length - 1]!.calls.find((c) => c.toolCallId === message.toolCallId);
      if (call) {
        call.outcome = message.isError ? 'error' : 'answered';
        call.resultSavedAt = savedAt(index);
      }
    }
  });
  return steps;
}

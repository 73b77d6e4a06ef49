/**
 * The state an Agent run returns: plain, serializable data that says where the
 * run is (messages, steps, tool results, approvals, usage, status, outcome)
 * and carries the run's checkpoint (`record`, the engine's stored envelope),
 * so `agent.run({ state })` continues it in any process, with or without a
 * store. A digest over everything else makes a state that was edited, cut or
 * mixed up a typed error instead of a run that goes on from data nobody wrote.
 *
 * The digest detects changes; it does not authenticate. A state that passes
 * through untrusted hands should be kept server-side or in a run store.
 */
import { digestOf } from '../agent/digest.js';
import { resultBase } from '../agent/result.js';
import type { RunContext } from '../../machines/index.js';
import type {
  AgentResult, AgentRunEnvelope, AgentRunStatus, Message, PendingApproval, PendingClientCall, StopReason, Usage,
} from '../agent/types.js';
import type { SerializedError } from '../errors/index.js';
import { agentApprovalId } from './approvals.js';
import { AgentStateError } from './errors.js';
import { taskOutcomeOf, TASK_OUTCOMES, type TaskOutcome } from './task-outcome.js';
import { digestOfSorted, sortedCopy } from './canonical.js';

/** The schema version this Cairn writes, and the ones it reads. */
export const AGENT_STATE_SCHEMA_VERSION = 1;
export const SUPPORTED_AGENT_STATE_VERSIONS: readonly number[] = [1];

/** One model turn of the run. */
export interface AgentStateStep {
  /** 0 for the first turn. */
  index: number;
  text: string;
  toolCalls: { toolCallId: string; toolName: string }[];
}

/** What became of one tool call, from its receipt. */
export interface AgentStateToolResult {
  toolCallId: string;
  toolName: string;
  modelStep: number;
  /** The receipt's status: `completed`, `failed`, `executing` (interrupted), ... */
  status: string;
  isError: boolean;
  /** What the model was shown. */
  output?: unknown;
  /** Recorded by an operator or a reconciliation, not by the tool. */
  reconciled?: boolean;
}

/** An approval the run asked for, and what was decided. */
export interface AgentStateApproval {
  approvalId: string;
  toolCallId: string;
  modelStep: number;
  status: 'pending' | 'approved' | 'denied';
  reason?: string;
}

/** A call that waits for the application's decision. Answer it with `{ approvalId, approved, token }`. */
export interface PendingAgentApproval {
  approvalId: string;
  /** The tool's approvalVersion the approval is asked under (null when the tool has none). */
  approvalVersion: string | null;
  /** Single use: a decision must carry it. */
  token: string;
  toolName: string;
  toolCallId: string;
  modelStep: number;
  /** sha256 of the arguments' canonical JSON: what the decision is about. */
  argsDigest: string;
  args: unknown;
  /** The sub-agent's child run that asks (docs/delegation.md#sub-agents); absent for the run's own calls. */
  runId?: string;
}

export interface AgentState {
  kind: 'cairn-agent-state';
  schemaVersion: number;
  runId: string;
  scope: string;
  /** The record's revision: one more with every save of the run. */
  revision: number;
  status: AgentRunStatus;
  /** Absent from states written before it existed; read them with {@link taskOutcomeOfState}. */
  taskOutcome?: TaskOutcome;
  /** Model turns made so far. */
  currentStep: number;
  outputText: string;
  messages: Message[];
  steps: AgentStateStep[];
  toolResults: AgentStateToolResult[];
  approvals: AgentStateApproval[];
  pendingApprovals: PendingAgentApproval[];
  pendingClientCalls: PendingClientCall[];
  usage: Usage;
  stopReason?: StopReason;
  error?: SerializedError;
  /** The run's checkpoint; null when the run was refused before it saved anything. */
  record: AgentRunEnvelope | null;
  /** `sha256:` of the canonical JSON of every other field. */
  digest: string;
}

const INSPECT = Symbol.for('nodejs.util.inspect.custom');
/** Receipts whose call the model was answered with an error (a failed receipt keeps no isError of its own). */
const ERROR_STATUSES: ReadonlySet<string> = new Set(['failed', 'validation-failed', 'projection-failed']);

/** What `console.log(state)` prints: counts and status, never the conversation, arguments or ids. */
class AgentStateSummary {
  constructor(state: AgentState) {
    Object.assign(this, {
      status: state.status,
      taskOutcome: state.taskOutcome,
      schemaVersion: state.schemaVersion,
      revision: state.revision,
      currentStep: state.currentStep,
      messages: state.messages.length,
      toolResults: state.toolResults.length,
      pendingApprovals: state.pendingApprovals.length,
      usage: state.usage,
    });
  }
}

/** The digest is computed over every field but itself (symbol keys are not data). */
/** The digest of a state that is a sorted copy: over every field but the digest itself (symbol keys are not data). */
function digestOfState(state: Omit<AgentState, 'digest'> & { digest?: unknown }): string {
  const { digest: _digest, ...rest } = state;
  return digestOfSorted(rest);
}

function withSummary(state: AgentState): AgentState {
  Object.defineProperty(state, INSPECT, { value: () => new AgentStateSummary(state), enumerable: false });
  return state;
}

function stepsOf(messages: Message[]): AgentStateStep[] {
  const steps: AgentStateStep[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    steps.push({
      index: steps.length,
      text: m.content,
      toolCalls: (m.toolCalls ?? []).map((c) => ({ toolCallId: c.toolCallId, toolName: c.toolName })),
    });
  }
  return steps;
}

/** The result a record stands for when no leg just ended (a state made from a store's record). */
function resultOfRecord(record: AgentRunEnvelope): AgentResult<unknown> {
  if (record.result) return record.result;
  const context = (record.snapshot as unknown as { context: RunContext }).context;
  const base = resultBase(record.runId, context, []);
  return record.status === 'suspended'
    ? { ...base, status: 'suspended', pendingApprovals: record.pendingApprovals, pendingClientCalls: record.pendingClientCalls }
    : ({ ...base, status: 'suspended', pendingApprovals: [], pendingClientCalls: [] } as AgentResult<unknown>);
}

export interface StateInput {
  record: AgentRunEnvelope | null;
  /** The result of the leg that just ended; read from the record when absent. */
  result?: AgentResult<unknown>;
  scope: string;
  /** The current approvalVersion of a tool, by name. */
  approvalVersionOf?: (toolName: string) => string | undefined;
}

/**
 * The state of a run, from its record and the result of its last leg. Other
 * parts of Cairn that change a stored run (a reconciliation) build the state
 * they return with this too.
 */
export function agentStateOf(input: StateInput): AgentState {
  const { record, scope } = input;
  const result = input.result ?? (record ? resultOfRecord(record) : undefined);
  if (!result) throw new AgentStateError('agent_state_invalid', 'A state needs a record or a result.');
  const versionOf = input.approvalVersionOf ?? (() => undefined);
  const messages = result.messages;
  const pending: PendingApproval[] = result.status === 'suspended' ? result.pendingApprovals : [];
  const pendingIds = new Set(pending.map((p) => p.approvalId));
  const status: AgentRunStatus = record && result.status === 'suspended' && record.status !== 'suspended' ? record.status : result.status;
  const state: Omit<AgentState, 'digest'> = {
    kind: 'cairn-agent-state',
    schemaVersion: AGENT_STATE_SCHEMA_VERSION,
    runId: result.runId || record?.runId || '',
    scope: record?.scope ?? scope,
    revision: record?.revision ?? 0,
    status,
    taskOutcome: taskOutcomeOf(record, result),
    currentStep: result.steps,
    outputText: result.text,
    messages,
    steps: stepsOf(messages),
    toolResults: Object.values(record?.receipts ?? {}).map((r) => ({
      toolCallId: r.toolCallId, toolName: r.toolName, modelStep: r.modelStep, status: r.status, isError: r.isError === true || ERROR_STATUSES.has(r.status),
      ...(r.modelOutput !== undefined ? { output: r.modelOutput } : {}), ...(r.reconciled ? { reconciled: true } : {}),
    })),
    approvals: Object.entries(record?.approvals ?? {}).map(([approvalId, a]) => ({
      approvalId, toolCallId: a.toolCallId, modelStep: a.modelStep,
      status: pendingIds.has(approvalId) || !a.verdict ? 'pending' as const : a.verdict.approved ? 'approved' as const : 'denied' as const,
      ...(a.verdict?.reason !== undefined ? { reason: a.verdict.reason } : {}),
    })),
    pendingApprovals: pending.map((p) => {
      const version = versionOf(p.toolName);
      return {
        approvalId: agentApprovalId(p.approvalId, version), approvalVersion: version ?? null, token: p.token,
        toolName: p.toolName, toolCallId: p.toolCallId, modelStep: p.modelStep, argsDigest: digestOf(p.args), args: p.args,
        ...(p.runId !== undefined ? { runId: p.runId } : {}),
      };
    }),
    pendingClientCalls: result.status === 'suspended' ? result.pendingClientCalls : [],
    usage: { ...result.usage },
    ...(result.status === 'stopped' ? { stopReason: result.reason } : {}),
    ...(result.status === 'failed' ? { error: result.error } : {}),
    record,
  };
  // One copy of everything: the state shares nothing with the record the engine saved or the result it returned.
  const plain = sortedCopy(state) as Omit<AgentState, 'digest'>;
  return withSummary({ ...plain, digest: digestOfSorted(plain) });
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * Checks a state before anything continues it: a Cairn agent state, of a
 * schema version this reader knows, whose digest matches. Returns a plain copy.
 */
export function checkAgentState(value: unknown): AgentState {
  if (!isObject(value) || value.kind !== 'cairn-agent-state') {
    throw new AgentStateError('agent_state_invalid', 'state is not a Cairn agent state (kind "cairn-agent-state"); pass the state a run returned.');
  }
  if (typeof value.schemaVersion !== 'number' || !SUPPORTED_AGENT_STATE_VERSIONS.includes(value.schemaVersion)) {
    throw new AgentStateError(
      'agent_state_version_unsupported',
      `state has schema version ${JSON.stringify(value.schemaVersion ?? null)}; this Cairn reads ${SUPPORTED_AGENT_STATE_VERSIONS.join(', ')}.`,
    );
  }
  let plain: AgentState;
  let digest: string;
  try {
    // Copied in sorted key order, as the writer built it: the digest does not depend on how the state was stored.
    plain = sortedCopy(value) as AgentState;
    digest = digestOfState(plain);
  } catch {
    throw new AgentStateError('agent_state_invalid', 'state is not plain JSON data.');
  }
  if (typeof plain.digest !== 'string' || digest !== plain.digest) {
    throw new AgentStateError('agent_state_tampered', 'state does not match its digest: it was changed after the run returned it. Nothing ran.');
  }
  const shaped = typeof plain.runId === 'string' && plain.runId !== '' && typeof plain.scope === 'string' &&
    Array.isArray(plain.messages) && (plain.record === null || isObject(plain.record)) &&
    (plain.taskOutcome === undefined || TASK_OUTCOMES.includes(plain.taskOutcome));
  if (!shaped) throw new AgentStateError('agent_state_invalid', 'state is incomplete: it needs runId, scope, messages and record.');
  return withSummary(plain);
}

/** A state's outcome: the one it carries, or, for a state written before the field existed, the one its record gives. */
export function taskOutcomeOfState(state: AgentState): TaskOutcome {
  return state.taskOutcome ?? taskOutcomeOf(state.record, undefined);
}

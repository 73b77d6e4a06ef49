/**
 * What a run produces and keeps: its results and stream events, the run view,
 * the receipts of its effects, and the stored envelope. Nothing here refers to
 * the store contract or the options, so the stores can depend on it.
 */
import type { SerializedError } from '../errors/index.js';
import type { FinishReason, ModelMessage as Message, Usage } from '../models/types.js';
import type { LedgerEntry } from '../policy/index.js';
import type { CallOutcome } from '../../machines/types.js';
import type { JsonValue } from './json.js';
import type { AgentRunMemory } from '../memory/run-types.js';
import type { AgentRunChat } from '../chat/projection-types.js';

export type VerifyVerdict =
  | { status: 'verified' }
  | { status: 'rejected'; feedback: string }
  | { status: 'inconclusive'; reason?: string };

/** A model as the fail-over record names it. */
export interface ModelRef {
  provider: string;
  modelId: string;
  /** The wire, when the provider has several (`responses`, `chat`, ...). */
  protocol?: string;
}

/** One fail-over of a model call to the next candidate. */
export interface ModelFailover {
  /** Which candidate of the call failed: 1 for the first one it tried. */
  attempt: number;
  failed: ModelRef;
  next: ModelRef;
  /** The model step of the call. */
  modelStep: number;
  phase: 'loop' | 'finalize';
  /** Why it failed (redacted), with its transient cause. */
  error: SerializedError & { cause?: string };
}

/** `AgentRunEnvelope.models`: the model the run calls now and every fail-over so far. */
export interface AgentRunModels {
  /** The version of the fail-over rules the run follows. */
  policy: 1;
  selected: ModelRef;
  failovers: ModelFailover[];
}

export interface PendingApproval {
  approvalId: string;
  token: string;
  toolCallId: string;
  toolName: string;
  args: JsonValue;
  modelStep: number;
  /** The sub-agent's child run that asked (docs/delegation.md#sub-agents); absent for the run's own calls. Answer it on the root's resume. */
  runId?: string;
}

export interface PendingClientCall {
  toolCallId: string;
  toolName: string;
  args: JsonValue;
  modelStep: number;
}

/**
 * The run's spending, and its execution ledger's totals under the run's
 * context. Without `execution` there is no ledger: reserved, committed and
 * unknown are zero.
 */
export interface Accounting {
  /** What this run's model calls used; usd null unless every model that answered has a price. */
  spent: { inputTokens: number; outputTokens: number; usd: number | null };
  /** Estimates of admitted calls still in flight. */
  reserved: { usd: number; tokens: number };
  /** Known usage of settled calls. */
  committed: { usd: number; tokens: number };
  /** Holds whose outcome stayed uncertain (an attempt the provider may have billed), and calls of unpriced models (tokens only). */
  unknown: { usd: number; tokens: number };
}

interface ResultBase {
  runId: string;
  messages: Message[];
  usage: Usage;
  /** Usage by the model that answered (`provider:modelId`), present when more than one did (after a fail-over). */
  usageByModel?: Record<string, Usage>;
  /** Model turns this run made, across every leg. */
  steps: number;
  accounting: Accounting;
  /** The text of the last assistant turn. */
  text: string;
  warnings: AgentWarning[];
}

export type StopReason =
  | 'max-steps'
  | 'aborted'
  | 'refusal'
  | 'length'
  | 'verification-inconclusive'
  | 'verification-attempts-exhausted'
  | 'output-attempts-exhausted'
  | 'tool-reconciliation-required'
  | 'drained'
  /** The execution budget refused the next model call: `stopDetails` says what was spent, held and asked for. */
  | 'budget-exceeded';

export type AgentResult<T = string> =
  | (ResultBase & { status: 'completed'; output: T })
  | (ResultBase & { status: 'suspended'; pendingApprovals: PendingApproval[]; pendingClientCalls: PendingClientCall[] })
  | (ResultBase & { status: 'stopped'; reason: StopReason; stopDetails?: JsonValue; unknownEffects?: UnknownEffect[] })
  | (ResultBase & {
    status: 'failed';
    error: SerializedError;
    /** Present when the cause was transient: `resumeAgent({ ..., retryFailed: true })` can go on. */
    retry?: { cause: string; phase: 'loop' | 'finalize' };
  });

export interface AgentWarning {
  type: 'warning';
  setting: string;
  message: string;
  toolCallId?: string;
  /** What a memory warning is about: `embedding-mismatch`, `unaccounted-usage`, `memory_extraction_partial`. */
  code?: string;
}

/** How a tool call ended; a successful call carries no outcome. */
export type ToolCallOutcome = Exclude<CallOutcome, 'completed'>;

/** Events of a stream, named noun-then-action. */
export type AgentEvent<T = string> =
  | { type: 'run-start'; runId: string; resumed: boolean }
  | { type: 'step-start'; step: number; phase: 'loop' | 'finalize' }
  | { type: 'text-delta'; step: number; delta: string }
  /** What a reasoning model shows of its thinking, as it streams. */
  | { type: 'reasoning-delta'; step: number; delta: string }
  | { type: 'tool-call-start'; step: number; toolCallId: string; toolName: string; args: JsonValue }
  | { type: 'tool-call-end'; step: number; toolCallId: string; toolName: string; output: JsonValue | string; isError: boolean; outcome?: ToolCallOutcome }
  | { type: 'tool-output'; step: number; toolCallId: string; toolName: string; rawResult: unknown }
  | { type: 'approval-request'; approval: PendingApproval }
  | { type: 'client-call-request'; call: PendingClientCall }
  | { type: 'step-finish'; step: number; finishReason: FinishReason; usage: Usage }
  | { type: 'output-attempt'; attempt: number; valid: boolean; issue?: string }
  | { type: 'verify-result'; attempt: number; verdict: VerifyVerdict['status'] }
  | AgentWarning
  | { type: 'error'; error: SerializedError }
  /** A summary of the run after an event that changed it (streams only; see docs/streaming.md). */
  | { type: 'agent-run-update'; view: AgentRunView }
  | { type: 'result'; result: AgentResult<T> };

/** The verdict the run recorded for an approval it asked for. */
export interface RecordedVerdict {
  approved: boolean;
  reason?: string;
}

/** An interrupted call, as a stopped result lists it: a copy of its receipt, and the verdict it ran under. */
export interface UnknownEffect extends AgentToolReceipt {
  /** The sub-agent's child run whose call this is (docs/delegation.md#sub-agents); absent for the run's own calls. */
  runId?: string;
  /**
   * Present when the call was held for approval: the approval the run issued
   * for it (`approvalId`, `token`) and the verdict the run recorded
   * (`approved`, `reason`). A retry passes the gate with that verdict without
   * sending it again. `approved` is absent only for a record that kept no
   * verdict: a retry then needs the verdict again, or is answered as denied.
   */
  approval?: { approvalId: string; token: string; approved?: boolean; reason?: string };
}

/** Receipt of one effect, keyed by [modelStep, toolCallId]. Stored beside the snapshot. */
export interface AgentToolReceipt {
  key: string;
  toolCallId: string;
  toolName: string;
  modelStep: number;
  /**
   * `unstorable`: the tool ran and returned, but its result could not be kept
   * (not JSON, or over `maxReceiptBytes`); `error` says why. Like every status
   * but `executing` and `suspended` (a sub-agent call whose child run waits), it
   * answers the call on a resume: the tool does not run again.
   */
  status: 'executing' | 'executed' | 'failed' | 'validation-failed' | 'projection-failed' | 'completed' | 'unstorable' | 'suspended';
  /** Whether the tool that ran the call was marked `replay: 'idempotent'`. */
  idempotent: boolean;
  /** The raw result (executed / completed), or the error (failed). */
  rawResult?: JsonValue;
  error?: SerializedError;
  /** What the model saw (completed). */
  modelOutput?: JsonValue | string;
  isError?: boolean;
  /** Recorded by an operator, not by the tool. */
  reconciled?: boolean;
  /** Came from clientToolResults. */
  client?: boolean;
  /** A sub-agent call's child run (docs/delegation.md#sub-agents): its id, and while the call is `suspended`, what the child waits on. */
  child?: import('../../machines/sub-agent-types.js').ChildRunFacts;
}

export interface AgentRunBinding {
  bindingId: string | null;
  model: string;
  tools: string;
  output: string | null;
  limits: string;
  /** The fallback models, `provider:modelId` in order; absent for a run without them. */
  fallback?: string;
  /** The memory scope (its canonical key); absent for a run without memory. */
  memory?: string;
  /** The chat projected to (its id and scope); absent for a run without chat. */
  chat?: string;
  /** The MCP servers' tool catalog (names, descriptions, schemas, replay, approval); absent for a run without mcp. */
  mcp?: string;
  /** Each handoff agent's model, instructions, tool schemas and handoffs (docs/delegation.md#handoffs); absent for a run without handoffs. */
  handoffs?: string;
  /** A sub-agent's child run: the run, call and depth that started it (docs/delegation.md#sub-agents). Not compared on resume. */
  parent?: import('../delegation/agent-tool-marker.js').SubAgentParent;
  /**
   * Fingerprints of each tool and each limit, so a changed binding can say
   * which part changed. Not compared itself: the keys above decide.
   */
  parts?: {
    tools: Record<string, { schema: string; rest: string }>;
    limits: Record<string, string>;
    /** Each MCP tool, by the name the model sees. */
    mcp?: Record<string, string>;
    /** Each handoff agent's parts, `<agent>:<aspect>`. */
    handoffs?: Record<string, string>;
  };
}

/**
 * The execution ledger a run checkpoints: the whole ledger under a root
 * context; under a child context only the reservations charged to its scope
 * (`subtree: true`), which a resume under the same context checks are still
 * in its ledger, and which cannot seed a new one.
 */
export interface AgentRunLedger {
  /** The ledger's name and the context's scope in it. */
  name: string;
  scope: string;
  subtree: boolean;
  entries: LedgerEntry[];
}

/** `drained`: stopped at a model-step boundary on request; any executor's resume goes on. */
export type AgentRunStatus = 'running' | 'suspended' | 'drained' | 'completed' | 'stopped' | 'failed';

/** The stored record of a run: the run actor's snapshot plus what is needed to list and inspect it without the machine. */
export interface AgentRunEnvelope {
  kind: 'cairn-agent-run';
  version: 1 | 2;
  runId: string;
  scope: string;
  revision: number;
  bindingId: string | null;
  binding: AgentRunBinding;
  machine: { id: string; version: number };
  /** The run actor's persisted snapshot (plain JSON). */
  snapshot: JsonValue;
  receipts: Record<string, AgentToolReceipt>;
  /** How many approval requests each tool call id was issued under. */
  approvalRequestCounts: Record<string, number>;
  /**
   * Every approval request the run issued, by approvalId, with its token and,
   * once a resume applied one, the verdict (a retried call passes its gate with it).
   */
  approvals: Record<string, { toolCallId: string; modelStep: number; token: string; verdict?: RecordedVerdict }>;
  status: AgentRunStatus;
  pendingApprovals: PendingApproval[];
  pendingClientCalls: PendingClientCall[];
  result?: AgentResult<unknown>;
  /**
   * On a failed run whose cause was transient: what failed and in which phase.
   * The envelope's snapshot is then the last checkpoint before the failure, so
   * `retryFailed` goes on from it.
   */
  retry?: { cause: string; phase: 'loop' | 'finalize'; error: SerializedError };
  /** The model fail-over record; present for a run with fallbackModels. */
  models?: AgentRunModels;
  /** The run's memory: its scope, its recall and its extraction; present for a run with `memory` (docs/memory.md). */
  memory?: AgentRunMemory;
  /** The run's chat projection: which message each turn and tool answer is, and how far the chat store acknowledged it (docs/chat.md). */
  chat?: AgentRunChat;
  /** The execution ledger as this save found it; present for a run with `execution` (see docs/policy.md). */
  ledger?: AgentRunLedger;
  /** The handoff agent that drives the run since its last handoff; absent while the run's own agent does (docs/delegation.md#handoffs). */
  activeAgent?: string;
  /**
   * Which save wrote each part of the record, as a store that keeps it reads
   * it back (the SQLite and PostgreSQL stores do; the in-memory store does not): the revision
   * that wrote each transcript message (by index; a message is written once,
   * unless a migrated record's rows are all written again) and that last
   * wrote each receipt (by key); null where the store does not know (rows
   * written by an older Cairn). The engine never writes it; a save ignores it.
   */
  saves?: AgentRunSaves;
  /**
   * The span context of the run span of the leg that made this save, when that leg was traced
   * (docs/tracing.md): the next leg links its run span to it. Ids only; absent when no leg was traced.
   */
  trace?: { traceId: string; spanId: string };
  /**
   * A cancel queued for the run while no executor drove it (cancelAgentRun): the next executor that takes the run up
   * ends it stopped (reason `aborted`) before any model call or tool; reconcileAgentRun drops it from a run that ended
   * and keeps it on one that did not. Absent when none is queued (docs/agent.md, "Queued cancel").
   */
  cancel?: AgentRunCancel;
  createdAt: number;
  updatedAt: number;
}

/** See {@link AgentRunEnvelope.cancel}. */
export interface AgentRunCancel {
  /** When the cancel was queued (ms since the epoch, on the caller's clock). */
  requestedAt: number;
  /** Why, as the caller said it. */
  reason?: string;
}

/** See {@link AgentRunEnvelope.saves}. */
export interface AgentRunSaves {
  messages: (number | null)[];
  receipts: Record<string, number | null>;
}

/** What a run view says about a run. Plain JSON; every field is always present. */
export interface AgentRunView {
  runId: string;
  /** The run that started this one (a nested run started by one of its tools); `null` for a top-level run. */
  parentRunId: string | null;
  /** `running` until the leg ends, then the leg's result status. */
  status: 'running' | 'suspended' | 'completed' | 'stopped' | 'failed';
  /** Whether this leg went on with a stored run. */
  resumed: boolean;
  /** The phase of the model turn under way or last made; `null` before the first. */
  phase: 'loop' | 'finalize' | null;
  /** Model turns the run has finished (across every leg once the leg ends). */
  steps: number;
  /** Tokens of the turns finished (the whole run's once the leg ends). */
  usage: { inputTokens: number; outputTokens: number; totalTokens: number };
  /**
   * Tool calls of this leg: started (with the calls an earlier leg began and this one finishes), ended (failed
   * counts the ones that ended with an error), and waiting.
   */
  tools: { started: number; completed: number; failed: number; pendingApprovals: number; pendingClientCalls: number };
  /** The limits the run was configured with. */
  limits: { maxSteps: number; maxOutputAttempts: number; maxVerifyAttempts: number; deadline: number | null };
  /** Why the run stopped (status `stopped`). */
  stopReason?: StopReason;
  /** The error code of a failed run (never its message). */
  errorCode?: string;
}

/**
 * Context, input, event and output types of the machines. Plain JSON only:
 * these are what a checkpoint stores.
 */
import type { MemoryIntentOutput } from './memory-intent-types.js';
import type { HandoffInput, HandoffState } from './run-handoff-types.js';
import type { CallPlan, RunPlan } from './plan-types.js';
export type { CallPlan, RunPlan } from './plan-types.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export type FinishReason = 'stop' | 'tool-calls' | 'length' | 'content-filter' | 'refusal' | 'error' | 'other';

/** How a call ended. `completed` is the successful end; results carry no outcome for it. */
export type CallOutcome =
  | 'not-dispatched'
  | 'policy-violation'
  | 'blocked'
  /** The arguments do not match the tool's `parameters` (or are not JSON): never offered for approval, never run. */
  | 'invalid-arguments'
  | 'denied'
  | 'not-admitted'
  | 'failed'
  | 'validation-failure'
  | 'projection-failure'
  | 'client-result'
  /** The tool ran, but its result could not be stored (not JSON, or over the receipt's size cap). */
  | 'unstorable-result'
  | 'unknown-effect'
  | 'completed';

export interface Verdict {
  approved: boolean;
  reason?: string;
}

export interface ClientAnswer {
  output: Json;
  isError: boolean;
}

/** Where a receipt stands: `executing` until the call's outcome is recorded. */
export type ReceiptStatus =
  | 'executing' | 'executed' | 'failed' | 'validation-failed' | 'projection-failed' | 'completed' | 'unstorable' | 'suspended';

/**
 * The receipt of one effect, keyed by [modelStep, toolCallId]. It lives in the
 * snapshot: in the call's own context while the call is open, in the run's
 * context once the call has ended.
 */
export interface CallReceipt {
  key: string;
  toolCallId: string;
  toolName: string;
  modelStep: number;
  status: ReceiptStatus;
  /** The tool was marked `replay: 'idempotent'`. */
  idempotent: boolean;
  rawResult?: Json;
  error?: { name: string; code: string; message: string; details?: string[] };
  modelOutput?: Json;
  isError?: boolean;
  /** Recorded by an operator, not by the tool. */
  reconciled?: boolean;
  /** Came from a client tool's result. */
  client?: boolean;
  /** A sub-agent call's child run (machines/sub-agent.ts); `suspended` while the call waits on it. */
  child?: import('./sub-agent-types.js').ChildRunFacts;
}

/** An approval request the run issued for a call: its id, its single token, and the verdict once one came. */
export interface CallApproval {
  approvalId: string;
  token: string;
  toolCallId: string;
  modelStep: number;
  /** The tool is a client tool: its result comes with its verdict. */
  client: boolean;
  verdict?: Verdict;
}

export interface ToolCallInput {
  runId: string;
  modelStep: number;
  toolCallId: string;
  toolName: string;
  args: Json;
  finishReason: FinishReason;
  /** The run offers a tool of this name. */
  known: boolean;
  /** Absolute deadline on the run's clock, or null. */
  deadlineAt: number | null;
  /** A verdict the resume brought for this call. */
  verdict: Verdict | null;
  /** A client tool's result the resume brought. */
  clientResult: ClientAnswer | null;
  /** How many calls the turn made: a lone call's checkpoint is the run's own step checkpoint. */
  batchSize: number;
  /** The call's receipt (null until the call writes one). */
  receipt: CallReceipt | null;
  /** The approval request issued for the call (null until one is). */
  approval: CallApproval | null;
  /** Which stages have work for this call; null or absent: all of them. */
  plan?: CallPlan | null;
}

export interface ToolCallContext extends ToolCallInput {
  /**
   * The operator asked for this interrupted call to run once more
   * (retryToolCallIds). Taken when the new `executing` receipt is recorded,
   * so a restore after that write finds the call interrupted again.
   */
  retried?: boolean;
  /** The client was asked for this call's result (the request is announced once). */
  clientRequested: boolean;
  /** What the check of the arguments on the way in found (see CallPlan.argumentsInline); null: the argument-check stage decides. */
  argumentsChecked?: { valid: true } | { valid: false; message: string } | null;
  outcome: CallOutcome | null;
  /** What the model sees for this call. */
  modelOutput: Json;
  isError: boolean;
  reason: string | null;
}

/**
 * What the three save legs take as input. An invoked actor's input is part of
 * the persisted snapshot (a restore restarts the actor from it), so each of
 * these takes only the fields it reads: the call's whole context (its
 * arguments, its receipt and the tool's result) is in the snapshot once
 * already, and a copy in the input would be written with every save made
 * while the leg runs. A snapshot written before the inputs were cut restores
 * as well: its inputs hold these fields among the rest.
 */
export type ReceiptWriteInput = Pick<ToolCallContext, 'modelStep' | 'toolCallId'>;
/** recordResult's input: which call, and its receipt's status and error (never the result itself). */
export interface RecordResultInput extends Pick<ToolCallContext, 'modelStep' | 'toolCallId' | 'toolName'> {
  receipt: Pick<CallReceipt, 'status' | 'error'> | null;
}
export type CheckpointInput = Pick<ToolCallContext, 'batchSize'>;

export type ToolCallEvent = {
  /** Sent by the run's settle: look again, with what the resume brought. */
  type: 'RECHECK';
  verdict?: Verdict | null;
  clientResult?: ClientAnswer | null;
  /** The operator asked for this interrupted call to run once more. */
  retry?: boolean;
  /** An operator's reconciled receipt for an interrupted call. */
  receipt?: CallReceipt;
};

/** What a call announces, from its transitions (never from a save). */
export type ToolCallEmitted =
  | {
    type: 'approval-request';
    approval: { approvalId: string; token: string; toolCallId: string; toolName: string; args: Json; modelStep: number };
  }
  | { type: 'client-call-request'; call: { toolCallId: string; toolName: string; args: Json; modelStep: number } }
  | { type: 'warning'; setting: string; toolCallId: string; message: string };

export interface ToolCallOutput {
  toolCallId: string;
  toolName: string;
  modelStep: number;
  /** null for a call that completed normally. */
  outcome: Exclude<CallOutcome, 'completed'> | null;
  modelOutput: Json;
  isError: boolean;
  reason: string | null;
  receipt: CallReceipt | null;
  approval: CallApproval | null;
}

export type ArgumentsOutput = { kind: 'valid' } | { kind: 'invalid'; message: string };
export type GuardOutput = { kind: 'allow' } | { kind: 'block'; reason: string } | { kind: 'rewrite'; args: Json };
export type ApprovalOutput =
  | { kind: 'not-needed' }
  | { kind: 'approved' }
  | { kind: 'denied'; reason: string }
  | { kind: 'wait' }
  | { kind: 'receipt' };
export interface IssueApprovalOutput {
  approvalId: string;
  token: string;
  client: boolean;
}
export type AdmitOutput = { kind: 'admitted' } | { kind: 'refused'; reason: 'aborted' | 'deadline' };
export type BeginEffectOutput =
  /** A fresh `executing` receipt is to be written: the write issues the permit. */
  | { kind: 'write'; idempotent: boolean }
  | { kind: 'replay' }
  | { kind: 'replay-failed'; message: string }
  | { kind: 'client-result' }
  | { kind: 'await-client' }
  | { kind: 'unknown' };
/** `restarted`: the write was restored, not made in this process: it permits nothing, and the call decides again. */
export type PersistReceiptOutput = { kind: 'written' } | { kind: 'restarted' };
export type ExecuteOutput =
  | { kind: 'result'; value: Json }
  | { kind: 'threw'; error: NonNullable<CallReceipt['error']> }
  /** The tool returned something its receipt cannot hold (not JSON, or too large). */
  | { kind: 'unstorable'; error: NonNullable<CallReceipt['error']> }
  | { kind: 'replay' }
  | { kind: 'unknown' };
export interface ProjectOutput {
  outcome: CallOutcome;
  modelOutput: Json;
  isError: boolean;
  /** The receipt as the projection left it (completed, validation-failed, projection-failed). */
  receipt?: CallReceipt;
}

export interface TurnToolCall {
  toolCallId: string;
  toolName: string;
  args: Json;
  /** What the provider needs back with the call (a thought signature, for example). */
  providerMetadata?: { [provider: string]: Json };
}

/** A model turn as the run records it. */
export interface Turn {
  /** The model step (0-based) that produced it. */
  step: number;
  phase: 'loop' | 'finalize';
  text: string;
  toolCalls: TurnToolCall[];
  finishReason: FinishReason;
  usage: UsageTotals;
  /** The turn's reasoning parts, as the provider returned them (kept so every later request sends them back). */
  reasoning?: Json[];
  /** What the provider attached to the turn as a whole. */
  providerMetadata?: { [provider: string]: Json };
  /** The model that answered: `provider:modelId`. */
  model?: string;
  /** The provider's response id and the model id it reported. */
  response?: { id?: string; modelId?: string };
}

export interface UsageTotals {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
}

export interface ErrorData {
  name: string;
  code: string;
  message: string;
  /** The tool call the error is about (a policy that forbids a call). */
  toolCallId?: string;
  /** Set when the failure was transient (a retryable model error, a stream that broke off): a resume may retry it. */
  retry?: { cause: string; phase: 'loop' | 'finalize' };
}

export type CallPhase = 'active' | 'suspended' | 'unknown' | 'ended';

export interface RunInput extends HandoffInput {
  runId: string;
  /** The conversation the run starts from (system, input messages). */
  messages: Json[];
  maxSteps: number;
  maxOutputAttempts: number;
  maxVerifyAttempts: number;
  /** Names of the tools the run offers. */
  toolNames: string[];
  /** `none`: the answer is the final text. */
  outputMode: 'none' | 'json' | 'tool';
  verify: boolean;
  deadlineAt: number | null;
  /** The fail-over record a run with fallback models starts with. */
  models?: Json | null;
  /** What the leg's options leave for the stages to do; null or absent: every stage runs. */
  plan?: RunPlan | null;
  /** The run's memory (recall and extraction); absent or null for a run without memory. */
  memory?: RunMemory | null;
  /** The run's chat projection; absent or null for a run without chat. */
  chat?: RunChat | null;
}

/** A run's chat projection, as its snapshot keeps it (see machines/run-chat.ts). */
export interface RunChat {
  chatId: string;
  /** How many messages were the run's input. */
  inputCount: number;
  /** Where the last write left it: `pending` until one was made. */
  status: 'pending' | 'written' | 'failed' | 'scope-mismatch' | 'superseded';
  /** Transcript messages the chat store acknowledged. */
  cursor: number;
  error?: { name: string; code: string; message: string };
}

/** A run's memory, as its snapshot keeps it (see machines/run-memory.ts). */
export interface RunMemory {
  /** The memory scope the run recalls from and writes to. */
  scope: { [key: string]: string };
  /** What the recall before the first model call did (plain JSON, see AgentRunMemory.recall). */
  recall: Json | null;
  /** The extraction's operation id; null when the run does not extract (extract: false, writePolicy: 'manual'). */
  operationId: string | null;
  /** How many messages were the run's input (the recall message, if any, follows them). */
  inputCount: number;
  /** The extraction as the run last recorded it: pending from the terminal commit, then its outcome. */
  extraction: MemoryIntentOutput | { operationId: string; status: 'pending' } | null;
}

export interface RunContext extends RunInput, HandoffState {
  /** Model turns made so far (loop and finalization). */
  step: number;
  lastTurn: Turn | null;
  /** Child ids of the current batch of tool calls, in the turn's order. */
  batch: string[];
  phases: Record<string, CallPhase>;
  outputs: Record<string, ToolCallOutput>;
  outputAttempts: number;
  verifyAttempts: number;
  candidate: { text: string; output: Json } | null;
  usage: UsageTotals;
  stopReason: string | null;
  stopDetails: Json;
  error: ErrorData | null;
  /** The lease holder was asked to stop at the next model-step boundary. */
  drainRequested: boolean;
  /** Where a drained run goes on from. */
  drainedIn: 'loop' | 'finalize' | null;
  /**
   * The model fail-over record (which model the run calls now, each fail-over
   * so far), or null while the run has never failed over. Absent in snapshots
   * written before fail-over existed, which read as null.
   */
  models?: Json | null;
  /** Usage by the model that answered (`provider:modelId`), so a run that failed over is priced per model. */
  usageByModel?: Record<string, UsageTotals>;
  /**
   * Receipts of the steps whose calls have all answered, ordered by model step
   * and then call id (the calls of the current step hold their own, and keep
   * them in their output once they end). A list, not a record: it grows by a
   * step's receipts at a time, and copying a list is cheap where copying a
   * record keyed by thousands of strings is not.
   */
  receipts: CallReceipt[];
  /** Approval requests of the calls that have ended, by approvalId (an open call holds its own). */
  approvals: Record<string, CallApproval>;
  /** The terminal commit of a run with something to do after its end (see machines/run-memory.ts) was saved. */
  committedEnd?: boolean;
}

export interface CallAnswer {
  verdict?: Verdict | null;
  clientResult?: ClientAnswer | null;
  retry?: boolean;
  /** An operator's reconciled receipt. */
  receipt?: CallReceipt;
}

export type RunEvent =
  | { type: 'RESUME'; answers: Record<string, CallAnswer> }
  /** Sent by the host right after a stored run was restored. */
  | { type: 'RESTORED' }
  /** Stop at the next model-step boundary; a resume on any executor goes on. */
  | { type: 'DRAIN' }
  /** A resume retries a transient failure: the failed model call stays counted. */
  | { type: 'RETRY_FAILED'; phase: 'loop' | 'finalize' }
  | { type: 'STORE_FAILED'; error: ErrorData }
  /** The resume's settle found a call the execution policy forbids, before any call went on. */
  | { type: 'POLICY_VIOLATION'; error: ErrorData }
  /** Stop the run (reason `aborted`); `details` become its stopDetails (a queued cancel's request). */
  | { type: 'CANCEL'; details?: Json }
  /** Sent by a call (the child `id`) as it comes to rest: waiting on an answer, or on an operator. */
  | { type: 'CALL_PHASE'; id: string; phase: 'suspended' | 'unknown' };

export interface ModelCallInput {
  step: number;
  phase: 'loop' | 'finalize';
  deadlineAt: number | null;
  /** The fail-over record so far (which models failed over). */
  models: Json | null;
}
export interface ValidateInput {
  step: number;
  turn: Turn;
  /** This attempt's number (1-based). */
  attempt: number;
}
export interface VerifyInput {
  attempt: number;
  candidate: { text: string; output: Json };
  deadlineAt: number | null;
}

export type ModelCallOutput =
  /**
   * `models`: the fail-over record after this call, when the call failed over.
   * `toolNames`: the run's tools from this step on, when they changed at the step's start (an MCP catalog refresh).
   * `contextMessages`: what joins the history before the turn (a V3 run's retrieval block, see src/v3/run-leg.ts).
   */
  | { kind: 'turn'; turn: Turn; models?: Json; toolNames?: string[]; contextMessages?: Json[] }
  | { kind: 'aborted' }
  | { kind: 'deadline'; error: ErrorData }
  /** The execution budget refused the call: what was spent, held and asked for. */
  | { kind: 'budget'; details: Json };

export type PolicyOutput = { kind: 'ok' } | { kind: 'violation'; error: ErrorData };
export type OutputCheck = { kind: 'valid'; output: Json } | { kind: 'invalid'; issue: string };
export type VerifierOutput =
  | { kind: 'verified' }
  | { kind: 'rejected'; feedback: string }
  | { kind: 'inconclusive'; reason: string }
  | { kind: 'aborted' }
  | { kind: 'deadline'; error: ErrorData }
  | { kind: 'restarted' };

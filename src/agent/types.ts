/**
 * Public types of the native agent engine: options, tools, results, events,
 * the stored envelope and the store contract.
 */
import type { SerializedError } from '../errors/index.js';
import type {
  FinishReason, LanguageModel, ModelMessage, ModelSettings, ModelToolCall, ProviderOptions, ToolChoice, Usage,
} from '../models/types.js';
import type { BreakerStore } from '../models/breaker-store.js';
import type { BreakerSettings } from '../models/breaker.js';
import type { JsonValue } from './json.js';
import type { CallOutcome } from '../../machines/types.js';
import type { AgentRunStore, LeaseProvider } from '../stores/types.js';
import type { AgentRunView } from './run-view.js';
import type { ExecutionContext, LedgerEntry } from '../policy/index.js';

export type { AgentRunView };

export type Message = ModelMessage;
export type { JsonValue };

/** The `~standard` interface of a Standard Schema value (zod, valibot, arktype ...). */
export interface StandardSchemaV1<Output = unknown> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) =>
      | { value: Output; issues?: undefined }
      | { issues: ReadonlyArray<{ message: string }> }
      | Promise<{ value: Output; issues?: undefined } | { issues: ReadonlyArray<{ message: string }> }>;
  };
}

/** What a tool's `execute` and approval callbacks receive besides the arguments. */
export interface ToolExecuteContext<C = unknown> {
  /** The provider's call id; with `modelStep` it is stable across resume. */
  toolCallId: string;
  /** The root model turn that issued the call. */
  modelStep: number;
  /** The conversation up to and including the turn that issued the call. */
  messages: readonly Message[];
  /** Aborted when the run is cancelled or its deadline passes. */
  signal: AbortSignal;
  /** The validated `toolsContext` entry for this tool. */
  context: C;
}

export interface AgentTool<Args = any, Result = any, C = any> {
  description?: string;
  /**
   * Schema of the arguments, of type "object": a JSON Schema (checked against
   * its meta-schema when the run starts, compiled with ajv), or a Standard
   * Schema value that converts itself to JSON Schema (zod 4). The model gets
   * the JSON Schema; every call's arguments are checked before approval and
   * effect, and a call that does not match ends as `invalid-arguments`.
   */
  parameters: JsonValue | { type: 'object'; [key: string]: unknown } | StandardSchemaV1<unknown>;
  /** Runs the effect. A tool without `execute` is a client tool: the run suspends until `clientToolResults` answers it. */
  execute?: (args: Args, ctx: ToolExecuteContext<C>) => Result | Promise<Result>;
  /** `true`, or a predicate over the call, to hold the call for a human verdict. @default false */
  needsApproval?: boolean | ((args: Args, ctx: ToolExecuteContext<C>) => boolean | Promise<boolean>);
  /** `'idempotent'`: an interrupted call may run again under the same [modelStep, toolCallId]. @default 'never' */
  replay?: 'idempotent' | 'never';
  /** Schema of the raw result (JSON Schema needs `validateResult`; a Standard Schema validates itself). */
  outputSchema?: JsonValue | StandardSchemaV1<unknown>;
  /** Validates (and may normalize) the raw result; throw to reject it. */
  validateResult?: (result: unknown) => unknown;
  /** Projects the validated result into what the model sees. @default the result itself */
  toModelOutput?: (result: any) => JsonValue | string;
  /** Schema of the `toolsContext` entry (JSON Schema needs `validateContext`). */
  contextSchema?: JsonValue | StandardSchemaV1<unknown>;
  validateContext?: (value: unknown) => C;
}

export type AgentTools = Record<string, AgentTool>;

export interface OutputSpec<T> {
  /** `json`: the final turn answers in JSON; `tool`: the model calls a forced output tool. @default 'json' */
  mode?: 'json' | 'tool';
  /** JSON Schema (then `validate` is required) or a Standard Schema value. */
  schema: JsonValue | StandardSchemaV1<T>;
  validate?: (value: unknown) => T;
  /** Name of the forced output tool in `tool` mode. @default 'json_output' */
  name?: string;
}

export type VerifyVerdict =
  | { status: 'verified' }
  | { status: 'rejected'; feedback: string }
  | { status: 'inconclusive'; reason?: string };

export interface VerifyInput<T> {
  output: T;
  text: string;
  attempt: number;
  runId: string;
  /** Aborted when the run is cancelled or its deadline passes: pass it to any model call the verifier makes. */
  signal: AbortSignal;
  /**
   * The run's execution context (a private one when the run was given none):
   * pass it (or a `.child()` of it) as `execution` to any run the verifier
   * starts, so its model calls are held to the same policy and budget.
   */
  execution: ExecutionContext;
}

export interface ToolCallGuardInput {
  toolCallId: string;
  toolName: string;
  args: JsonValue;
  modelStep: number;
}
export type ToolCallGuardDecision =
  | void
  | undefined
  | { action: 'allow' }
  | { action: 'block'; reason: string }
  | { action: 'rewrite'; args: JsonValue };

export interface ToolResultGuardInput {
  toolCallId: string;
  toolName: string;
  modelStep: number;
  /** The tool's projection (what the model would see). */
  output: JsonValue | string;
  isError: boolean;
}

export interface PrepareStepInput {
  stepNumber: number;
  messages: readonly Message[];
  phase: 'loop' | 'finalize';
}
export interface PrepareStepResult {
  /** Replaces the history sent for this step only (the checkpoint keeps the full history). */
  messages?: Message[];
  /** Names of the tools offered this step. */
  activeTools?: string[];
  toolChoice?: ToolChoice;
  system?: string;
}

export interface AgentSession {
  store: AgentRunStore;
  runId: string;
  scope: string;
}

export interface ApprovalResponse {
  approvalId: string;
  approved: boolean;
  /**
   * The token the pending approval carried. Required: a verdict without it, or
   * with another, decides nothing (a bare tool call id needs no token only
   * with `allowBareApprovalIds`). Each token answers its call once.
   */
  token?: string;
  reason?: string;
}

/** What an operator found an interrupted call did, recorded instead of running it again. */
export interface ReconciledToolResult {
  toolCallId: string;
  /** The call's raw result (or, with isError, its error: a string, or JSON for any other value). */
  output: JsonValue;
  isError?: boolean;
}

export interface ClientToolResult {
  toolCallId: string;
  output: JsonValue;
  isError?: boolean;
}

/** Injected seams, for deterministic runs and tests, and the shared circuit breaker. */
export interface AgentDeps {
  /** @default Date.now */
  clock?: { now(): number };
  /** @default nanoid */
  generateId?: () => string;
  /**
   * Where the circuit breaker of the model calls keeps its state, keyed by
   * `provider:modelId`. Without one there is no breaker. Share one store (the
   * `breakers` member of an ops store) to share the breaker between workers.
   */
  breakerStore?: BreakerStore;
  /** @default { threshold: 5, cooldownMs: 60000 } */
  breaker?: BreakerSettings;
  /** How a retry waits (a test seam). @default a timer that an abort ends */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * A model object a run takes: a Cairn model, or a Vercel AI SDK language model
 * (specification `v2`, `v3` or `v4`), adapted on its own.
 */
export type AgentModel = LanguageModel | {
  readonly specificationVersion: 'v2' | 'v3' | 'v4';
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: any): PromiseLike<unknown>;
  doStream(options: any): PromiseLike<unknown>;
};

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

export interface AgentOptions<T = string> {
  model: AgentModel;
  /**
   * Models a call fails over to, in order, when the model before them fails
   * with a transient error before its first content (see docs/models.md).
   * Part of the binding: a resume must pass the same list.
   */
  fallbackModels?: AgentModel[];
  /** More attempts of one model call on the same model after a retryable failure. @default 2 */
  maxRetries?: number;
  /** Most milliseconds one model attempt may take; past it the attempt fails as a transport timeout. @default none */
  modelTimeoutMs?: number;
  /** Most tokens the model may produce in one turn. @default the provider's */
  maxOutputTokens?: number;
  /** Options for one provider, under its name (`{ openai: { ... } }`), sent with every call, unchanged. */
  providerOptions?: ProviderOptions;
  prompt?: string;
  messages?: Message[];
  /** A system message placed before the conversation. `instructions` is the same thing. */
  system?: string;
  instructions?: string;
  tools?: AgentTools;
  /** Sampling temperature passed to the model on every call. */
  temperature?: number;
  /** Nucleus sampling passed to the model on every call, in (0, 1]. */
  topP?: number;
  /** Reasoning effort passed to the model on every call. */
  effort?: ModelSettings['effort'];
  /** Ask the provider to cache the repeated prompt prefix. */
  promptCaching?: boolean;
  /** The tool choice of loop steps; `prepareStep` may override it per step. @default 'auto' */
  toolChoice?: ToolChoice;
  /** Values handed to tools by tool name, validated by each tool's contextSchema / validateContext. */
  toolsContext?: Record<string, unknown>;
  output?: OutputSpec<T>;
  verify?: (input: VerifyInput<T>) => VerifyVerdict | Promise<VerifyVerdict>;
  /** Model turns, loop and finalization together. @default 20 */
  maxSteps?: number;
  /** Finalization attempts (first try plus repairs) for each verifier candidate. @default 3 */
  maxOutputAttempts?: number;
  /** Verifier invocations. @default 3 */
  maxVerifyAttempts?: number;
  prepareStep?: (input: PrepareStepInput) => PrepareStepResult | void | Promise<PrepareStepResult | void>;
  onToolCall?: (input: ToolCallGuardInput) => ToolCallGuardDecision | Promise<ToolCallGuardDecision>;
  onToolResult?: (input: ToolResultGuardInput) => JsonValue | string | void | Promise<JsonValue | string | void>;
  session?: AgentSession;
  /** Stable name of this agent implementation; bump it when tool or verifier semantics change. */
  bindingId?: string;
  abortSignal?: AbortSignal;
  /** Absolute time (ms since epoch, on `deps.clock`) after which no new model call or effect starts. */
  deadline?: number;
  /**
   * The execution context the run is held to (from `cairn/policy`): model and
   * tool allowlists, approvals, a deadline and a budget ledger. A resume takes
   * the same context (see docs/policy.md). @default none: no policy, no ledger
   */
  execution?: ExecutionContext;
  /** Hold the run across processes: claimed before the run is read, renewed while it works, released at the end. */
  lease?: LeaseOptions;
  /**
   * Most characters of one tool result's text (a string as it is, any other
   * value as JSON) that enter the model's history; beyond it the text is cut
   * and marked. The receipt keeps the whole raw result. @default 100000
   */
  maxToolResultChars?: number;
  /**
   * Most bytes of JSON one receipt stores as a tool's raw result. A larger
   * result is not stored: the call ends as `unstorable-result` (the tool ran),
   * with code `result_too_large`. @default 1048576 (1 MiB)
   */
  maxReceiptBytes?: number;
  deps?: AgentDeps;
}

export interface ResumeOptions<T = string> extends AgentOptions<T> {
  session: AgentSession;
  approvalResponses?: ApprovalResponse[];
  /**
   * Accept a verdict whose approvalId is a bare tool call id, without a token,
   * when that id is unambiguous in the run (used once, gated once). Such a
   * verdict can be made up by anyone who can guess a call id: keep it off
   * unless an older client sends verdicts that way. @default false
   */
  allowBareApprovalIds?: boolean;
  clientToolResults?: ClientToolResult[];
  /**
   * Interrupted calls (from `unknownEffects`) to run once more. An approved one
   * passes its gate with the verdict the run recorded; none needs to be sent again.
   */
  retryToolCallIds?: string[];
  /** Outcomes found for interrupted calls; each answers its call as if the tool had returned it. */
  reconciledToolResults?: ReconciledToolResult[];
  /**
   * Go on with a run that failed for a transient cause (a retryable model error, a
   * stream that broke off), from its last checkpoint. A TypeError for any other
   * failure; ignored for a run that did not fail. @default false
   */
  retryFailed?: boolean;
}

export interface PendingApproval {
  approvalId: string;
  token: string;
  toolCallId: string;
  toolName: string;
  args: JsonValue;
  modelStep: number;
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
   * but `executing`, it answers the call on a resume: the tool does not run again.
   */
  status: 'executing' | 'executed' | 'failed' | 'validation-failed' | 'projection-failed' | 'completed' | 'unstorable';
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
}

export interface AgentRunBinding {
  bindingId: string | null;
  model: string;
  tools: string;
  output: string | null;
  limits: string;
  /** The fallback models, `provider:modelId` in order; absent for a run without them. */
  fallback?: string;
  /**
   * Fingerprints of each tool and each limit, so a changed binding can say
   * which part changed. Not compared itself: the keys above decide.
   */
  parts?: {
    tools: Record<string, { schema: string; rest: string }>;
    limits: Record<string, string>;
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
  /** The execution ledger as this save found it; present for a run with `execution` (see docs/policy.md). */
  ledger?: AgentRunLedger;
  /**
   * Which save wrote each part of the record, as a store that keeps it reads
   * it back (the SQLite and PostgreSQL stores do; the in-memory store does not): the revision
   * that wrote each transcript message (by index; a message is written once,
   * unless a migrated record's rows are all written again) and that last
   * wrote each receipt (by key); null where the store does not know (rows
   * written by an older Cairn). The engine never writes it; a save ignores it.
   */
  saves?: AgentRunSaves;
  createdAt: number;
  updatedAt: number;
}

/** See {@link AgentRunEnvelope.saves}. */
export interface AgentRunSaves {
  messages: (number | null)[];
  receipts: Record<string, number | null>;
}

// The store contract is declared beside the stores; re-exported here so every import of it keeps working.
export type {
  AgentRunListPage, AgentRunListQuery, AgentRunLoadOptions, AgentRunSaveOptions, AgentRunStore, AgentRunSummary,
  Lease, LeaseProvider, LeaseRenewal,
} from '../stores/types.js';
export interface LeaseOptions {
  provider: LeaseProvider;
  /** Who holds the lease. @default a generated id per call */
  owner?: string;
  /** How long a lease lives without renewal. @default 30000 */
  ttlMs?: number;
}

export type { FinishReason, LanguageModel, ModelSettings, ModelToolCall, ProviderOptions, Usage, ToolChoice };

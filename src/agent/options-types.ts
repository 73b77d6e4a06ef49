/**
 * What a caller passes to a run: the options of runAgent and streamAgent, a
 * resume's answers, the injected seams, the output and verifier settings.
 */
import type { LanguageModel, ModelMessage as Message, ModelSettings, ProviderOptions, ToolChoice } from '../models/types.js';
import type { BreakerStore } from '../models/breaker-store.js';
import type { BreakerSettings } from '../models/breaker.js';
import type { ExecutionContext } from '../policy/index.js';
import type { AgentRunStore, LeaseProvider } from '../stores/types.js';
import type { TracingOptions } from '../tracing/otel.js';
import type { JsonValue } from './json.js';
import type { AgentMemoryOptions } from '../memory/run-types.js';
import type { AgentChatOptions } from '../chat/projection-types.js';
import type { McpOptions } from '../mcp/types.js';
import type { VerifyVerdict } from './record-types.js';
import type { AgentTools, StandardSchemaV1, ToolCallGuardDecision, ToolCallGuardInput, ToolResultGuardInput } from './tool-types.js';
import type { AgentV3Options } from '../v3/run-types.js';

export interface OutputSpec<T> {
  /** `json`: the final turn answers in JSON; `tool`: the model calls a forced output tool. @default 'json' */
  mode?: 'json' | 'tool';
  /** JSON Schema (then `validate` is required) or a Standard Schema value. */
  schema: JsonValue | StandardSchemaV1<T>;
  validate?: (value: unknown) => T;
  /** Name of the forced output tool in `tool` mode. @default 'json_output' */
  name?: string;
}

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

/**
 * An agent a run can hand its conversation to (docs/delegation.md#handoffs),
 * given as plain options. After the handoff its model (with its fallbacks),
 * instructions and tools drive every later step; the run's own settings
 * (output, verify, limits, guardrails, session, execution, memory, chat) stay
 * the run's.
 */
export interface HandoffAgentOptions extends Pick<AgentOptions<any>,
  'model' | 'fallbackModels' | 'instructions' | 'system' | 'tools' | 'toolsContext' | 'handoffs' | 'handoffDescription' | 'mcp'
  | 'temperature' | 'topP' | 'effort' | 'promptCaching' | 'toolChoice' | 'maxOutputTokens' | 'providerOptions' | 'maxRetries' | 'modelTimeoutMs'> {
  /** Names the agent: its transfer tool is `transfer_to_<name>`, and the run records it as the active agent. */
  name: string;
}

/** What `handoffs` takes: an Agent from `cairn` (anything with a `name` and `engineOptions`), or {@link HandoffAgentOptions}. */
export type HandoffTarget = HandoffAgentOptions | {
  readonly name: string;
  engineOptions(runId: string, extra: Record<string, never>): AgentOptions<any>;
};

export interface AgentOptions<T = string> extends AgentV3Options {
  model: AgentModel;
  /**
   * The name of the run's own agent, as its handoffs know it (a target that
   * lists an agent of this name would hand the run back: a cycle). @default 'root'
   */
  name?: string;
  /**
   * Agents the run can hand its conversation to (docs/delegation.md#handoffs):
   * each is offered to the model as a tool `transfer_to_<name>`. Each target's
   * model, instructions and tool schemas are part of the binding.
   */
  handoffs?: HandoffTarget[];
  /** What a transfer tool to this agent tells the model, when the agent is a handoff target. */
  handoffDescription?: string;
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
   * Memory bound to the run (docs/memory.md): recalled once before the first
   * model call, extracted once the run completed. Its scope is part of the binding.
   */
  memory?: AgentMemoryOptions;
  /**
   * A chat the run's transcript is projected to (docs/chat.md): written after
   * the checkpoint at every suspension and at the end. `chatId` and `scope` are part of the binding.
   */
  chat?: AgentChatOptions;
  /**
   * MCP servers whose tools the run offers (docs/mcp.md), connected at the start of every leg. Their
   * tool catalog is part of the binding; `onCatalogChange: 'accept'` lets a resume take a changed one.
   */
  mcp?: McpOptions;
  /**
   * OpenTelemetry spans of the run (docs/tracing.md): on by default when `@opentelemetry/api` is installed and an SDK
   * is registered, a no-op otherwise. `false` turns them off for this run.
   */
  tracing?: TracingOptions | false;
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

export interface LeaseOptions {
  provider: LeaseProvider;
  /** Who holds the lease. @default a generated id per call */
  owner?: string;
  /** How long a lease lives without renewal. @default 30000 */
  ttlMs?: number;
}

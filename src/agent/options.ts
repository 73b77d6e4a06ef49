/**
 * Normalizes the options of runAgent / resumeAgent once: defaults, checks that
 * refuse bad input before anything is written, the binding fingerprints.
 */
import { nanoid } from 'nanoid';
import { InvalidOptionsError } from '../errors/index.js';
import { EFFORT_LEVELS } from '../models/profiles.js';
import { DEFAULT_MAX_RETRIES } from '../models/retry.js';
import { modelKey, toCairnModel } from '../models/resolve.js';
import type { LanguageModel, ModelSettings, ProviderOptions, ToolChoice } from '../models/types.js';
import { toolParameters, type ToolParameters } from './arguments.js';
import { configDigestOf } from './digest.js';
import { check, isStandardSchema, wireSchema } from './schema.js';
import { checkTracing } from '../tracing/leg-tracer.js';
import { isExecutionContext, type ExecutionContext } from '../policy/index.js';
import { checkMemoryOptions, memoryBindingOf, type RunMemoryOptions } from '../memory/run-options.js';
import { chatBindingOf, checkChatOptions } from '../chat/projection.js';
import type { AgentChatOptions } from '../chat/projection-types.js';
import { checkMcpOptions } from '../mcp/options.js';
import { describeCatalogChanges } from '../mcp/catalog-changes.js';
import type { CheckedMcpOptions, McpStepBoundary } from '../mcp/types.js';
import { isScopedContext, parentOf, subAgentOf } from '../delegation/agent-tool-marker.js';
import { SubAgentError } from '../delegation/agent-tool-errors.js';
import type { HandoffLeg } from '../delegation/handoff-types.js';
import { describeHandoffChanges } from '../delegation/handoff-binding.js';
import type {
  AgentOptions, AgentRunBinding, AgentTool, JsonValue, Message, ResumeOptions,
} from './types.js';

export const DEFAULT_MAX_STEPS = 20;
export const DEFAULT_MAX_OUTPUT_ATTEMPTS = 3;
export const DEFAULT_MAX_VERIFY_ATTEMPTS = 3;
export const DEFAULT_OUTPUT_TOOL = 'json_output';
/** Characters of one tool result's text that reach the model's history. */
export const DEFAULT_MAX_TOOL_RESULT_CHARS = 100_000;
/** Bytes of JSON one receipt stores as a tool's raw result (1 MiB). */
export const DEFAULT_MAX_RECEIPT_BYTES = 1_048_576;

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export interface NormalizedOptions<T> {
  raw: AgentOptions<T>;
  runId: string;
  scope: string | null;
  maxSteps: number;
  maxOutputAttempts: number;
  maxVerifyAttempts: number;
  outputMode: 'none' | 'json' | 'tool';
  outputToolName: string;
  tools: Record<string, AgentTool>;
  /** Each tool's checked parameters: the JSON Schema on the wire and in the binding, and the arguments' check. */
  parameters: Record<string, ToolParameters>;
  maxToolResultChars: number;
  maxReceiptBytes: number;
  /** A resume reads a verdict that names a bare tool call id (and no approvalId). */
  allowBareApprovalIds: boolean;
  /** The run's model, as a Cairn model (an AI SDK model adapted). */
  model: LanguageModel;
  /** The model and its fallbacks, in order: the candidates of every call. */
  models: LanguageModel[];
  maxRetries: number;
  modelTimeoutMs: number | undefined;
  providerOptions: ProviderOptions | undefined;
  /** Sent with every model call; undefined when the run set none. */
  settings: ModelSettings | undefined;
  toolChoice: ToolChoice;
  toolContexts: Record<string, unknown>;
  now: () => number;
  generateId: () => string;
  binding: AgentRunBinding;
  /** The execution context the caller gave, or null. */
  execution: ExecutionContext | null;
  /** The run's deadline: the earlier of `deadline` and the execution context's. */
  deadlineAt: number | null;
  /** The run's memory (docs/memory.md), checked; null without one. */
  memory: RunMemoryOptions | null;
  /** The run's chat projection (docs/chat.md), checked; null without one. */
  chat: AgentChatOptions | null;
  /** The run's MCP servers (docs/mcp.md), checked; null without them. */
  mcp: CheckedMcpOptions | null;
  /** The leg's connected servers, once connected (their tools are in `tools`). */
  mcpLive: McpStepBoundary | null;
  /** The run's handoffs (docs/delegation.md#handoffs), once checked; null without them. */
  handoff: HandoffLeg | null;
}

function positiveInt(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new InvalidOptionsError(`${name} must be a positive integer, got ${JSON.stringify(value)}.`);
  }
  return value;
}

/** Shape checks that throw InvalidOptionsError. Nothing has been read or written yet. */
export function normalizeOptions<T>(options: AgentOptions<T> | ResumeOptions<T>): NormalizedOptions<T> {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('Options must be an object.');
  const models = checkModels(options);
  const model = models[0]!;
  checkTracing(options.tracing);
  for (const legacy of ['verifyStep', 'doneWhen', 'falseFinishGuard']) {
    if ((options as unknown as Record<string, unknown>)[legacy] !== undefined) {
      throw new InvalidOptionsError(`${legacy} is a legacy completion hook the native engine does not run; use verify instead.`);
    }
  }
  if (options.prompt !== undefined && typeof options.prompt !== 'string') {
    throw new InvalidOptionsError('prompt must be a string.');
  }
  if (options.messages !== undefined && !Array.isArray(options.messages)) {
    throw new InvalidOptionsError('messages must be an array.');
  }
  const tools = options.tools ?? {};
  if (tools === null || typeof tools !== 'object' || Array.isArray(tools)) throw new InvalidOptionsError('tools must be an object of tools by name.');
  const parameters: Record<string, ToolParameters> = {};
  for (const [name, tool] of Object.entries(tools)) {
    if (!TOOL_NAME.test(name)) throw new InvalidOptionsError(`Tool name "${name}" must match ${TOOL_NAME}.`);
    if (!tool || typeof tool !== 'object') throw new InvalidOptionsError(`Tool "${name}" must be an object.`);
    if (tool.execute !== undefined && typeof tool.execute !== 'function') {
      throw new InvalidOptionsError(`Tool "${name}": execute must be a function.`);
    }
    if (tool.replay !== undefined && tool.replay !== 'idempotent' && tool.replay !== 'never') {
      throw new InvalidOptionsError(`Tool "${name}": replay must be 'idempotent' or 'never'.`);
    }
    if (tool.outputSchema !== undefined && !isStandardSchema(tool.outputSchema) && !tool.validateResult) {
      throw new InvalidOptionsError(`Tool "${name}": a JSON Schema outputSchema needs validateResult.`);
    }
    parameters[name] = toolParameters(name, tool);
  }
  const output = options.output;
  let outputMode: NormalizedOptions<T>['outputMode'] = 'none';
  if (output !== undefined) {
    if (output.mode !== undefined && output.mode !== 'json' && output.mode !== 'tool') {
      throw new InvalidOptionsError("output.mode must be 'json' or 'tool'.");
    }
    if (!isStandardSchema(output.schema) && typeof output.validate !== 'function') {
      throw new InvalidOptionsError('output with a raw JSON Schema needs output.validate (or pass a Standard Schema value).');
    }
    outputMode = output.mode ?? 'json';
  }
  const outputToolName = output?.name ?? DEFAULT_OUTPUT_TOOL;
  if (outputMode === 'tool' && outputToolName in tools) {
    throw new InvalidOptionsError(`output.name "${outputToolName}" collides with a tool of the same name.`);
  }
  const session = options.session;
  if (session !== undefined) checkSession(session);
  if (options.lease !== undefined) {
    checkLease(options.lease);
    if (!session) throw new InvalidOptionsError('lease needs a session: the lease is held on the session\'s run.');
  }
  if (options.deadline !== undefined && (typeof options.deadline !== 'number' || !Number.isFinite(options.deadline))) {
    throw new InvalidOptionsError('deadline must be an absolute time in milliseconds.');
  }
  const execution = options.execution ?? null;
  if (execution !== null && !isExecutionContext(execution)) {
    throw new InvalidOptionsError('execution must be a context made by createExecutionContext (cairn/policy) or its .child().');
  }
  const deadlines = [options.deadline, execution?.policy.deadline ?? undefined].filter((d): d is number => typeof d === 'number');
  const settings = checkSettings(options, tools);
  const maxRetries = nonNegativeInt('maxRetries', options.maxRetries, DEFAULT_MAX_RETRIES);
  const modelTimeoutMs = options.modelTimeoutMs === undefined ? undefined : positiveInt('modelTimeoutMs', options.modelTimeoutMs, 0);
  const providerOptions = checkProviderOptions(options.providerOptions);
  checkDeps(options.deps);
  const generateId = options.deps?.generateId ?? (() => nanoid());
  const maxSteps = positiveInt('maxSteps', options.maxSteps, DEFAULT_MAX_STEPS);
  const maxOutputAttempts = positiveInt('maxOutputAttempts', options.maxOutputAttempts, DEFAULT_MAX_OUTPUT_ATTEMPTS);
  const maxVerifyAttempts = positiveInt('maxVerifyAttempts', options.maxVerifyAttempts, DEFAULT_MAX_VERIFY_ATTEMPTS);
  const maxToolResultChars = positiveInt('maxToolResultChars', options.maxToolResultChars, DEFAULT_MAX_TOOL_RESULT_CHARS);
  const maxReceiptBytes = positiveInt('maxReceiptBytes', options.maxReceiptBytes, DEFAULT_MAX_RECEIPT_BYTES);
  const allowBare = (options as ResumeOptions<T>).allowBareApprovalIds;
  if (allowBare !== undefined && typeof allowBare !== 'boolean') throw new InvalidOptionsError('allowBareApprovalIds must be a boolean.');
  const clock = options.deps?.clock;
  const memory = checkMemoryOptions(options.memory, execution);
  const binding = bindingOf(options, models, { maxSteps, maxOutputAttempts, maxVerifyAttempts, outputMode }, parameters);
  if (memory) binding.memory = memoryBindingOf(memory);
  const chat = checkChatOptions(options.chat);
  if (chat) binding.chat = chatBindingOf(chat);
  // A child run of a sub-agent names its parent in its record (docs/delegation.md); not compared on resume.
  if (parentOf(options)) binding.parent = { ...parentOf(options)! };
  const mcp = checkMcpOptions(options.mcp);
  return {
    raw: options,
    runId: session?.runId ?? '',
    scope: session?.scope ?? null,
    maxSteps,
    maxOutputAttempts,
    maxVerifyAttempts,
    outputMode,
    outputToolName,
    tools,
    parameters,
    maxToolResultChars,
    maxReceiptBytes,
    allowBareApprovalIds: allowBare === true,
    model,
    models,
    maxRetries,
    modelTimeoutMs,
    providerOptions,
    settings,
    toolChoice: options.toolChoice ?? 'auto',
    toolContexts: {},
    now: clock ? () => clock.now() : () => Date.now(),
    generateId,
    binding,
    execution,
    deadlineAt: deadlines.length > 0 ? Math.min(...deadlines) : null,
    memory,
    chat,
    mcp,
    mcpLive: null,
    handoff: null,
  };
}

function nonNegativeInt(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new InvalidOptionsError(`${name} must be a whole number of at least 0, got ${JSON.stringify(value)}.`);
  }
  return value;
}

/** The model and its fallbacks as Cairn models; anything that is not a model is refused here, before anything runs. */
function checkModels(options: AgentOptions<unknown> | AgentOptions<any>): LanguageModel[] {
  if (options.model === undefined || options.model === null) throw new InvalidOptionsError('model is required.');
  const models = [toCairnModel(options.model, 'model')];
  const fallbacks = options.fallbackModels;
  if (fallbacks !== undefined) {
    if (!Array.isArray(fallbacks)) throw new InvalidOptionsError('fallbackModels must be an array of models.');
    fallbacks.forEach((fallback, index) => models.push(toCairnModel(fallback, `fallbackModels[${index}]`)));
  }
  return models;
}

function plainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function checkProviderOptions(value: unknown): ProviderOptions | undefined {
  if (value === undefined) return undefined;
  if (!plainObject(value) || !Object.values(value).every(plainObject)) {
    throw new InvalidOptionsError('providerOptions must be an object of objects, one per provider name: { openai: { ... } }.');
  }
  try {
    return JSON.parse(JSON.stringify(value)) as ProviderOptions;
  } catch {
    throw new InvalidOptionsError('providerOptions must be plain JSON.');
  }
}

function checkDeps(deps: AgentOptions<unknown>['deps']): void {
  if (deps === undefined) return;
  const store = deps.breakerStore;
  if (store !== undefined && (!store || typeof store.get !== 'function' || typeof store.set !== 'function')) {
    throw new InvalidOptionsError('deps.breakerStore must have get(key) and set(key, state).');
  }
  const breaker = deps.breaker;
  if (breaker !== undefined) {
    if (!plainObject(breaker)) throw new InvalidOptionsError('deps.breaker must be { threshold?, cooldownMs? }.');
    if (breaker.threshold !== undefined) positiveInt('deps.breaker.threshold', breaker.threshold, 0);
    if (breaker.cooldownMs !== undefined) positiveInt('deps.breaker.cooldownMs', breaker.cooldownMs, 0);
  }
  if (deps.sleep !== undefined && typeof deps.sleep !== 'function') throw new InvalidOptionsError('deps.sleep must be a function.');
}

const EFFORTS: readonly string[] = EFFORT_LEVELS;

/** Sampling settings and the default tool choice: checked here, sent with every call. */
function checkSettings(options: AgentOptions<unknown> | AgentOptions<any>, tools: Record<string, AgentTool>): ModelSettings | undefined {
  const { temperature, topP, effort, promptCaching, toolChoice, maxOutputTokens } = options;
  if (maxOutputTokens !== undefined) positiveInt('maxOutputTokens', maxOutputTokens, 0);
  if (temperature !== undefined && (typeof temperature !== 'number' || !Number.isFinite(temperature) || temperature < 0)) {
    throw new InvalidOptionsError(`temperature must be a number of at least 0, got ${JSON.stringify(temperature)}.`);
  }
  if (topP !== undefined && (typeof topP !== 'number' || !(topP > 0 && topP <= 1))) {
    throw new InvalidOptionsError(`topP must be a number in (0, 1], got ${JSON.stringify(topP)}.`);
  }
  if (effort !== undefined && !EFFORTS.includes(effort as string)) {
    throw new InvalidOptionsError(`effort must be one of ${EFFORTS.join(', ')}, got ${JSON.stringify(effort)}.`);
  }
  if (promptCaching !== undefined && typeof promptCaching !== 'boolean') throw new InvalidOptionsError('promptCaching must be a boolean.');
  if (toolChoice !== undefined) {
    const named = typeof toolChoice === 'object' && toolChoice !== null ? (toolChoice as { toolName?: unknown }).toolName : undefined;
    if (!(toolChoice === 'auto' || toolChoice === 'none' || toolChoice === 'required' || (typeof named === 'string' && named in tools))) {
      throw new InvalidOptionsError(`toolChoice must be 'auto', 'none', 'required' or { toolName } naming one of the run's tools, got ${JSON.stringify(toolChoice)}.`);
    }
  }
  const settings: ModelSettings = {
    ...(temperature !== undefined ? { temperature } : {}),
    ...(topP !== undefined ? { topP } : {}),
    ...(effort !== undefined ? { effort } : {}),
    ...(promptCaching !== undefined ? { promptCaching } : {}),
    ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
  };
  return Object.keys(settings).length > 0 ? settings : undefined;
}

/**
 * Fingerprints of what a resume must not change. Functions cannot be
 * fingerprinted: a changed validator or tool body needs a new bindingId.
 */
export function bindingOf(
  options: AgentOptions<unknown> | AgentOptions<any>,
  models: readonly LanguageModel[],
  limits: { maxSteps: number; maxOutputAttempts: number; maxVerifyAttempts: number; outputMode: string },
  /** The tools' checked parameters: a Standard Schema value is fingerprinted by the JSON Schema it converts to. */
  parameters: Record<string, ToolParameters> = {},
): AgentRunBinding {
  const tools = Object.entries(options.tools ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, tool]) => ({
      name,
      description: tool.description ?? null,
      parameters: parameters[name]?.wire ?? tool.parameters ?? null,
      outputSchema: tool.outputSchema === undefined ? null : wireSchema(tool.outputSchema),
      replay: tool.replay ?? 'never',
      client: typeof tool.execute !== 'function',
      approval: typeof tool.needsApproval === 'function' ? 'predicate' : Boolean(tool.needsApproval),
    }));
  const output = options.output
    ? configDigestOf({ mode: options.output.mode ?? 'json', name: options.output.name ?? null, schema: wireSchema(options.output.schema) })
    : null;
  const allLimits = { ...limits, verify: typeof options.verify === 'function' };
  return {
    bindingId: options.bindingId ?? null,
    model: modelKey(models[0]!),
    tools: configDigestOf(tools),
    output,
    limits: configDigestOf(allLimits),
    ...(models.length > 1 ? { fallback: models.slice(1).map(modelKey).join(',') } : {}),
    parts: {
      tools: Object.fromEntries(tools.map(({ name, parameters: schema, ...rest }) => [name, { schema: configDigestOf(schema), rest: configDigestOf(rest) }])),
      limits: Object.fromEntries(Object.entries(allLimits).map(([name, value]) => [name, configDigestOf(value)])),
    },
  };
}

const COMPARED: readonly (keyof AgentRunBinding)[] = ['bindingId', 'model', 'tools', 'output', 'limits', 'fallback', 'memory', 'chat', 'mcp', 'handoffs'];

/** Keys whose fingerprints differ (a key only one side has counts). */
export function bindingChanges(stored: AgentRunBinding, current: AgentRunBinding): string[] {
  return COMPARED.filter((key) => stored[key] !== current[key]);
}

const KEY_NAMES: Record<string, string> = {
  bindingId: 'the bindingId', model: 'the model', output: 'the output schema', fallback: 'fallbackModels',
  tools: 'the tools', limits: 'the limits', memory: 'the memory scope', chat: 'the chat', mcp: 'the MCP tool catalog', handoffs: 'the handoffs',
};

/**
 * Which parts of a binding changed, for people, without values: `the model`,
 * `tool deploy: its parameters schema`, `tool audit was added`, `limit maxSteps`.
 * A record saved before bindings kept their parts says only `the tools` or `the limits`.
 */
export function describeBindingChanges(stored: AgentRunBinding, current: AgentRunBinding): string[] {
  const out: string[] = [];
  for (const key of bindingChanges(stored, current)) {
    const before = stored.parts;
    const now = current.parts;
    if (key === 'tools' && before && now) {
      const names = [...new Set([...Object.keys(before.tools), ...Object.keys(now.tools)])].sort();
      for (const name of names) {
        const a = before.tools[name];
        const b = now.tools[name];
        if (!a) out.push(`tool ${name} was added`);
        else if (!b) out.push(`tool ${name} was removed`);
        else {
          if (a.schema !== b.schema) out.push(`tool ${name}: its parameters schema`);
          if (a.rest !== b.rest) out.push(`tool ${name}: its description, output schema, replay, approval or client flag`);
        }
      }
    } else if (key === 'mcp' && stored.mcp !== undefined && current.mcp !== undefined) {
      out.push(...describeCatalogChanges(before?.mcp, now?.mcp));
    } else if (key === 'handoffs') {
      out.push(...describeHandoffChanges(before?.handoffs, now?.handoffs));
    } else if (key === 'limits' && before && now) {
      for (const name of [...new Set([...Object.keys(before.limits), ...Object.keys(now.limits)])].sort()) {
        if (before.limits[name] !== now.limits[name]) out.push(`limit ${name}`);
      }
    } else {
      out.push(KEY_NAMES[key] ?? key);
    }
  }
  return out;
}

/** Validates each tool's toolsContext entry. Values stay in memory: they are never serialized. */
export async function validateToolContexts(options: AgentOptions<unknown>): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const [name, tool] of Object.entries(options.tools ?? {})) {
    const value = options.toolsContext?.[name];
    if (subAgentOf(tool) && isScopedContext(value)) {
      throw new SubAgentError('agent_tool_scoped_context', `agentTool "${name}": toolsContext gives it a scoped context, which a sub-agent refuses; the child run gets the parent's trusted context.`, name);
    }
    if (tool.contextSchema === undefined && tool.validateContext === undefined) {
      out[name] = value;
      continue;
    }
    if (tool.contextSchema !== undefined && !isStandardSchema(tool.contextSchema) && !tool.validateContext) {
      throw new InvalidOptionsError(`Tool "${name}": a JSON Schema contextSchema needs validateContext.`, 'tool_context_invalid');
    }
    const result = await check(value, tool.contextSchema, tool.validateContext);
    if (!result.ok) throw new InvalidOptionsError(`Tool "${name}": toolsContext is invalid: ${result.issue}`, 'tool_context_invalid');
    out[name] = result.value;
  }
  return out;
}

/** The conversation a new run starts from. */
export function initialMessages(options: AgentOptions<unknown>): Message[] {
  const messages: Message[] = [];
  const system = options.system ?? options.instructions;
  if (system !== undefined) messages.push({ role: 'system', content: system });
  if (options.messages) messages.push(...options.messages);
  if (options.prompt !== undefined) messages.push({ role: 'user', content: options.prompt });
  if (messages.every((m) => m.role === 'system')) {
    throw new InvalidOptionsError('A run needs a prompt or messages.');
  }
  return JSON.parse(JSON.stringify(messages)) as Message[];
}

export type { JsonValue };

/** The shape of `session`: a store with load and save, a non-empty run id, a scope. */
export function checkSession(session: AgentOptions<unknown>['session']): void {
  if (!session || !session.store || typeof session.store.load !== 'function' || typeof session.store.save !== 'function') {
    throw new InvalidOptionsError('session.store must implement load and save.');
  }
  if (typeof session.runId !== 'string' || session.runId === '') throw new InvalidOptionsError('session.runId must be a non-empty string.');
  if (typeof session.scope !== 'string') throw new InvalidOptionsError('session.scope must be a string.');
}

/** The shape of `lease`: a provider with the LeaseProvider methods, a non-empty owner if one is given, a ttl of at least 30 ms. */
export function checkLease(lease: AgentOptions<unknown>['lease']): void {
  const provider = lease?.provider;
  if (!provider || typeof provider.acquire !== 'function' || typeof provider.renew !== 'function' || typeof provider.release !== 'function') {
    throw new InvalidOptionsError('lease.provider must implement the LeaseProvider contract (acquire, renew, release).');
  }
  const { owner, ttlMs } = lease!;
  if (owner !== undefined && (typeof owner !== 'string' || owner === '')) {
    throw new InvalidOptionsError('lease.owner must be a non-empty string.');
  }
  if (ttlMs !== undefined && (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs < 30)) {
    throw new InvalidOptionsError('lease.ttlMs must be a number of milliseconds, at least 30.');
  }
}

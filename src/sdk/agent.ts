/**
 * `new Agent({...})`: a named configuration of the native engine. Every
 * `agent.run(...)` is a `runAgent` or `resumeAgent` call on a session (the
 * run store you pass, or a private in-memory one), so an Agent run has the
 * engine's checkpoints, receipts, approvals and binding checks, and nothing
 * else; this file only maps the Agent's options and builds the state.
 */
import { nanoid } from 'nanoid';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, streamAgent } from '../agent/index.js';
import type {
  AgentOptions, AgentResult, AgentRunEnvelope, AgentRunStore, AgentTool, ApprovalResponse, ClientToolResult, Message,
  PendingClientCall, ReconciledToolResult, ResumeOptions, Usage, AgentWarning,
} from '../agent/types.js';
import type { AgentStream } from '../agent/stream.js';
import { InvalidOptionsError } from '../errors/index.js';
import { decisionsForEngine } from './approvals.js';
import { ToolDefinitionError } from './errors.js';
import { agentStateOf, checkAgentState, type AgentState, type PendingAgentApproval } from './state.js';
import type { TaskOutcome } from './task-outcome.js';
import { isTool, type Tool, type ToolRunContext } from './tool.js';

/** The engine options an Agent keeps (everything but what each run brings). */
type EngineSettings<T> = Omit<AgentOptions<T>, 'prompt' | 'messages' | 'session' | 'lease' | 'abortSignal' | 'tools' | 'toolsContext' | 'system'>;

export interface AgentConfig<T = string> extends EngineSettings<T> {
  /** A name for logs and runners. @default 'agent' */
  name?: string;
  /** The system instructions of every run. */
  instructions?: string;
  /** Tools by name (each name must be its tool's own), or a list of tools. Names are unique. */
  tools?: Record<string, Tool | AgentTool> | Tool[];
}

export interface AgentRunInput {
  /** The user's message: starts a new run (or a new turn after a finished state). */
  prompt?: string;
  /** A conversation to start from (a session's history); the prompt, if any, follows it. */
  messages?: Message[];
  /** A state a run returned: continues that run (its pending approvals answered), or, when it has ended and a prompt is given, starts the next turn from its messages. */
  state?: AgentState;
  /** Where the run is checkpointed; with one, a crash loses nothing and `agent.run({ runId, store })` picks the run up again. @default a private in-memory store */
  store?: AgentRunStore;
  /** The run's id in the store. Given with a store that holds it, the stored run is continued. @default a new id */
  runId?: string;
  /** The tenant scope the run is stored under. @default 'default' */
  scope?: string;
  /** Decisions for the state's pending approvals: `{ approvalId, approved, token, reason? }`. */
  approvalResponses?: ApprovalResponse[];
  clientToolResults?: ClientToolResult[];
  retryToolCallIds?: string[];
  reconciledToolResults?: ReconciledToolResult[];
  retryFailed?: boolean;
  /** Must equal the Agent's on a continuation (limits are part of a run's binding). */
  maxSteps?: number;
  abortSignal?: AbortSignal;
  lease?: AgentOptions['lease'];
}

export interface AgentRunResult<T = string> {
  runId: string;
  status: AgentResult<T>['status'];
  taskOutcome: TaskOutcome;
  /** The text of the last assistant turn. */
  outputText: string;
  /** The validated output (a completed run with `output` configured). */
  output?: T;
  state: AgentState;
  pendingApprovals: PendingAgentApproval[];
  pendingClientCalls: PendingClientCall[];
  usage: Usage;
  warnings: AgentWarning[];
  /** The engine's result of this leg, as runAgent returns it. */
  result: AgentResult<T>;
}

const DEFAULT_SCOPE = 'default';

function toolsOf(config: AgentConfig<unknown>): Record<string, AgentTool> {
  const given = config.tools;
  if (given === undefined) return {};
  const out: Record<string, AgentTool> = {};
  const add = (name: string, value: unknown) => {
    if (!value || typeof value !== 'object') throw new ToolDefinitionError('tool_definition_invalid', `Agent tools: "${name}" is not a tool.`, name);
    if (Object.prototype.hasOwnProperty.call(out, name)) {
      throw new ToolDefinitionError('tool_name_duplicate', `Agent tools: two tools are named "${name}"; tool names must be unique.`, name);
    }
    out[name] = value as AgentTool;
  };
  if (Array.isArray(given)) {
    for (const [i, t] of given.entries()) {
      if (!isTool(t)) throw new ToolDefinitionError('tool_definition_invalid', `Agent tools[${i}] is not made by tool(): a list needs named tools.`);
      add(t.name, t);
    }
    return out;
  }
  if (given === null || typeof given !== 'object') throw new ToolDefinitionError('tool_definition_invalid', 'Agent tools must be an object of tools by name, or a list of tools.');
  const seen = new Map<string, string>();
  for (const [key, t] of Object.entries(given)) {
    if (isTool(t)) {
      if (t.name !== key) {
        throw new ToolDefinitionError('tool_definition_invalid', `Agent tools: the key "${key}" holds the tool named "${t.name}"; use its name as its key.`, t.name);
      }
      const other = seen.get(t.name);
      if (other !== undefined) throw new ToolDefinitionError('tool_name_duplicate', `Agent tools: "${other}" and "${key}" are both named "${t.name}".`, t.name);
      seen.set(t.name, key);
    }
    add(key, t);
  }
  return out;
}

const isEnded = (status: string) => status === 'completed' || status === 'failed' || status === 'stopped';

/**
 * A store as the engine gets it from an Agent: the same store, whose saves
 * also keep the last envelope each run wrote, so the state is built from it
 * without loading the record back. One per store object, so the engine's
 * one-executor-per-run guard (per store object) still sees every Agent run.
 */
interface Capturing {
  store: AgentRunStore;
  last: Map<string, AgentRunEnvelope>;
}
const capturing = new WeakMap<AgentRunStore, Capturing>();

function capture(store: AgentRunStore): Capturing {
  const known = capturing.get(store);
  if (known) return known;
  const last = new Map<string, AgentRunEnvelope>();
  const save: AgentRunStore['save'] = async (envelope, options) => {
    await store.save(envelope, options);
    last.set(envelope.runId, envelope);
  };
  const proxy = new Proxy(store, {
    get(target, key) {
      if (key === 'save') return save;
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  const made = { store: proxy, last };
  capturing.set(store, made);
  capturing.set(proxy, made);
  return made;
}

/**
 * An agent: a model, its instructions, its tools and its limits, run by the
 * native engine on a session (see docs/agent-class.md).
 *
 * @example
 * ```ts
 * const agent = new Agent({ model: openai('gpt-6-astra'), instructions: 'Be brief.', maxSteps: 3, tools: { lookupAccount } });
 * const first = await agent.run({ prompt: 'Check account acct_123.' });
 * const next = await agent.run({ state: first.state, prompt: 'And its plan?' });
 * ```
 */
export class Agent<T = string> {
  readonly name: string;
  readonly instructions: string | undefined;
  readonly maxSteps: number | undefined;
  /** The tools by name, as the engine gets them. */
  readonly tools: Readonly<Record<string, AgentTool>>;
  readonly #settings: EngineSettings<T>;
  readonly #contexts: Record<string, ToolRunContext | undefined>;

  constructor(config: AgentConfig<T>) {
    if (config === null || typeof config !== 'object') throw new InvalidOptionsError('new Agent() takes an options object: { model, instructions, tools, ... }.');
    if (config.model === undefined || config.model === null) throw new InvalidOptionsError('new Agent(): model is required.');
    if (config.name !== undefined && (typeof config.name !== 'string' || config.name === '')) throw new InvalidOptionsError('new Agent(): name must be a non-empty string.');
    if (config.instructions !== undefined && typeof config.instructions !== 'string') throw new InvalidOptionsError('new Agent(): instructions must be a string.');
    const { name, tools: _tools, instructions, ...settings } = config;
    this.name = name ?? 'agent';
    this.instructions = instructions;
    this.maxSteps = config.maxSteps;
    this.tools = Object.freeze(toolsOf(config as AgentConfig<unknown>));
    this.#settings = settings;
    this.#contexts = Object.fromEntries(Object.keys(this.tools).map((n) => [n, undefined]));
  }

  /** A tool's current approvalVersion. */
  approvalVersionOf(toolName: string): string | undefined {
    return (this.tools[toolName] as Partial<Tool> | undefined)?.approvalVersion;
  }

  /** The engine options of one run (the tools' context carries the run id to their idempotency keys). */
  engineOptions(runId: string, extra: Partial<ResumeOptions<T>>): AgentOptions<T> {
    const toolsContext: Record<string, ToolRunContext> = {};
    for (const name of Object.keys(this.#contexts)) toolsContext[name] = { runId };
    return {
      ...this.#settings,
      // Handoffs record the active agent by name.
      name: this.name,
      ...(this.instructions !== undefined ? { instructions: this.instructions } : {}),
      tools: this.tools as Record<string, AgentTool>,
      toolsContext,
      ...extra,
    } as AgentOptions<T>;
  }

  /**
   * Runs the agent: a new run from `prompt` (or `messages`), or the
   * continuation of `state` (or of the run `runId` holds in `store`). Resolves
   * with the run's text, output, outcome and state; a run that fails is a
   * result with status `failed`. Rejects only for input that cannot start
   * anything: a state that is not one (AgentStateError).
   */
  async run(input: AgentRunInput = {}): Promise<AgentRunResult<T>> {
    const leg = await this.#plan(input);
    const result = leg.resume
      ? await resumeAgent<T>(leg.options as ResumeOptions<T>)
      : await runAgent<T>(leg.options);
    return this.#finish(leg, result);
  }

  /** Like {@link run}, as the engine's stream (events, `agent-run-update` views, text); `finish(result)` gives the Agent's result. */
  async stream(input: AgentRunInput = {}): Promise<{ stream: AgentStream<T>; finish: () => Promise<AgentRunResult<T>> }> {
    const leg = await this.#plan(input);
    if (leg.resume) throw new InvalidOptionsError('agent.stream() starts runs; continue a state with agent.run({ state }).');
    const stream = streamAgent<T>(leg.options);
    return { stream, finish: async () => this.#finish(leg, await stream.result) };
  }

  async #plan(input: AgentRunInput): Promise<Leg<T>> {
    if (input === null || typeof input !== 'object') throw new InvalidOptionsError('agent.run() takes an options object: { prompt } or { state }.');
    const scopeGiven = input.scope;
    const extra: Partial<ResumeOptions<T>> = {
      ...(input.maxSteps !== undefined ? { maxSteps: input.maxSteps } : {}),
      ...(input.abortSignal ? { abortSignal: input.abortSignal } : {}),
      ...(input.lease ? { lease: input.lease } : {}),
    };
    const answers: Partial<ResumeOptions<T>> = {
      ...(input.clientToolResults ? { clientToolResults: input.clientToolResults } : {}),
      ...(input.retryToolCallIds ? { retryToolCallIds: input.retryToolCallIds } : {}),
      ...(input.reconciledToolResults ? { reconciledToolResults: input.reconciledToolResults } : {}),
      ...(input.retryFailed !== undefined ? { retryFailed: input.retryFailed } : {}),
    };
    const fresh = (history: Message[] | undefined, runId: string, scope: string): Leg<T> => {
      const store = capture(input.store ?? createInMemoryAgentRunStore()).store;
      const session = { store, runId, scope };
      return {
        resume: false, session, warnings: [],
        options: this.engineOptions(runId, {
          ...extra, session,
          ...(history ? { messages: history } : {}),
          ...(input.prompt !== undefined ? { prompt: input.prompt } : {}),
        }),
      };
    };
    if (input.state !== undefined) {
      const state = checkAgentState(input.state);
      if (input.prompt !== undefined || input.messages !== undefined) {
        if (!isEnded(state.status)) {
          throw new InvalidOptionsError(`agent.run(): the state's run is ${state.status}; continue it without a prompt (answer its pending approvals), or start a new run.`);
        }
        // The next turn: a new run on the conversation so far (without its system message: the Agent adds its own).
        const history = [...state.messages.filter((m) => m.role !== 'system'), ...(input.messages ?? [])];
        return fresh(history, input.runId ?? nanoid(), scopeGiven ?? state.scope);
      }
      if (!input.store && !state.record) {
        throw new InvalidOptionsError('agent.run(): this state has no record (its run was refused before it saved anything); start a new run.');
      }
      const store = input.store ?? createInMemoryAgentRunStore([state.record!]);
      return this.#continue(store, state.runId, state.scope, input.approvalResponses, { ...extra, ...answers });
    }
    const scope = scopeGiven ?? DEFAULT_SCOPE;
    if (input.runId !== undefined && input.store) {
      // The same call again after a crash continues the stored run; a run that ended answers with what it stored.
      // A load that fails (another scope, a corrupt record) goes to the engine's resume, which refuses it as a failed result.
      const stored = await input.store.load(input.runId, { scope }).then((r) => r !== undefined, () => true);
      if (stored) return this.#continue(input.store, input.runId, scope, input.approvalResponses, { ...extra, ...answers });
    }
    return fresh(input.messages, input.runId ?? nanoid(), scope);
  }

  async #continue(
    store: AgentRunStore, runId: string, scope: string, responses: ApprovalResponse[] | undefined, extra: Partial<ResumeOptions<T>>,
  ): Promise<Leg<T>> {
    const session = { store: capture(store).store, runId, scope };
    let warnings: AgentWarning[] = [];
    let approvalResponses = responses;
    if (responses !== undefined) {
      // Which approvals wait is read from the record; a decision under an old approvalVersion is held back.
      const stored = await store.load(runId, { scope }).catch(() => undefined);
      const decided = decisionsForEngine(responses, stored?.pendingApprovals ?? [], (name) => this.approvalVersionOf(name));
      approvalResponses = decided.responses;
      warnings = decided.warnings;
    }
    return {
      resume: true, session, warnings,
      options: this.engineOptions(runId, { ...extra, session, ...(approvalResponses ? { approvalResponses } : {}) }),
    };
  }

  async #finish(leg: Leg<T>, result: AgentResult<T>): Promise<AgentRunResult<T>> {
    const { store, runId, scope } = leg.session;
    const saved = capture(store).last;
    const written = saved.get(runId);
    saved.delete(runId);
    const record = written ?? (await store.load(runId, { scope }).catch(() => undefined)) ?? null;
    const merged = leg.warnings.length > 0 ? { ...result, warnings: [...leg.warnings, ...result.warnings] } : result;
    const state = agentStateOf({ record, result: merged as AgentResult<unknown>, scope, approvalVersionOf: (n) => this.approvalVersionOf(n) });
    return {
      runId: state.runId,
      status: result.status,
      taskOutcome: state.taskOutcome!,
      outputText: result.text,
      ...(result.status === 'completed' ? { output: result.output } : {}),
      state,
      pendingApprovals: state.pendingApprovals,
      pendingClientCalls: state.pendingClientCalls,
      usage: result.usage,
      warnings: merged.warnings,
      result: merged,
    };
  }
}

interface Leg<T> {
  resume: boolean;
  session: { store: AgentRunStore; runId: string; scope: string };
  options: AgentOptions<T>;
  warnings: AgentWarning[];
}

/** True for an {@link Agent} (also one from another copy of the package). */
export function isAgent(value: unknown): value is Agent<unknown> {
  return value instanceof Agent || (typeof value === 'object' && value !== null && typeof (value as Agent).run === 'function' &&
    typeof (value as Agent).engineOptions === 'function');
}


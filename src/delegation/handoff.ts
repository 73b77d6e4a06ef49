/**
 * A run's handoffs, as one leg holds them (docs/delegation.md#handoffs): the
 * graph checked and each target's options normalized before anything runs,
 * a transfer tool per target added to the tools of the agent that lists it,
 * the `handoffs` key of the binding, and the switch that puts a target's
 * model (with its fallbacks), instructions and tools in the leg's options
 * when the run hands over (live, through the run machine's `enterHandoff`
 * actor, or on a resume, from the active agent the record holds).
 *
 * The switch changes only what a step reads from the options; the run's own
 * settings (output, verify, limits, guardrails, session, execution policy and
 * ledger, memory, chat) stay the run's. The execution policy's allowlists and
 * ledger hold a target's model and tools as they hold the root's, since every
 * model call and tool call reads them from the same options.
 * (Internal to Cairn.)
 */
import { BindingChangedError, CairnError } from '../errors/index.js';
import { normalizeOptions, validateToolContexts, type NormalizedOptions } from '../agent/options.js';
import { toolParameters } from '../agent/arguments.js';
import type { AgentOptions, AgentTool, Message } from '../agent/types.js';
import { closeMcp, connectMcp } from '../mcp/leg.js';
import type { McpStepBoundary } from '../mcp/types.js';
import { HandoffError } from './handoff-errors.js';
import { handoffBindingOf, type HandoffBindingAgent } from './handoff-binding.js';
import { DEFAULT_ROOT_NAME, handoffGraph, transferToolName, type GraphAgent } from './handoff-graph.js';
import type { HandoffLeg } from './handoff-types.js';

type Options = NormalizedOptions<any>;

/** What a target brings to the steps it drives. */
const TARGET_KEYS = [
  'model', 'fallbackModels', 'tools', 'temperature', 'topP', 'effort', 'promptCaching', 'toolChoice', 'maxOutputTokens',
  'providerOptions', 'maxRetries', 'modelTimeoutMs', 'mcp',
] as const;

interface Target {
  agent: GraphAgent;
  /** The target's own options, normalized as a run's would be (its tools, their parameters, its models and settings). */
  view: Options;
  instructions: string | undefined;
}

class Leg implements HandoffLeg {
  active: string | null = null;
  /** The run's own MCP servers, once a switch took them out of the options (they are closed with the leg). */
  rootMcp: Options['mcpLive'] = null;

  constructor(
    readonly rootName: string,
    readonly rootSystem: string | undefined,
    readonly transfers: Record<string, string>,
    readonly root: GraphAgent,
    readonly targets: Map<string, Target>,
  ) {}
}

const legOf = (opts: Options): Leg | null => (opts.handoff as Leg | null | undefined) ?? null;

function transferTool(target: GraphAgent): AgentTool {
  const about = target.options.handoffDescription;
  return {
    description: `Hand the conversation over to the agent ${target.name}${typeof about === 'string' && about !== '' ? `: ${about}` : '.'} It answers from the next step on.`,
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    // Taking a handoff has no effect outside the run: an interrupted transfer runs again by itself.
    replay: 'idempotent',
    execute: async () => ({ transferredTo: target.name }),
  };
}

function withTransfers(view: Options, agent: GraphAgent, agents: Map<string, GraphAgent>): void {
  const tools = { ...view.tools };
  const parameters = { ...view.parameters };
  for (const name of agent.handoffs) {
    const tool = transferTool(agents.get(name)!);
    const toolName = transferToolName(name);
    tools[toolName] = tool;
    parameters[toolName] = toolParameters(toolName, tool);
  }
  view.tools = tools;
  view.parameters = parameters;
}

async function targetView(agent: GraphAgent, opts: Options): Promise<Options> {
  const picked: Record<string, unknown> = {};
  for (const key of TARGET_KEYS) if (agent.options[key] !== undefined) picked[key] = agent.options[key];
  try {
    const view = normalizeOptions({ ...picked, deps: opts.raw.deps } as AgentOptions<unknown>);
    view.toolContexts = await validateToolContexts({ ...picked, toolsContext: agent.options.toolsContext } as AgentOptions<unknown>);
    return view;
  } catch (error) {
    if (!CairnError.isInstance(error)) throw error;
    throw new HandoffError('handoff_invalid', agent.name, `Handoff agent ${agent.name}: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Checks the run's `handoffs` and puts them in the leg's options. Called once
 * per leg before anything is read or written; a run without handoffs passes
 * through untouched.
 */
export async function prepareHandoffs(opts: Options, runId: string): Promise<void> {
  const options = opts.raw as AgentOptions<any>;
  if (options.handoffs === undefined) return;
  if (!Array.isArray(options.handoffs)) throw new HandoffError('handoff_invalid', options.name ?? DEFAULT_ROOT_NAME, 'handoffs must be an array of agents.');
  if (options.handoffs.length === 0) return;
  const graph = handoffGraph(options, runId);
  const agents = new Map(graph.map((agent) => [agent.name, agent]));
  const root = graph[0]!;
  const targets = new Map<string, Target>();
  const transfers: Record<string, string> = {};
  for (const agent of graph) {
    for (const name of agent.handoffs) transfers[transferToolName(name)] = name;
    if (agent === root) continue;
    const view = await targetView(agent, opts);
    withTransfers(view, agent, agents);
    targets.set(agent.name, { agent, view, instructions: agent.options.instructions ?? agent.options.system });
  }
  withTransfers(opts, root, agents);
  opts.handoff = new Leg(root.name, options.system ?? options.instructions, transfers, root, targets);
  bindHandoffs(opts);
}

/** The binding's `handoffs` key, from the graph and each target's options as they are now (MCP catalogs included). */
function bindHandoffs(opts: Options): void {
  const leg = legOf(opts);
  if (!leg) return;
  const agents: HandoffBindingAgent[] = [{
    name: leg.root.name, handoffs: leg.root.handoffs, model: null, fallback: null, instructions: null, tools: null, mcp: null, description: null,
  }];
  for (const { agent, view, instructions } of leg.targets.values()) {
    const description = agent.options.handoffDescription;
    agents.push({
      name: agent.name,
      handoffs: agent.handoffs,
      model: view.binding.model,
      fallback: view.binding.fallback ?? null,
      instructions: instructions ?? null,
      tools: view.binding.tools,
      mcp: view.binding.mcp ?? null,
      description: typeof description === 'string' ? description : null,
    });
  }
  const { digest, parts } = handoffBindingOf(agents);
  opts.binding.handoffs = digest;
  if (opts.binding.parts) opts.binding.parts.handoffs = parts;
}

/**
 * Connects the MCP servers of the targets that have some (their tools join
 * the target's, their catalog the binding). A run that ended answers from its
 * record: its targets' servers are not contacted, and the binding keeps the
 * recorded key.
 */
export async function connectHandoffMcp(opts: Options, stored?: { binding: { handoffs?: string } }, ended = false): Promise<void> {
  const leg = legOf(opts);
  if (!leg) return;
  const withMcp = [...leg.targets.values()].filter((t) => t.view.mcp);
  if (withMcp.length === 0) return;
  if (ended) {
    if (stored?.binding.handoffs !== undefined) opts.binding.handoffs = stored.binding.handoffs;
    return;
  }
  for (const target of withMcp) await connectMcp(target.view);
  bindHandoffs(opts);
}

/** Closes the servers of every target, and the run's own once a switch took them out of the options. */
export async function closeHandoffs(opts: Options | undefined): Promise<void> {
  const leg = opts ? legOf(opts) : null;
  if (!leg) return;
  const root = leg.rootMcp as { close(): Promise<void> } | null;
  leg.rootMcp = null;
  await Promise.all([root?.close(), ...[...leg.targets.values()].map((t) => closeMcp(t.view))]);
}

/** Puts the target's model, fallbacks, settings and tools in the leg's options. Switching to the active agent again changes nothing. */
export function switchTo(opts: Options, name: string): void {
  const leg = legOf(opts);
  const target = leg?.targets.get(name);
  if (!leg || !target) throw new BindingChangedError(['handoffs'], [`the run was handed to ${name}, which is not among the run's handoff agents`]);
  if (leg.active === name) return;
  const view = target.view;
  if (leg.active === null) leg.rootMcp = opts.mcpLive;
  opts.tools = view.tools;
  opts.parameters = view.parameters;
  opts.toolContexts = view.toolContexts;
  opts.model = view.model;
  opts.models = view.models;
  opts.maxRetries = view.maxRetries;
  opts.modelTimeoutMs = view.modelTimeoutMs;
  opts.providerOptions = view.providerOptions;
  opts.settings = view.settings;
  opts.toolChoice = view.toolChoice;
  opts.mcpLive = view.mcpLive ? targetBoundary(opts, view) : null;
  leg.active = name;
}

/** A target's MCP step boundary: a catalog its servers announced becomes the leg's tools (its servers are closed with the leg). */
function targetBoundary(opts: Options, view: Options): McpStepBoundary & { close(): Promise<void>; bind(leg: unknown): void } {
  const live = view.mcpLive as McpStepBoundary & { bind(leg: unknown): void };
  return {
    // The leg's host: the target's servers warn on its stream and hold sampling to its policy.
    bind: (leg) => live.bind(leg),
    atStepBoundary: async () => {
      const names = await live.atStepBoundary();
      if (names) {
        opts.tools = view.tools;
        opts.parameters = view.parameters;
        bindHandoffs(opts);
      }
      return names;
    },
    close: async () => undefined,
  };
}

/** A resume goes on with the agent the record says drives the run. */
export function enterStoredHandoff(opts: Options, activeAgent: string | null | undefined): void {
  if (typeof activeAgent === 'string') switchTo(opts, activeAgent);
}

/** The transfer tools a new run starts with (its RunInput's `handoffs`), or null. */
export const transfersOf = (opts: Options): Record<string, string> | null => legOf(opts)?.transfers ?? null;

/**
 * The history a step sends: once a target drives the run, its instructions
 * take the place of the run's own system message (other system messages, a
 * memory recall's for one, stay where they are).
 */
export function withInstructions(opts: Options, messages: readonly Message[]): readonly Message[] {
  const leg = legOf(opts);
  if (!leg || leg.active === null) return messages;
  const instructions = leg.targets.get(leg.active)!.instructions;
  const rest = [...messages];
  const own = leg.rootSystem === undefined ? -1 : rest.findIndex((m) => m.role === 'system' && m.content === leg.rootSystem);
  if (own >= 0) rest.splice(own, 1);
  return instructions === undefined ? rest : [{ role: 'system', content: instructions }, ...rest];
}

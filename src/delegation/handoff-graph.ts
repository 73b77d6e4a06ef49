/**
 * The handoff graph of a run (docs/delegation.md#handoffs), walked from the
 * run's own agent before anything runs. Agents are known by name, so:
 *
 * - a target's name must make a tool name: `transfer_to_<name>` (letters,
 *   digits, `_` and `-`, 1 to 52 characters);
 * - a cycle is an agent that can be handed the run while it, or an agent that
 *   handed the run on to it, still drives it: any path that reaches a name
 *   already on it (the run's own agent included, a target listing itself
 *   included) is refused with `handoff_cycle`, so every handoff moves the run
 *   forward and a run is handed over at most as many times as there are agents;
 * - two different agents of one name, or one target listed twice, are
 *   `handoff_duplicate`;
 * - a transfer tool that has the name of one of the agent's own tools is
 *   `handoff_tool_conflict`.
 * (Internal to Cairn.)
 */
import type { AgentOptions, HandoffTarget } from '../agent/types.js';
import { HandoffError } from './handoff-errors.js';

const NAME = /^[A-Za-z0-9_-]{1,52}$/;

/** The tool that hands the run to `agent`. */
export const transferToolName = (agent: string): string => `transfer_to_${agent}`;

/** The run's own agent's name. */
export const DEFAULT_ROOT_NAME = 'root';

export interface GraphAgent {
  name: string;
  /** What identifies the agent: the Agent object, or the options object given. */
  source: object;
  options: AgentOptions<any>;
  /** The agents it can hand the run to, in the order given. */
  handoffs: string[];
}

const plainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

export function checkAgentName(name: unknown, where: string): string {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new HandoffError('handoff_invalid', String(name), `${where} must be 1 to 52 letters, digits, _ or -, got ${JSON.stringify(name)}.`);
  }
  return name;
}

function resolve(value: unknown, where: string, runId: string): { name: string; source: object; options: AgentOptions<any> } {
  const candidate = value as Partial<Extract<HandoffTarget, { engineOptions: unknown }>> | null;
  if (candidate && typeof candidate === 'object' && typeof candidate.engineOptions === 'function') {
    const name = checkAgentName(candidate.name, `${where}.name`);
    return { name, source: candidate, options: candidate.engineOptions(runId, {}) };
  }
  if (!plainObject(value) || value.model === undefined || value.model === null) {
    throw new HandoffError('handoff_invalid', String((value as { name?: unknown } | null)?.name ?? where), `${where} must be an Agent or { name, model, instructions?, tools?, ... }.`);
  }
  return { name: checkAgentName(value.name, `${where}.name`), source: value, options: value as unknown as AgentOptions<any> };
}

/** Every agent reachable from the run's own (first), each once. Throws a HandoffError for bad input. */
export function handoffGraph(root: AgentOptions<any>, runId: string): GraphAgent[] {
  // The run's own agent is never handed the run (that would be a cycle), so its name need not make a tool name.
  const rootName = root.name ?? DEFAULT_ROOT_NAME;
  if (typeof rootName !== 'string' || rootName === '') throw new HandoffError('handoff_invalid', String(rootName), 'name must be a non-empty string.');
  const agents = new Map<string, GraphAgent>();
  const visit = (agent: GraphAgent, path: string[]) => {
    agents.set(agent.name, agent);
    const list = agent.options.handoffs;
    const where = agent === first ? 'handoffs' : `agent ${agent.name}: handoffs`;
    if (list === undefined) return;
    if (!Array.isArray(list)) throw new HandoffError('handoff_invalid', agent.name, `${where} must be an array of agents.`);
    const own = new Set(Object.keys(agent.options.tools ?? {}));
    list.forEach((value, index) => {
      const target = resolve(value, `${where}[${index}]`, runId);
      if (path.includes(target.name)) {
        const cycle = [...path.slice(path.indexOf(target.name)), target.name];
        throw new HandoffError('handoff_cycle', target.name, `Handoffs form a cycle: ${cycle.join(' → ')}. A run is only handed forward, never back to an agent that drove it.`, { path: cycle });
      }
      if (agent.handoffs.includes(target.name)) {
        throw new HandoffError('handoff_duplicate', target.name, `${where} lists ${target.name} twice.`);
      }
      const tool = transferToolName(target.name);
      if (own.has(tool)) {
        throw new HandoffError('handoff_tool_conflict', agent.name, `${where}[${index}]: the transfer tool ${tool} has the name of one of ${agent.name}'s own tools.`);
      }
      agent.handoffs.push(target.name);
      const seen = agents.get(target.name);
      if (seen) {
        if (seen.source !== target.source) throw new HandoffError('handoff_duplicate', target.name, `Two different agents of the handoffs are named ${target.name}; agents are known by name.`);
        return;
      }
      visit({ ...target, handoffs: [] }, [...path, target.name]);
    });
  };
  const first: GraphAgent = { name: rootName, source: root, options: root, handoffs: [] };
  visit(first, [rootName]);
  return [...agents.values()];
}

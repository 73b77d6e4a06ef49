/**
 * `agentTool(agent, {...})`: an Agent offered to another run as a tool. The
 * parent's model calls it with `{ input }`; the call takes the run's one tool
 * path (policy, guardrails, approval, admission, the durable `executing`
 * receipt) and its effect is a child run of `agent` (machines/sub-agent.ts,
 * driven by agent-tool-run.ts): a normal durable run in the parent's store
 * and scope, under a child of the parent's execution context, with the
 * parent's guardrails, no memory and no chat. See docs/delegation.md.
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { tool, type Tool } from '../sdk/tool.js';
import type { ChildContextOptions } from '../policy/index.js';
import { SubAgentError } from './agent-tool-errors.js';
import { AGENT_TOOL, subAgentOf, type SubAgentAgent, type SubAgentDefinition } from './agent-tool-marker.js';

export { subAgentOf, type SubAgentDefinition };
export { childRunIdOf } from './agent-tool-id.js';

/** How deep sub-agents nest by default: a root run's child is at depth 1. */
export const DEFAULT_SUB_AGENT_MAX_DEPTH = 4;

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export interface AgentToolOptions {
  /** The name the parent's model calls the sub-agent by: 1 to 64 of `A-Z a-z 0-9 _ -`. */
  name: string;
  /** What the sub-agent does, for the parent's model. @default the agent's instructions' first line */
  description?: string;
  /**
   * The deepest a run of this tool may be: the parent's own depth plus one
   * (a top-level run's child is at 1). A deeper call fails before its child
   * runs (`subagent_depth_exceeded`), and so does defining a tool whose
   * agent's own sub-agents already nest deeper. @default 4
   */
  maxDepth?: number;
  /** Hold each delegation for an application-owned decision before the child starts. @default false */
  requiresApproval?: boolean;
  /**
   * Narrows the child's execution context further (`execution.child(...)`
   * options: allowlists, budget, deadline, requireApproval). The child's
   * context is named after the tool. @default nothing more than the parent's
   */
  execution?: Omit<ChildContextOptions, 'name'>;
}

/** A tool made by {@link agentTool}. */
export type AgentToolDefinition = Tool<{ input: string }, string> & { readonly [AGENT_TOOL]: SubAgentDefinition };

/** The arguments the parent's model sends: one task, in words. */
const INPUT_SCHEMA = {
  type: 'object',
  properties: { input: { type: 'string', description: 'The task for the sub-agent, with everything it needs to know.' } },
  required: ['input'],
  additionalProperties: false,
} as const;

const inputValidator: StandardSchemaV1<{ input: string }> = {
  '~standard': {
    version: 1,
    vendor: 'cairn',
    validate: (value) => {
      const input = (value as { input?: unknown } | null)?.input;
      if (typeof value !== 'object' || value === null || Array.isArray(value) || typeof input !== 'string') {
        return { issues: [{ message: 'expected { input: string }' }] };
      }
      const extra = Object.keys(value).filter((k) => k !== 'input');
      if (extra.length > 0) return { issues: [{ message: `unexpected ${extra.join(', ')}` }] };
      return { value: { input } };
    },
  },
};

const refuse = (message: string, name?: string): never => {
  throw new SubAgentError('agent_tool_invalid', message, name);
};

/** An Agent (from `cairn`), also one from another copy of the package: what a sub-agent needs of it. */
function isAgentLike(value: unknown): value is SubAgentAgent {
  const v = value as Partial<SubAgentAgent> | null;
  return typeof v === 'object' && v !== null && typeof v.engineOptions === 'function' && typeof (v as { run?: unknown }).run === 'function' &&
    typeof v.name === 'string' && typeof v.tools === 'object' && v.tools !== null;
}

/** How deep an agent's sub-agents nest below it, itself counted: 1 for an agent without any. */
export function nestingOf(agent: SubAgentAgent): number {
  let deepest = 0;
  for (const t of Object.values(agent.tools)) {
    const sub = subAgentOf(t);
    if (sub) deepest = Math.max(deepest, nestingOf(sub.agent));
  }
  return 1 + deepest;
}

/** Options that would give the tool a scoped context, which a sub-agent refuses (docs/delegation.md). */
const SCOPED_KEYS = ['context', 'contextSchema', 'validateContext', 'scopedContext', 'toolsContext'];

/**
 * Offers `agent` to another run as a tool. The model calls it with
 * `{ input: string }`; the call starts (or, on a resume, goes on with) a
 * child run of the agent, and the child's answer is the call's result: its
 * final text, or its validated `output` when the agent has one.
 *
 * @example
 * ```ts
 * const researcher = new Agent({ name: 'researcher', model, instructions: 'Find facts.', tools: [search] });
 * const lead = new Agent({ model, tools: [agentTool(researcher, { name: 'research', description: 'Looks things up.' })] });
 * const { outputText } = await lead.run({ prompt: 'What changed in the 2.3 release?', store });
 * ```
 */
export function agentTool(agent: SubAgentAgent, options: AgentToolOptions): AgentToolDefinition {
  if (!isAgentLike(agent)) refuse('agentTool() takes an Agent (new Agent({...})) as its first argument.');
  if (options === null || typeof options !== 'object') refuse('agentTool() takes an options object: { name, description, ... }.');
  const { name } = options;
  if (typeof name !== 'string' || !TOOL_NAME.test(name)) refuse(`agentTool(): name must be 1 to 64 of A-Z a-z 0-9 _ - (${TOOL_NAME}), got ${JSON.stringify(name)}.`);
  for (const key of SCOPED_KEYS) {
    if ((options as unknown as Record<string, unknown>)[key] !== undefined) {
      throw new SubAgentError(
        'agent_tool_scoped_context',
        `agentTool "${name}": ${key} gives it a scoped context, which a sub-agent refuses (it would lose its session and approval ` +
          'internals and break the child run\'s guarantees); the child run gets the parent\'s trusted context.',
        name,
      );
    }
  }
  if (options.description !== undefined && typeof options.description !== 'string') refuse(`agentTool "${name}": description must be a string.`, name);
  const maxDepth = options.maxDepth ?? DEFAULT_SUB_AGENT_MAX_DEPTH;
  if (!Number.isInteger(maxDepth) || maxDepth < 1) refuse(`agentTool "${name}": maxDepth must be a whole number of at least 1, got ${JSON.stringify(options.maxDepth)}.`, name);
  if (options.requiresApproval !== undefined && typeof options.requiresApproval !== 'boolean') refuse(`agentTool "${name}": requiresApproval must be a boolean.`, name);
  if (options.execution !== undefined && (options.execution === null || typeof options.execution !== 'object')) {
    refuse(`agentTool "${name}": execution must be the options of an execution context's child().`, name);
  }
  for (const [toolName, t] of Object.entries(agent.tools)) {
    if (typeof (t as { execute?: unknown })?.execute !== 'function') {
      refuse(`agentTool "${name}": the agent's tool "${toolName}" is a client tool; a sub-agent's tools must run on the server.`, name);
    }
  }
  const nesting = nestingOf(agent);
  if (nesting > maxDepth) {
    throw new SubAgentError(
      'subagent_depth_exceeded',
      `agentTool "${name}": its agent's sub-agents nest ${nesting} deep, more than maxDepth ${maxDepth}.`,
      name,
    );
  }
  const made = tool({
    name,
    description: options.description ?? `Delegates a task to the ${agent.name} agent and answers with its result.`,
    schema: inputValidator,
    jsonSchema: INPUT_SCHEMA as unknown as { type: 'object' },
    // Driving the child is idempotent by construction: a resume goes on with the same child run.
    replay: 'idempotent',
    ...(options.requiresApproval ? { requiresApproval: true } : {}),
    // The engine runs the child itself (machines/sub-agent.ts); a run that reaches this is not a sub-agent call.
    execute: () => {
      throw new SubAgentError('agent_tool_invalid', `agentTool "${name}" was called outside a run's sub-agent path.`, name);
    },
  });
  const definition: SubAgentDefinition = Object.freeze({ agent, name, maxDepth, execution: { ...(options.execution ?? {}) } });
  Object.defineProperty(made, AGENT_TOOL, { value: definition, enumerable: false });
  return made as AgentToolDefinition;
}

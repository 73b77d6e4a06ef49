/**
 * What the engine knows of a sub-agent tool without importing the Agent:
 * the mark on the tool, the parent a child run records, and the check of a
 * scoped context. A leaf module, so that option checks can use it. (Internal to Cairn.)
 */
import type { ChildContextOptions } from '../policy/types.js';

export const AGENT_TOOL = Symbol.for('cairn.agent-tool');
/** The key under which a child run's options carry its parent (never serialized as an option). */
export const PARENT = Symbol.for('cairn.sub-agent.parent');

/** What a sub-agent needs of an Agent (from `cairn`): its name, its tools and the engine options of a run. */
export interface SubAgentAgent {
  readonly name: string;
  readonly tools: Readonly<Record<string, unknown>>;
  engineOptions(runId: string, extra: Record<string, never>): object;
}

/** What a run needs to drive a sub-agent call. */
export interface SubAgentDefinition {
  agent: SubAgentAgent;
  name: string;
  maxDepth: number;
  execution: Omit<ChildContextOptions, 'name'>;
}

/** The parent of a child run, as its record keeps it (in `binding.parent`). */
export interface SubAgentParent {
  /** The parent run. */
  runId: string;
  /** The parent's call that started the child, and its model step. */
  toolCallId: string;
  modelStep: number;
  /** The agentTool's name. */
  tool: string;
  /** 1 for a child of a top-level run, one more for each level below. */
  depth: number;
}

/** The definition behind a sub-agent tool, or undefined for any other tool. */
export function subAgentOf(value: unknown): SubAgentDefinition | undefined {
  return typeof value === 'object' && value !== null ? (value as { [AGENT_TOOL]?: SubAgentDefinition })[AGENT_TOOL] : undefined;
}

/** The parent a run's options name (a child run's), or undefined. */
export function parentOf(options: object | null | undefined): SubAgentParent | undefined {
  return options ? (options as { [PARENT]?: SubAgentParent })[PARENT] : undefined;
}

/** A toolsContext value is the Agent's own (`{ runId }`) or absent; anything else is a scoped context. */
export function isScopedContext(value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return true;
  const keys = Object.keys(value);
  return !(keys.length === 1 && keys[0] === 'runId' && typeof (value as { runId: unknown }).runId === 'string');
}

/**
 * The root entry's `runAgent`: `runAgent(agent, { state, maxSteps, ... })`
 * runs (or continues) an Agent and resolves with the Agent's result, and
 * `runAgent(options)` is the engine's own, unchanged (cairn/agent).
 */
import { runAgent as runEngine } from '../agent/index.js';
import type { AgentOptions, AgentResult } from '../agent/types.js';
import { isAgent, type Agent, type AgentRunInput, type AgentRunResult } from './agent.js';

/**
 * Runs an Agent (`agent.run(input)`), or, given the engine's options object, the engine's runAgent.
 *
 * @example
 * ```ts
 * const result = await runAgent(agent, { state, maxSteps: state.currentStep + 2 });
 * ```
 */
export function runAgent<T = string>(agent: Agent<T>, input?: AgentRunInput): Promise<AgentRunResult<T>>;
export function runAgent<T = string>(options: AgentOptions<T>): Promise<AgentResult<T>>;
export function runAgent<T = string>(
  first: Agent<T> | AgentOptions<T>,
  input?: AgentRunInput,
): Promise<AgentRunResult<T> | AgentResult<T>> {
  if (isAgent(first)) return (first as Agent<T>).run(input ?? {});
  return runEngine<T>(first as AgentOptions<T>);
}

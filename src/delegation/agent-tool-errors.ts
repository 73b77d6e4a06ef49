/** The typed error of sub-agents (agentTool): see docs/delegation.md and docs/errors.md. */
import { CairnError } from '../errors/index.js';

export type SubAgentErrorCode = 'agent_tool_invalid' | 'agent_tool_scoped_context' | 'subagent_depth_exceeded' | 'subagent_stopped';

/**
 * A sub-agent that cannot be defined or run: `agentTool()` given something
 * that is not an Agent or bad options (`agent_tool_invalid`); a scoped
 * context on an agentTool (`agent_tool_scoped_context`); a sub-agent deeper
 * than its `maxDepth` (`subagent_depth_exceeded`, before the child runs); a
 * child run that stopped without an answer (`subagent_stopped`: max steps,
 * cancellation, budget; the parent's model is told). `toolName` names the
 * agentTool.
 */
export class SubAgentError extends CairnError {
  declare readonly code: SubAgentErrorCode;
  readonly toolName: string | undefined;

  constructor(code: SubAgentErrorCode, message: string, toolName?: string) {
    super(code, message, { fault: code === 'subagent_stopped' ? 'model' : 'user' });
    this.name = 'SubAgentError';
    this.toolName = toolName;
  }
}

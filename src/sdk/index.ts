/** The Agent surface of the `cairn` root entry: Agent, tool, createRunner, the Agent state and its task outcome. */
export { Agent, isAgent, type AgentConfig, type AgentRunInput, type AgentRunResult } from './agent.js';
export { tool, isTool, idempotencyKeyOf, type Tool, type ToolContext, type ToolInput, type ToolOptions } from './tool.js';
export { createRunner, type Runner, type RunnerOptions, type RunnerRunInput, type RunnerRunResult, type RunnerSessionInfo } from './runner.js';
export { runAgent } from './run-agent.js';
export {
  agentStateOf, checkAgentState, taskOutcomeOfState, AGENT_STATE_SCHEMA_VERSION, SUPPORTED_AGENT_STATE_VERSIONS,
  type AgentState, type AgentStateApproval, type AgentStateStep, type AgentStateToolResult, type PendingAgentApproval, type StateInput,
} from './state.js';
export { taskOutcomeOf, TASK_OUTCOMES, type TaskOutcome } from './task-outcome.js';
export { agentApprovalId } from './approvals.js';
export { AgentStateError, ToolDefinitionError } from './errors.js';

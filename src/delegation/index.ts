/** Delegation: sub-agents (agentTool) and handoffs. Re-exported from `cairn` and `cairn/agent` (docs/delegation.md). */
export {
  agentTool, childRunIdOf, DEFAULT_SUB_AGENT_MAX_DEPTH, type AgentToolDefinition, type AgentToolOptions,
} from './agent-tool.js';
export { SubAgentError, type SubAgentErrorCode } from './agent-tool-errors.js';
export type { SubAgentAgent, SubAgentParent } from './agent-tool-marker.js';
export { HandoffError, type HandoffErrorCode } from './handoff-errors.js';
export type { HandoffAgentOptions, HandoffTarget } from '../agent/types.js';

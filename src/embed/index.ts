/** `cairn/embed`: a Cairn run as a child actor of a host's own XState system. */
export { agentRunLogic, type AgentRunLogic } from './agent-run-logic.js';
export { AgentRunFailedError, type FailedAgentResult } from './errors.js';
export type * from './types.js';

export { runAgent, resumeAgent, streamAgent, resumeStreamAgent, agentRunLeaseKey } from './run-agent.js';
export { reconcileAgentRun, type AgentRunReconciliation, type ReconcileAgentRunOptions } from './reconcile.js';
export { cancelAgentRun, type AgentRunCancellation, type CancelAgentRunOptions } from '../runtime/cancel.js';
export {
  createInMemoryAgentRunStore, type InMemoryAgentRunStore, type InMemoryAgentRunStoreOptions,
} from '../stores/in-memory.js';
export { createInMemoryLeaseProvider, type InMemoryLeaseProviderOptions } from '../stores/in-memory-leases.js';
export type { AgentStream } from './stream.js';
export type { AgentRunView } from './run-view.js';
export { approvalIdFor, receiptKey, SUPPORTED_ENVELOPE_VERSIONS } from './envelope.js';
export * from './types.js';
export * from '../errors/index.js';
export { McpError, type McpErrorCode } from '../mcp/errors.js';
export * from '../delegation/index.js';
export type {
  McpHttpTransport, McpOptions, McpSamplingModel, McpSamplingOptions, McpServerConfig, McpStdioTransport, McpTimeouts,
} from '../mcp/types.js';
export * from '../v3/store-exports.js';
export type { AgentEventV3, AgentStreamV3 } from '../v3/run-stream.js';
export type { AgentOptionsV3, AgentSessionV3, ResumeOptionsV3 } from '../v3/run-options-types.js';
export type {
  AgentEventV3Extra, AgentV3Options, WorkingMemoryCreate, WorkingMemoryNote, WorkingMemoryOptions, WorkingMemorySnapshot,
} from '../v3/run-types.js';
export type { VersionedMemoryExtractOptions, VersionedMemoryRunOptions } from '../v3/versioned-options.js';

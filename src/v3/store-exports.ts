/** The V3 store surface `cairn/agent` re-exports (docs/v3.md). */
export { createInMemoryAgentRunStoreV3, type InMemoryAgentRunStoreV3, type InMemoryAgentRunStoreV3Options } from './in-memory.js';
export { assertAgentRunStoreV3, isAgentRunStoreV3, SUPPORTED_ENVELOPE_VERSIONS_V3 } from './store-checks.js';
export { contextBlobDigest } from './store-blob.js';
export { ContextBlobError, type ContextBlobErrorCode } from './store-errors.js';
export type * from './store-types.js';
export type {
  AgentRunContext, AgentRunContextStep, AgentRunEnvelopeV3, AgentRunForgotten, AgentRunMemoryIntent, AgentRunWorkingMemory,
} from './envelope.js';

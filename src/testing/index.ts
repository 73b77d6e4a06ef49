export * from './mock-model.js';
export * from './faults.js';
export * from './conformance/index.js';
export { defineMemoryStoreConformance, type MemoryStoreFixture, type MemoryStoreInitializer } from './memory-suite.js';
export { defineChatStoreConformance, type ChatStoreFixture, type ChatStoreInitializer } from './chat-suite.js';
export { defineSessionServiceConformance, type SessionServiceFixture, type SessionServiceInitializer } from './session-suite.js';
export {
  defineAgentRunStoreV3Conformance, v3TestBlob, v3TestEnvelope, type AgentRunStoreV3Fixture, type AgentRunStoreV3Initializer,
} from './v3-store-suite.js';
export { defineSwarmStoreConformance, type SwarmStoreFixture, type SwarmStoreInitializer } from './swarm-suite.js';
export {
  defineVersionedMemoryStoreConformance, type VersionedMemoryStoreFixture, type VersionedMemoryStoreInitializer,
} from './versioned-memory-suite.js';

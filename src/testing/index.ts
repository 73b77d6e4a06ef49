export * from './mock-model.js';
export * from './faults.js';
export * from './conformance/index.js';
export { defineMemoryStoreConformance, type MemoryStoreFixture, type MemoryStoreInitializer } from './memory-suite.js';
export { defineChatStoreConformance, type ChatStoreFixture, type ChatStoreInitializer } from './chat-suite.js';
export { defineSessionServiceConformance, type SessionServiceFixture, type SessionServiceInitializer } from './session-suite.js';

/**
 * Conformance suites for AgentRunStore and LeaseProvider backends: the same
 * spec for the in-memory, SQLite and Postgres backends, and for yours.
 */
export { validateAgentRunStore } from './store-suite.js';
export { validateLeaseProvider } from './lease-suite.js';
export { createManualClock, type ManualClock } from './clock.js';
export type {
  AgentRunStoreFixture, AgentRunStoreInitializer, ConformanceTestApi, LeaseProviderFixture, LeaseProviderInitializer,
} from './types.js';

/**
 * Conformance suites for AgentRunStore, LeaseProvider, BreakerStore,
 * AgentStreamJournal and BudgetLedger backends: the same spec for the
 * in-memory, SQLite and Postgres backends, and for yours.
 */
export { validateAgentRunStore } from './store-suite.js';
export {
  defineStoreConformance, type BackendHandle, type BackendSpace, type StoreConformanceOptions,
} from './define.js';
export { validateLeaseProvider } from './lease-suite.js';
export { validateBreakerStore, type BreakerStoreFixture, type BreakerStoreInitializer } from './breaker-suite.js';
export { defineJournalConformance, type JournalFixture, type JournalInitializer } from './journal-suite.js';
export { defineLedgerConformance, type LedgerFixture, type LedgerInitializer } from './ledger-suite.js';
export { createManualClock, type ManualClock } from './clock.js';
export type {
  AgentRunStoreFixture, AgentRunStoreInitializer, ConformanceTestApi, LeaseProviderFixture, LeaseProviderInitializer,
} from './types.js';
// The planner a backend writes through (declared beside the stores).
export * from '../../stores/backend-kit.js';

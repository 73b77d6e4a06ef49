/**
 * Fault injection for durable runs: a store that fails chosen calls, a
 * simulated process crash at any save, model call or tool execution, a fresh
 * store over a copy of the data to resume from, and a ledger of effects that
 * outlives every crash.
 */
export * from './faults/store.js';
export * from './faults/crash.js';
export * from './faults/clone.js';
export * from './faults/ledger.js';

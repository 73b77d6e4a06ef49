/**
 * The conformance suites against the in-memory store, lease provider and
 * breaker store: the same cases the durable backends run.
 */
import { describe, it } from 'vitest';
import { createInMemoryAgentRunStore, createInMemoryLeaseProvider } from 'cairn/agent';
import { createInMemoryBreakerStore } from 'cairn/models';
import { createManualClock, defineStoreConformance } from 'cairn/testing';

defineStoreConformance({
  name: 'in-memory',
  features: { leases: true, breakers: true },
  // A second object over the same memory does not exist.
  reopens: false,
  async create() {
    const clock = createManualClock();
    const leases = createInMemoryLeaseProvider({ clock });
    return {
      open: () => ({ agentRuns: createInMemoryAgentRunStore([], { clock, leases }), leases, breakers: createInMemoryBreakerStore() }),
      advance: async (ms) => clock.advance(ms),
    };
  },
}, { describe, it });

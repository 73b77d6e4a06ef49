/**
 * The conformance suites against the in-memory store, lease provider,
 * breaker store and UI journal: the same cases the durable backends run.
 */
import { describe, it } from 'vitest';
import { createInMemoryAgentRunStore, createInMemoryLeaseProvider } from 'cairn/agent';
import { createInMemoryBreakerStore } from 'cairn/models';
import { createManualClock, defineStoreConformance } from 'cairn/testing';
import { createInMemoryAgentStreamJournal } from 'cairn/ui';

defineStoreConformance({
  name: 'in-memory',
  features: { leases: true, breakers: true, journal: true },
  // A second object over the same memory does not exist.
  reopens: false,
  async create() {
    const clock = createManualClock();
    const leases = createInMemoryLeaseProvider({ clock });
    const journal = createInMemoryAgentStreamJournal({ clock });
    return {
      open: () => ({ agentRuns: createInMemoryAgentRunStore([], { clock, leases }), leases, breakers: createInMemoryBreakerStore(), journal }),
      advance: async (ms) => clock.advance(ms),
    };
  },
}, { describe, it });

/**
 * The conformance suites against the in-memory store and lease provider:
 * the same cases the durable backends run.
 */
import { describe, it } from 'vitest';
import { createInMemoryAgentRunStore, createInMemoryLeaseProvider } from 'cairn/agent';
import { createManualClock, validateAgentRunStore, validateLeaseProvider } from 'cairn/testing';

validateAgentRunStore({
  name: 'in-memory',
  features: { list: true, prune: true, leases: true },
  async create() {
    const clock = createManualClock();
    const leases = createInMemoryLeaseProvider({ clock });
    // No reopen: a second object over the same memory does not exist.
    return { store: createInMemoryAgentRunStore([], { clock, leases }), leases, advance: async (ms) => clock.advance(ms) };
  },
}, { describe, it });

validateLeaseProvider({
  name: 'in-memory',
  async create() {
    const clock = createManualClock();
    return { provider: createInMemoryLeaseProvider({ clock }), advance: async (ms) => clock.advance(ms) };
  },
}, { describe, it });

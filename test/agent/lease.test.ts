/**
 * Leases through the engine: claimed before the run is read, fencing every
 * save, lost → no more writes, drain → stop at the next model-step boundary.
 */
import { describe, expect, it } from 'vitest';
import {
  agentRunLeaseKey, createInMemoryAgentRunStore, createInMemoryLeaseProvider, resumeAgent, runAgent,
} from 'cairn/agent';
import { createMockModel, type MockTurn } from 'cairn/testing';
import { drainSignallingProvider, withRenew } from '../support/drain-provider.js';

function manualClock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => { now += ms; } };
}

const session = (store: ReturnType<typeof createInMemoryAgentRunStore>) => ({ store, runId: 'r1', scope: 'tenant-a' });

describe('leases', () => {
  it('a run holds its lease while it works and gives it back at the end', async () => {
    const clock = manualClock();
    const provider = createInMemoryLeaseProvider({ clock });
    const store = createInMemoryAgentRunStore([], { clock, leases: provider });
    const key = agentRunLeaseKey({ runId: 'r1', scope: 'tenant-a' });
    let heldDuring: string | undefined;
    const result = await runAgent({
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'look', args: {} }] }, { text: 'done' }] }),
      prompt: 'x',
      session: session(store),
      lease: { provider, owner: 'worker-1', ttlMs: 10_000 },
      deps: { clock },
      tools: { look: { parameters: { type: 'object' }, execute: async () => { heldDuring = (await provider.inspect(key))?.owner; return 'ok'; } } },
    });
    expect(result.status).toBe('completed');
    expect(heldDuring).toBe('worker-1');
    // Released: another owner takes it at once.
    expect(await provider.acquire(key, 'worker-2', 10_000)).not.toBeNull();
  });

  it('a malformed lease (no provider methods, an empty owner, a ttl under 30 ms) is refused before the lease or the run is touched', async () => {
    const clock = manualClock();
    const provider = createInMemoryLeaseProvider({ clock });
    const store = createInMemoryAgentRunStore([], { clock, leases: provider });
    const key = agentRunLeaseKey({ runId: 'r1', scope: 'tenant-a' });
    const leases = [
      { lease: { provider: {} as never }, message: 'lease.provider must implement the LeaseProvider contract (acquire, renew, release).' },
      { lease: { provider, owner: '' }, message: 'lease.owner must be a non-empty string.' },
      { lease: { provider, ttlMs: 10 }, message: 'lease.ttlMs must be a number of milliseconds, at least 30.' },
    ];
    for (const { lease, message } of leases) {
      const result = await runAgent({ model: createMockModel({ responses: [{ text: 'hi' }] }), prompt: 'x', session: session(store), lease, deps: { clock } });
      expect(result).toMatchObject({ status: 'failed', error: { code: 'invalid_options', message } });
    }
    expect(await provider.inspect(key)).toBeNull();
    expect(await store.load('r1')).toBeUndefined();
  });

  it('a held lease refuses a second executor with lease_held before anything is read or written', async () => {
    const clock = manualClock();
    const provider = createInMemoryLeaseProvider({ clock });
    const store = createInMemoryAgentRunStore([], { clock, leases: provider });
    const key = agentRunLeaseKey({ runId: 'r1', scope: 'tenant-a' });
    await provider.acquire(key, 'someone-else', 60_000);
    const model = createMockModel({ responses: [{ text: 'never' }] });
    const result = await runAgent({ model, prompt: 'x', session: session(store), lease: { provider, owner: 'me' }, deps: { clock } });
    expect(result.status).toBe('failed');
    if (result.status === 'failed') expect(result.error).toMatchObject({ name: 'AgentRunLeaseError', code: 'lease_held' });
    expect(model.calls).toHaveLength(0);
    expect(await store.load('r1')).toBeUndefined();
  });

  it('a lost lease stops every write: the run fails with lease_lost and the store keeps the new holder\'s revision', async () => {
    const clock = manualClock();
    const provider = createInMemoryLeaseProvider({ clock });
    const store = createInMemoryAgentRunStore([], { clock, leases: provider });
    const key = agentRunLeaseKey({ runId: 'r1', scope: 'tenant-a' });
    let release!: () => void;
    const paused = new Promise<void>((resolve) => (release = resolve));
    const first = runAgent({
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'slow', args: {} }] }, { text: 'done' }] }),
      prompt: 'x',
      session: session(store),
      lease: { provider, owner: 'paused', ttlMs: 1_000 },
      deps: { clock },
      tools: { slow: { parameters: { type: 'object' }, execute: async () => { await paused; return 'late'; } } },
    });
    await new Promise((r) => setTimeout(r, 30));
    // The paused executor's lease expires; another takes the run over.
    clock.advance(5_000);
    const thief = await provider.acquire(key, 'other', 60_000);
    expect(thief).not.toBeNull();
    const before = JSON.stringify(await store.load('r1'));
    release();
    const result = await first;
    expect(result.status).toBe('failed');
    if (result.status === 'failed') expect(result.error.code).toBe('lease_lost');
    expect(JSON.stringify(await store.load('r1'))).toBe(before);
  });

  it('a leg that loses its lease during a save returns only once that save settled, and starts none after', async () => {
    const clock = manualClock();
    let lose = false;
    let lost!: () => void;
    const lostSeen = new Promise<void>((resolve) => (lost = resolve));
    const provider = withRenew(clock, async (renew, lease, ttlMs) => {
      if (!lose) return renew(lease, ttlMs);
      lost();
      return null;
    });
    const backing = createInMemoryAgentRunStore([], { clock });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let started = 0;
    let settled = 0;
    const store = {
      load: backing.load.bind(backing),
      async save(envelope: Parameters<typeof backing.save>[0], options?: Parameters<typeof backing.save>[1]) {
        started++;
        try {
          if (started === 1) {
            // The first save hangs while the lease is lost under it.
            lose = true;
            await gate;
          }
          await backing.save(envelope, options);
        } finally {
          settled++;
        }
      },
    };
    let returned = false;
    const leg = runAgent({
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'look', args: {} }] }, { text: 'done' }] }),
      prompt: 'x',
      session: { store, runId: 'r1', scope: 'tenant-a' },
      lease: { provider, owner: 'me', ttlMs: 60 },
      deps: { clock },
      tools: { look: { parameters: { type: 'object' }, execute: () => 'seen' } },
    }).then((result) => {
      returned = true;
      return result;
    });
    await lostSeen;
    // The run knows its lease is gone, but its save is still in flight: the leg must not return yet.
    await new Promise((r) => setTimeout(r, 50));
    expect(returned).toBe(false);
    open();
    const result = await leg;
    expect(result.status).toBe('failed');
    if (result.status === 'failed') expect(result.error.code).toBe('lease_lost');
    expect(settled).toBe(started);
    const savesAtReturn = started;
    await new Promise((r) => setTimeout(r, 50));
    expect(started).toBe(savesAtReturn);
  });

  it('a drain stops the run at its next model-step boundary; a resume on another executor goes on', async () => {
    const clock = manualClock();
    // Tells the tool when a renewal has carried the drain request to the run (no timing guesses).
    const { provider, drainDelivered } = drainSignallingProvider(clock);
    const store = createInMemoryAgentRunStore([], { clock, leases: provider });
    const key = agentRunLeaseKey({ runId: 'r1', scope: 'tenant-a' });
    let ran = 0;
    const script = (request: { messages: { role: string }[] }): MockTurn =>
      request.messages.filter((m) => m.role === 'tool').length < 2
        ? { toolCalls: [{ toolName: 'work', args: {} }] }
        : { text: 'all done' };
    const options = (owner: string) => ({
      model: createMockModel({ strict: false, responses: [script] }),
      prompt: 'x',
      session: session(store),
      lease: { provider, owner, ttlMs: 60 },
      deps: { clock },
      tools: {
        work: {
          parameters: { type: 'object' as const },
          execute: async () => {
            ran++;
            if (ran === 1) {
              await provider.requestDrain(key);
              await drainDelivered;
            }
            return 'worked';
          },
        },
      },
    });
    const drained = await runAgent(options('worker-1'));
    expect(drained.status).toBe('stopped');
    if (drained.status === 'stopped') expect(drained.reason).toBe('drained');
    expect(ran).toBe(1);
    expect((await store.load('r1'))?.status).toBe('drained');
    const resumed = await resumeAgent(options('worker-2'));
    expect(resumed.status).toBe('completed');
    expect(ran).toBe(2);
  });
});

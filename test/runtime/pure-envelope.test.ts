/**
 * The envelope is a pure function of the run actor's persisted snapshot and
 * the run's identity: building it twice gives the same record, and building
 * it (a save) changes nothing anyone can observe: no event, no change to the
 * actor's snapshot, no change to the snapshot it was built from.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, streamAgent, type AgentEvent, type AgentOptions, type AgentRunStore } from '../../src/agent/index.js';
import { normalizeOptions } from '../../src/agent/options.js';
import { checkEnvelope } from '../../src/agent/envelope.js';
import { createMockModel } from '../../src/testing/index.js';
import { RunHost } from '../../src/runtime/host.js';
import { envelopeOf, type PersistedRun } from '../../src/runtime/record.js';

const turn = (calls: { id: string; name: string }[]) => ({
  text: '',
  toolCalls: calls.map((c) => ({ toolCallId: c.id, toolName: c.name, args: { n: 1 } })),
  finishReason: 'tool-calls' as const,
  usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
});

const answer = { text: 'done', toolCalls: [], finishReason: 'stop' as const, usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } };

/** The first leg's model makes two turns of calls; a resumed leg's model answers. */
function options(store: AgentRunStore, effects: string[], leg: 'first' | 'resume' = 'first'): AgentOptions {
  return {
    model: createMockModel({
      responses: leg === 'first' ? [turn([{ id: 'a', name: 'lookup' }]), turn([{ id: 'p', name: 'pay' }, { id: 'q', name: 'ask' }])] : [answer],
    }),
    prompt: 'Pay.',
    bindingId: 'pure-envelope',
    session: { store, runId: 'pure-1', scope: 's' },
    deps: { clock: { now: () => 5_000 }, generateId: (() => { let n = 0; return () => `id-${n++}`; })() },
    tools: {
      lookup: { parameters: { type: 'object' }, execute: () => { effects.push('lookup'); return { found: true }; } },
      pay: { parameters: { type: 'object' }, needsApproval: true, execute: () => { effects.push('pay'); return 'paid'; } },
      ask: { parameters: { type: 'object' } },
    },
  };
}

const deepFreeze = <T>(value: T): T => {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const entry of Object.values(value)) deepFreeze(entry);
  }
  return value;
};

describe('the envelope is a pure function of the snapshot', () => {
  it('builds the same envelope twice from a frozen snapshot, and touches nothing', async () => {
    const store = createInMemoryAgentRunStore();
    const suspended = await runAgent(options(store, []));
    expect(suspended.status).toBe('suspended');
    const stored = (await store.load('pure-1'))!;
    const snapshot = deepFreeze(structuredClone(stored.snapshot) as unknown as PersistedRun);
    const identity = deepFreeze({
      runId: 'pure-1', scope: 's', revision: stored.revision, binding: stored.binding, createdAt: stored.createdAt, updatedAt: stored.updatedAt,
    });
    // A frozen input would throw on any write (ESM modules are strict).
    const first = envelopeOf(snapshot, identity);
    const second = envelopeOf(snapshot, identity);
    expect(second).toEqual(first);
    // And it is the record the store holds: the projections come from the snapshot alone.
    expect(JSON.parse(JSON.stringify(first))).toEqual(stored);
    expect(first.pendingApprovals.map((a) => a.toolName)).toEqual(['pay']);
    expect(first.pendingClientCalls.map((c) => c.toolName)).toEqual(['ask']);
    expect(Object.keys(first.receipts)).toEqual(['0:a']);
  });

  it('a save emits no event and leaves the actor as it was', async () => {
    const inner = createInMemoryAgentRunStore();
    const effects: string[] = [];
    await runAgent(options(inner, effects));
    const stored = checkEnvelope(await inner.load('pure-1'), 'pure-1', 's');
    const events: AgentEvent<unknown>[] = [];
    let host: RunHost<unknown> | undefined;
    const checks: { same: boolean; quiet: boolean; untouched: boolean }[] = [];
    // At every save of the resumed leg, build the record twice more, with the actor exactly where the save found it.
    const store: AgentRunStore = {
      load: (id, o) => inner.load(id, o),
      async save(envelope, o) {
        const actor = (host as unknown as { actor: { getSnapshot(): unknown } }).actor;
        const before = events.length;
        const snapshotBefore = JSON.stringify(actor.getSnapshot());
        const a = host!.envelope();
        const b = host!.envelope();
        // The terminal save adds the result to the same record.
        const { result: _result, ...saved } = envelope;
        checks.push({
          same: JSON.stringify(a) === JSON.stringify(b) && JSON.stringify(a) === JSON.stringify(saved),
          quiet: events.length === before,
          untouched: JSON.stringify(actor.getSnapshot()) === snapshotBefore,
        });
        await inner.save(envelope, o);
      },
    };
    const resumeOptions = {
      ...options(store, effects, 'resume'),
      approvalResponses: [{ approvalId: stored.pendingApprovals[0]!.approvalId, token: stored.pendingApprovals[0]!.token, approved: true }],
      clientToolResults: [{ toolCallId: 'q', output: 'yes' }],
    };
    const opts = normalizeOptions(resumeOptions as never);
    host = new RunHost(opts, 'pure-1', (event) => events.push(event), stored);
    const pending = stored.pendingApprovals[0]!;
    const result = await host.resume(stored, (open) => {
      const answers: Record<string, object> = {};
      for (const [id, call] of open) {
        if (call.context.toolName === 'pay') answers[id] = { verdict: { approved: true } };
        if (call.context.toolName === 'ask') answers[id] = { clientResult: { output: 'yes', isError: false } };
      }
      return answers;
    });
    expect(result.status).toBe('completed');
    expect(effects).toEqual(['lookup', 'pay']);
    // The leg saved at least its executing receipt, the step and the end; every save was pure.
    expect(checks.length).toBeGreaterThanOrEqual(3);
    expect(checks).toEqual(checks.map(() => ({ same: true, quiet: true, untouched: true })));
    const final = (await inner.load('pure-1'))!;
    expect(final.approvals[pending.approvalId]!.verdict).toEqual({ approved: true });
  });

  it('the approval request is announced once, by the transition that issued it, and goes on to complete', async () => {
    const store = createInMemoryAgentRunStore();
    const effects: string[] = [];
    const events: AgentEvent<unknown>[] = [];
    const stream = streamAgent(options(store, effects));
    for await (const event of stream.events) events.push(event as AgentEvent<unknown>);
    const requests = events.filter((e) => e.type === 'approval-request');
    const clientRequests = events.filter((e) => e.type === 'client-call-request');
    expect(requests).toHaveLength(1);
    expect(clientRequests).toHaveLength(1);
    const stored = (await store.load('pure-1'))!;
    const pending = stored.pendingApprovals[0]!;
    expect(requests[0]).toMatchObject({ approval: { approvalId: pending.approvalId, token: pending.token } });
    const done = await resumeAgent({
      ...options(store, effects, 'resume'),
      approvalResponses: [{ approvalId: pending.approvalId, token: pending.token, approved: true }],
      clientToolResults: [{ toolCallId: 'q', output: 'yes' }],
    } as never);
    expect(done.status).toBe('completed');
    expect(effects).toEqual(['lookup', 'pay']);
    // The verdict is kept with its request in the record.
    const final = (await store.load('pure-1'))!;
    expect(final.approvals[pending.approvalId]!.verdict).toEqual({ approved: true });
  });
});

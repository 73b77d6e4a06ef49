/**
 * The in-memory store copies a save against the run's stored copy and keeps
 * only what changed: what it hands back must still be exactly what JSON
 * would have carried, at every save, whatever the caller did in between.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, type AgentRunEnvelope } from 'cairn/agent';

function envelope(revision: number, context: Record<string, unknown>): AgentRunEnvelope {
  return {
    kind: 'cairn-agent-run', version: 1, runId: 'r', scope: 's', revision, bindingId: null,
    binding: {} as AgentRunEnvelope['binding'], machine: { id: 'm', version: 1 },
    snapshot: { status: 'active', value: 'loop', context } as never,
    receipts: {}, approvalRequestCounts: {}, approvals: {}, status: 'running', pendingApprovals: [], pendingClientCalls: [],
    createdAt: 1, updatedAt: revision,
  };
}

const json = (value: unknown) => JSON.parse(JSON.stringify(value));

describe('in-memory store copies', () => {
  it('keeps what JSON keeps: undefined, functions, NaN, -0, toJSON, class instances, __proto__ keys, null prototypes', async () => {
    class Point { constructor(public x: number) {} }
    const bare = Object.create(null) as Record<string, unknown>;
    bare.k = 1;
    const awkward = JSON.parse('{"__proto__": {"a": 1}, "constructor": 2}');
    const context = {
      a: undefined, f: () => 1, list: [undefined, () => 1, NaN, -0, Infinity, 1.5], when: new Date(5), point: new Point(3),
      awkward, bare, own: { toJSON: () => 'replaced' }, text: 'x',
    };
    const store = createInMemoryAgentRunStore();
    await store.save(envelope(1, context));
    const loaded = await store.load('r');
    expect(JSON.stringify(loaded)).toBe(JSON.stringify(envelope(1, context)));
    expect(loaded).toEqual(json(envelope(1, context)));
    const back = (loaded!.snapshot as { context: { awkward: object } }).context.awkward;
    expect(Object.hasOwn(back, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
  });

  it('sees a change the caller made in place to an object it saved before, at the next save', async () => {
    const messages: Record<string, unknown>[] = [{ role: 'user', content: 'a', meta: { n: 1 } }];
    const context = { messages };
    const store = createInMemoryAgentRunStore();
    await store.save(envelope(1, context));
    messages[0]!.content = 'changed';
    (messages[0]!.meta as { n: number }).n = 2;
    messages.push({ role: 'assistant', content: 'b' });
    await store.save(envelope(2, context));
    expect(await store.load('r')).toEqual(json(envelope(2, context)));
    // Keys dropped, reordered, added; an array shortened.
    messages[0] = { meta: { n: 2 }, content: 'changed', role: 'user' };
    delete messages[1]!.content;
    messages[1]!.extra = [1, 2];
    await store.save(envelope(3, context));
    expect(JSON.stringify(await store.load('r'))).toBe(JSON.stringify(envelope(3, context)));
    messages.length = 1;
    await store.save(envelope(4, context));
    expect(JSON.stringify(await store.load('r'))).toBe(JSON.stringify(envelope(4, context)));
  });

  it('a refused save changes nothing, and a cycle or a BigInt is refused as JSON refuses it', async () => {
    const store = createInMemoryAgentRunStore();
    await store.save(envelope(1, { messages: ['a'] }));
    await expect(store.save(envelope(3, { messages: ['a', 'b'] }))).rejects.toMatchObject({ code: 'revision_conflict' });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await expect(store.save(envelope(2, { cyclic }))).rejects.toThrow(TypeError);
    await expect(store.save(envelope(2, { big: 1n }))).rejects.toThrow(TypeError);
    expect(await store.load('r')).toEqual(json(envelope(1, { messages: ['a'] })));
    await store.save(envelope(2, { messages: ['a', 'b'] }));
    expect(await store.load('r')).toEqual(json(envelope(2, { messages: ['a', 'b'] })));
  });

  it('hands every load a copy of its own, also of parts two saves share', async () => {
    const messages = [{ role: 'user', content: 'a' }];
    const store = createInMemoryAgentRunStore();
    await store.save(envelope(1, { messages }));
    await store.save(envelope(2, { messages: [...messages, { role: 'assistant', content: 'b' }] }));
    const first = await store.load('r');
    const second = await store.load('r');
    const m1 = (first!.snapshot as { context: { messages: { content: string }[] } }).context.messages;
    m1[0]!.content = 'forged';
    expect((second!.snapshot as { context: { messages: { content: string }[] } }).context.messages[0]!.content).toBe('a');
    expect(((await store.load('r'))!.snapshot as { context: { messages: { content: string }[] } }).context.messages[0]!.content).toBe('a');
  });
});

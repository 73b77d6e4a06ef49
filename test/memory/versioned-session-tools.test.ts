/**
 * The session's tools and context source: a write tool commits under the
 * operation id of its call, so the same call run again (same step, same call
 * id) answers its first receipt and applies nothing; memory_recall answers
 * ids, revisions, texts and scores; the context source's hits, and a
 * compiled package's records, carry each record's id and revision.
 */
import { describe, expect, it } from 'vitest';
import { createContextCompiler } from 'cairn/context';
import { createMockModel } from 'cairn/testing';
import { createInMemoryVersionedMemoryStore, createMemorySession, MEMORY_TOOLS } from 'cairn/memory/versioned';
import type { ToolExecuteContext } from 'cairn/agent';

const ADA = { userId: 'ada' };

function setup() {
  const store = createInMemoryVersionedMemoryStore();
  let n = 0;
  const session = createMemorySession({ store, scope: ADA, generateId: () => `m${++n}`, clock: { now: () => 5000 } });
  return { store, session, tools: session.tools({ runId: 'run-1' }) };
}

const ctx = (modelStep: number, toolCallId: string): ToolExecuteContext => ({
  modelStep, toolCallId, messages: [], signal: new AbortController().signal, context: undefined,
});

describe('tools', () => {
  it('a write whose commit landed but whose answer was lost answers the stored receipt; a refusal still fails; onReceipt hears each receipt', async () => {
    const inner = createInMemoryVersionedMemoryStore();
    let loseNext = false;
    const store = {
      ...inner,
      commit: async (input: Parameters<typeof inner.commit>[0]) => {
        const result = await inner.commit(input);
        if (loseNext) {
          loseNext = false;
          throw new Error('connection reset after the commit');
        }
        return result;
      },
    };
    let n = 0;
    const session = createMemorySession({ store, scope: ADA, generateId: () => `m${++n}` });
    const heard: string[] = [];
    const tools = session.tools({ runId: 'run-1', onReceipt: (r) => heard.push(`${r.operationId}@${r.scopeRevision}`) });
    loseNext = true;
    expect(await tools.memory_remember!.execute!({ text: 'Ada prefers tea.' }, ctx(0, 'call-a'))).toEqual({ id: 'm1', revision: 1, scopeRevision: 1, replayed: true });
    expect(await inner.list({ scope: ADA })).toHaveLength(1);
    await expect(tools.memory_revise!.execute!({ id: 'nope', text: 'x' }, ctx(1, 'call-b'))).rejects.toMatchObject({ code: 'memory_record_not_found' });
    // A commit that threw before it landed leaves no receipt: the call fails.
    const failing = createMemorySession({ store: { ...inner, commit: async () => { throw new Error('down'); } }, scope: ADA });
    await expect(failing.tools({ runId: 'run-1' }).memory_remember!.execute!({ text: 'x' }, ctx(2, 'call-c'))).rejects.toThrow('down');
    expect(heard).toEqual(['run-1:memory:0:call-a@1']);
    expect(() => session.tools({ runId: 'run-1', onReceipt: 'no' as never })).toThrow(expect.objectContaining({ code: 'invalid_options' }));
  });

  it('offers the four tools, each replayable, with an object schema', () => {
    const { tools } = setup();
    expect(Object.keys(tools).sort()).toEqual([...MEMORY_TOOLS].sort());
    for (const tool of Object.values(tools)) {
      expect(tool.replay).toBe('idempotent');
      expect(tool.parameters).toMatchObject({ type: 'object', additionalProperties: false });
      expect(typeof tool.description).toBe('string');
    }
  });

  it('a write run again under one call identity answers its first receipt and applies nothing', async () => {
    const { store, session, tools } = setup();
    const first = await tools.memory_remember!.execute!({ text: 'Ada prefers tea.' }, ctx(0, 'call-a'));
    expect(first).toEqual({ id: 'm1', revision: 1, scopeRevision: 1, replayed: false });
    // The crash case: the call runs again with the same step and call id.
    expect(await tools.memory_remember!.execute!({ text: 'Ada prefers tea.' }, ctx(0, 'call-a'))).toEqual({ ...first, replayed: true });
    expect(await store.list({ scope: ADA })).toHaveLength(1);
    expect(await session.receipt(session.operationId({ kind: 'tool', runId: 'run-1', modelStep: 0, toolCallId: 'call-a' })))
      .toMatchObject({ planned: 1, records: [{ id: 'm1', revision: 1, op: 'add' }] });
    expect(await store.get({ scope: ADA, id: 'm1' })).toMatchObject({ origin: 'explicit', operationId: 'run-1:memory:0:call-a' });

    // Another call is another write (the replay above drew id m2 and dropped it: ids are drawn before the store answers).
    expect(await tools.memory_remember!.execute!({ text: 'Ada prefers tea.' }, ctx(1, 'call-a'))).toMatchObject({ id: 'm3', replayed: false });

    const revised = await tools.memory_revise!.execute!({ id: 'm1', text: 'Ada prefers green tea.' }, ctx(2, 'call-b'));
    expect(revised).toEqual({ id: 'm1', revision: 3, scopeRevision: 3, replayed: false });
    expect(await tools.memory_revise!.execute!({ id: 'm1', text: 'Ada prefers green tea.' }, ctx(2, 'call-b'))).toEqual({ ...revised, replayed: true });
    expect(await store.history({ scope: ADA, id: 'm1' })).toHaveLength(2);

    const retracted = await tools.memory_retract!.execute!({ id: 'm3' }, ctx(3, 'call-c'));
    expect(retracted).toEqual({ id: 'm3', revision: 4, scopeRevision: 4, replayed: false });
    expect(await tools.memory_retract!.execute!({ id: 'm3' }, ctx(3, 'call-c'))).toEqual({ ...retracted, replayed: true });
    expect(await store.scopeRevision({ scope: ADA })).toBe(4);
  });

  it('a call identity reused with other arguments is refused (memory_receipt_mismatch), nothing applied', async () => {
    const { store, tools } = setup();
    await tools.memory_remember!.execute!({ text: 'Ada prefers tea.' }, ctx(0, 'call-a'));
    await expect(tools.memory_remember!.execute!({ text: 'Ada prefers coffee.' }, ctx(0, 'call-a'))).rejects.toMatchObject({ code: 'memory_receipt_mismatch' });
    expect(await store.scopeRevision({ scope: ADA })).toBe(1);
  });

  it('two runs of one session do not share operation ids', async () => {
    const { session, store } = setup();
    const other = session.tools({ runId: 'run-2' });
    await session.tools({ runId: 'run-1' }).memory_remember!.execute!({ text: 'Ada prefers tea.' }, ctx(0, 'call-a'));
    expect(await other.memory_remember!.execute!({ text: 'Ada prefers tea.' }, ctx(0, 'call-a'))).toMatchObject({ replayed: false });
    expect(await store.list({ scope: ADA })).toHaveLength(2);
  });

  it('memory_recall answers ids, revisions, texts and scores, best first', async () => {
    const { session, tools } = setup();
    await session.remember({ text: 'Ada prefers tea.' });
    await session.remember({ text: 'Ada lives in Oslo.' });
    await session.remember({ text: 'Ada drinks tea in Oslo.' });
    const hits = await tools.memory_recall!.execute!({ query: 'tea Oslo' }, ctx(0, 'r'));
    expect(hits[0]).toEqual({ id: 'm3', revision: 3, text: 'Ada drinks tea in Oslo.', score: 1 });
    expect(hits).toHaveLength(3);
    expect(await tools.memory_recall!.execute!({ query: 'tea Oslo', limit: 1 }, ctx(0, 'r'))).toHaveLength(1);
  });

  it('tools need a run id', () => {
    const { session } = setup();
    expect(() => session.tools({ runId: '' })).toThrow(/runId/);
  });
});

describe('contextSource', () => {
  it('recalls for the step\'s query, each hit with its record\'s id and revision', async () => {
    const { session } = setup();
    await session.remember({ text: 'Ada prefers tea.' });
    await session.revise({ id: 'm1', text: 'Ada prefers green tea.' });
    await session.remember({ text: 'Ada lives in Oslo.' });
    const source = session.contextSource({ name: 'ada-memory', limit: 5 });
    expect(source.name).toBe('ada-memory');
    const input = { step: 0, phase: 'loop' as const, query: 'tea', messages: [], model: { provider: 'mock', modelId: 'm' }, tools: [], signal: new AbortController().signal };
    expect(await source.retrieve(input)).toEqual([{ text: 'Ada prefers green tea.', index: 0, score: 1, id: 'm1', revision: 2 }]);
    expect(await source.retrieve({ ...input, query: '  ' })).toEqual([]);
    expect(session.contextSource().name).toBe('versioned-memory');
    expect(() => session.contextSource({ limit: 0 })).toThrow(/limit/);
  });

  it('a compiled package records the revisions it holds', async () => {
    const { session } = setup();
    await session.remember({ text: 'Ada prefers tea.' });
    const compiler = createContextCompiler({ sources: [session.contextSource()] });
    const pkg = await compiler.compile({
      step: 0, phase: 'loop', model: createMockModel({ responses: [{ text: 'ok' }] }), tools: [],
      messages: [{ role: 'user', content: 'What do I drink? tea?' }], signal: new AbortController().signal,
    });
    const retrieval = pkg.blocks.find((b) => b.kind === 'retrieval');
    expect(retrieval?.records).toEqual([expect.objectContaining({ id: 'm1', revision: 1, text: 'Ada prefers tea.' })]);
  });
});

describe('tools in a run', () => {
  it('are tools a run takes as they are: the model writes and recalls through them', async () => {
    const { runAgent, createInMemoryAgentRunStore } = await import('cairn/agent');
    const { store, tools } = setup();
    const result = await runAgent({
      session: { store: createInMemoryAgentRunStore(), runId: 'run-1', scope: 'acme' },
      prompt: 'Remember that I prefer tea.',
      tools,
      model: createMockModel({
        responses: [
          { toolCalls: [{ toolName: 'memory_remember', args: { text: 'Ada prefers tea.' }, toolCallId: 'w1' }] },
          { toolCalls: [{ toolName: 'memory_recall', args: { query: 'tea' }, toolCallId: 'r1' }] },
          { text: 'Noted.' },
        ],
      }),
    });
    expect(result.status).toBe('completed');
    expect(await store.get({ scope: ADA, id: 'm1' })).toMatchObject({ text: 'Ada prefers tea.', operationId: 'run-1:memory:0:w1' });
    const toolMessages = result.messages.filter((m) => m.role === 'tool').map((m) => JSON.stringify(m));
    expect(toolMessages[0]).toContain('"replayed":false');
    expect(toolMessages[1]).toContain('Ada prefers tea.');
  });
});

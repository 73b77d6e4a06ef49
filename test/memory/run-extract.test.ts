/**
 * Extraction in a run: only for a completed run, pending in the terminal
 * commit, its size saved before any write, deletions first, every record
 * tagged with the run's and the operation's ids, the run's own turns only,
 * and a memory LLM that answers badly failing the extraction, not the run.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunEnvelope, type AgentRunStore } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { createExecutionContext } from 'cairn/policy';
import { testMemory } from './run-helpers.js';

/** A store that keeps a copy of every envelope it saved. */
function recording(): AgentRunStore & { saved: AgentRunEnvelope[] } {
  const inner = createInMemoryAgentRunStore();
  const saved: AgentRunEnvelope[] = [];
  return Object.assign(Object.create(inner) as AgentRunStore, {
    saved,
    save: async (envelope: AgentRunEnvelope, options?: never) => {
      await inner.save(envelope, options);
      saved.push(JSON.parse(JSON.stringify(envelope)) as AgentRunEnvelope);
    },
    load: inner.load.bind(inner),
  }) as AgentRunStore & { saved: AgentRunEnvelope[] };
}

const answer = {
  schema: { type: 'object', properties: { drink: { type: 'string' } }, required: ['drink'] },
  validate: (v: unknown) => v as { drink: string },
};

describe('memory extraction in a run', () => {
  it('commits the result with the extraction pending, saves the plan size, then writes tagged records and saves the outcome', async () => {
    const memory = testMemory();
    const store = recording();
    const result = await runAgent({ model: createMockModel({ responses: [{ text: 'Noted: tea.' }] }), prompt: 'I prefer tea.', memory, session: { store, runId: 'x1', scope: 't' } });
    expect(result.status).toBe('completed');
    const extractions = store.saved.map((e) => e.memory?.extraction);
    const pending = extractions.findIndex((x) => x?.status === 'pending');
    const planned = extractions.findIndex((x) => x?.status === 'planned');
    expect(store.saved[pending]).toMatchObject({ status: 'completed', version: 2, result: { status: 'completed', text: 'Noted: tea.' } });
    expect(planned).toBe(pending + 1);
    expect(extractions[planned]).toMatchObject({ planned: 1 });
    const last = store.saved.at(-1)!;
    expect(last.memory?.extraction).toEqual({ operationId: extractions[pending]!.operationId, status: 'completed', planned: 1, mutations: 1 });
    const records = await memory.store.list({ scope: { userId: 'ada' } });
    expect(records).toEqual([expect.objectContaining({ text: 'prefers tea', metadata: { cairn: { runId: 'x1', operationId: extractions[pending]!.operationId } } })]);
    // A terminal resume never extracts again and never calls a model.
    const again = await resumeAgent({ model: createMockModel({ responses: [] }), prompt: 'I prefer tea.', memory, session: { store, runId: 'x1', scope: 't' } });
    expect(again.status).toBe('completed');
    expect(memory.asked).toHaveLength(2);
  });

  it('never extracts a run that did not complete', async () => {
    const memory = testMemory();
    const stopped = await runAgent({ model: createMockModel({ responses: [{ text: 'x', finishReason: 'length' }] }), prompt: 'I prefer tea.', memory });
    expect(stopped.status).toBe('stopped');
    const suspended = await runAgent({
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'ask', args: {} }] }] }), prompt: 'I prefer tea.', memory,
      tools: { ask: { parameters: { type: 'object' } } },
    });
    expect(suspended.status).toBe('suspended');
    expect(memory.asked).toEqual([]);
    expect(await memory.store.list({ scope: { userId: 'ada' } })).toEqual([]);
  });

  it('reads the last user input and the run\'s own turns, never the recall, the finalization prompt or repair feedback', async () => {
    const memory = testMemory();
    await memory.store.add({ id: 'old', scope: { userId: 'ada' }, text: 'drinks coffee', at: 1 });
    const result = await runAgent<{ drink: string }>({
      model: createMockModel({ responses: [{ text: 'Looking.' }, { text: 'not json' }, { text: '{"drink":"tea"}' }] }),
      messages: [{ role: 'user', content: 'Earlier question about coffee' }, { role: 'assistant', content: 'Earlier answer.' }, { role: 'user', content: 'I drink tea now.' }],
      output: answer, memory,
    });
    expect(result.status).toBe('completed');
    const source = memory.asked[0]!.user;
    expect(source).toBe('user: I drink tea now.\nassistant: Looking.\nassistant: not json\nassistant: {"drink":"tea"}');
  });

  it('applies deletions first and counts them', async () => {
    const memory = testMemory({
      facts: '{"facts":["drinks tea, not coffee"]}',
      events: '{"memory":[{"event":"ADD","text":"drinks tea"},{"event":"DELETE","id":"old"},{"event":"NONE"}]}',
    });
    await memory.store.add({ id: 'old', scope: { userId: 'ada' }, text: 'drinks coffee', at: 1 });
    const order: string[] = [];
    const { add, delete: del } = memory.store;
    memory.seams.store = { ...memory.store, add: (i) => (order.push('add'), add(i)), delete: (i) => (order.push('delete'), del(i)) };
    const store = recording();
    await runAgent({ model: createMockModel({ responses: [{ text: 'Tea.' }] }), prompt: 'No more coffee for me.', memory, session: { store, runId: 'x2', scope: 't' } });
    expect(order).toEqual(['delete', 'add']);
    expect(store.saved.at(-1)?.memory?.extraction).toMatchObject({ status: 'completed', planned: 2, mutations: 2 });
    expect((await memory.store.list({ scope: { userId: 'ada' } })).map((r) => r.text)).toEqual(['drinks tea']);
  });

  it.each([
    ['malformed JSON', 'not json at all'],
    ['an unknown event', '{"memory":[{"event":"MERGE","text":"x"}]}'],
    ['an UPDATE of a memory it was not shown', '{"memory":[{"event":"UPDATE","id":"nope","text":"x"}]}'],
  ])('a memory LLM that answers %s fails the extraction with memory_llm_invalid; the result is unaffected and nothing is written', async (_name, events) => {
    const memory = testMemory({ events });
    const store = recording();
    const result = await runAgent({ model: createMockModel({ responses: [{ text: 'Noted.' }] }), prompt: 'I prefer tea.', memory, session: { store, runId: 'x3', scope: 't' } });
    expect(result).toMatchObject({ status: 'completed', output: 'Noted.' });
    expect(store.saved.at(-1)?.memory?.extraction).toMatchObject({ status: 'failed', error: { name: 'MemoryError', code: 'memory_llm_invalid' } });
    expect(await memory.store.list({ scope: { userId: 'ada' } })).toEqual([]);
  });

  it('a failed save of the plan writes nothing; the record keeps the extraction pending and the run completes', async () => {
    const memory = testMemory();
    const store = recording();
    const save = store.save;
    let saves = 0;
    store.save = async (e, o) => {
      // The saves: the start, the answer with the run's end, the extraction's plan (fails).
      if (++saves === 3) throw new Error('disk full');
      return save(e, o);
    };
    const result = await runAgent({ model: createMockModel({ responses: [{ text: 'Noted.' }] }), prompt: 'I prefer tea.', memory, session: { store, runId: 'x4', scope: 't' } });
    expect(result.status).toBe('completed');
    expect(await memory.store.list({ scope: { userId: 'ada' } })).toEqual([]);
    expect((await store.load('x4'))?.memory?.extraction?.status).toBe('pending');
  });

  it('extract: false and writePolicy: manual write nothing; sweep: on-extract deletes expired records', async () => {
    for (const off of [{ extract: false }, { writePolicy: 'manual' as const }]) {
      const memory = testMemory(off);
      await runAgent({ model: createMockModel({ responses: [{ text: 'Noted.' }] }), prompt: 'I prefer tea.', memory });
      expect(memory.asked).toEqual([]);
    }
    const memory = testMemory({ sweep: 'on-extract' });
    await memory.store.add({ id: 'expired', scope: { userId: 'ada' }, text: 'old plan', at: 1, expiresAt: 10 });
    await runAgent({ model: createMockModel({ responses: [{ text: 'Noted.' }] }), prompt: 'I prefer tea.', memory });
    expect((await memory.store.list({ scope: { userId: 'ada' } })).map((r) => r.id)).toEqual(['mem-1']);
  });

  it('charges the memory LLM to the run\'s execution context; a budget that refuses it fails the extraction, not the run', async () => {
    const memory = testMemory({ facts: () => ({ text: '{"facts":["prefers tea"]}', usage: { inputTokens: 10, outputTokens: 5 } }) });
    const execution = createExecutionContext({ budget: { tokens: 1_000_000 } });
    const result = await runAgent({ model: createMockModel({ responses: [{ text: 'Noted.' }] }), prompt: 'I prefer tea.', memory, execution });
    expect(result.status).toBe('completed');
    const llm = (await execution.ledger.entries()).filter((e) => e.model === 'memory:llm');
    expect(llm.map((e) => [e.status, e.tokens])).toEqual([['committed', 15], ['unknown', expect.any(Number)]]);
    expect(result.warnings).toEqual([expect.objectContaining({ setting: 'memory', code: 'unaccounted-usage' })]);

    const tight = createExecutionContext({ budget: { tokens: 60 } });
    const poor = testMemory();
    const store = recording();
    const refused = await runAgent({
      model: createMockModel({ responses: [{ text: 'Noted.', usage: { inputTokens: 1, outputTokens: 1 } }] }), prompt: 'I prefer tea.',
      memory: poor, execution: tight, session: { store, runId: 'x5', scope: 't' }, maxOutputTokens: 1,
    });
    expect(refused.status).toBe('completed');
    expect(store.saved.at(-1)?.memory?.extraction).toMatchObject({ status: 'failed', error: { code: 'budget_exceeded' } });
  });

  it('a resume with another memory scope is refused before anything is written', async () => {
    const memory = testMemory();
    const store = recording();
    const options = {
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'publish', args: {} }] }, { text: 'Done.' }] }),
      prompt: 'Publish.', memory, session: { store, runId: 'x6', scope: 't' },
      tools: { publish: { parameters: { type: 'object' as const }, needsApproval: true, execute: () => 'ok' } },
    };
    await runAgent(options);
    const before = store.saved.length;
    const other = await resumeAgent({ ...options, memory: testMemory({ scope: { userId: 'bob' } }) });
    expect(other).toMatchObject({ status: 'failed', error: { code: 'binding_changed', message: 'Native agent binding changed across resume.' } });
    const none = await resumeAgent({ ...options, memory: undefined });
    expect(none).toMatchObject({ status: 'failed', error: { code: 'binding_changed' } });
    expect(store.saved.length).toBe(before);
  });

  it('a run nested on the context of a running run may only narrow its memory scope', async () => {
    const execution = createExecutionContext();
    const outer = testMemory({ scope: { userId: 'ada' }, extract: false });
    const seen: string[] = [];
    const nested = async (scope: Record<string, string>) => {
      const r = await runAgent({ model: createMockModel({ responses: [{ text: 'inner' }] }), prompt: 'x', memory: testMemory({ scope, extract: false }), execution: execution.child() });
      seen.push(r.status === 'failed' ? r.error.code : r.status);
      return 'ok';
    };
    await runAgent({
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'nest', args: {} }] }, { text: 'outer' }] }),
      prompt: 'go', memory: outer, execution,
      tools: { nest: { parameters: { type: 'object' }, execute: async () => (await nested({ userId: 'ada', agentId: 'helper' }), nested({ userId: 'bob' })) } },
    });
    expect(seen).toEqual(['completed', 'memory_scope_invalid']);
  });
});

/** The context compiler on its own: what it asks, what it builds, how it fits a window, and what it refuses. */
import { describe, expect, it } from 'vitest';
import { ContextError, createContextCompiler, createDefaultEstimator, createRagContextSource, type CompileInput } from 'cairn/context';
import type { LanguageModel } from 'cairn/models';

const model = { provider: 'test', modelId: 'm' } as LanguageModel;
const input = (extra: Partial<CompileInput> = {}): CompileInput => ({
  step: 0, phase: 'loop', model, tools: ['t'], messages: [{ role: 'user', content: 'How do I deploy?' }], signal: new AbortController().signal, ...extra,
});
const hits = (...scores: number[]) => scores.map((score, index) => ({ text: `record ${index}`, index, score }));

describe('createContextCompiler', () => {
  it('asks each source in order with the step\'s query, model and tools, and makes the same package of the same answers', async () => {
    const asked: string[] = [];
    const source = (name: string) => createRagContextSource({
      name, retrieve: ({ query, model: m, tools, step }) => {
        asked.push(`${name}:${query}:${m.modelId}:${tools.join()}:${step}`);
        return hits(0.2, 0.9);
      },
    });
    const a = createContextCompiler({ sources: [source('a'), source('b')] });
    const first = await a.compile(input());
    expect(asked).toEqual(['a:How do I deploy?:m:t:0', 'b:How do I deploy?:m:t:0']);
    // Best score first within each source.
    expect(first.blocks.map((b) => [b.source, b.records.map((r) => r.id)])).toEqual([['a', ['a:1', 'a:0']], ['b', ['b:1', 'b:0']]]);
    const again = await createContextCompiler({ sources: [source('a'), source('b')] }).compile(input());
    expect(again.manifest.digest).toBe(first.manifest.digest);
    expect(first.manifest).toMatchObject({ refresh: 'initial', pass: 0, placement: { retrieval: 'appended', workingMemory: 'none', tailKept: false } });
  });

  it('does not append a retrieval the history already holds, and counts its passes', async () => {
    const c = createContextCompiler({ sources: [createRagContextSource({ retrieve: () => hits(1) })] });
    const first = await c.compile(input());
    c.commit(first);
    const second = await c.compile(input({ step: 1 }));
    expect(second.manifest).toMatchObject({ refresh: 'step', pass: 1, placement: { retrieval: 'unchanged' } });
    expect(c.state()).toMatchObject({ passes: 2 });
    const restored = createContextCompiler({ sources: [createRagContextSource({ retrieve: () => hits(1) })] });
    restored.restore(c.state());
    expect(restored.state()).toEqual(c.state());
  });

  it('keeps at most maxRecordsPerSource records, and drops the lowest scores (the last on ties) to fit the window', async () => {
    const c = createContextCompiler({
      sources: [createRagContextSource({ retrieve: () => hits(0.5, 0.9, 0.5, 0.1) })], maxRecordsPerSource: 3,
      window: 30, estimator: { estimate: (t) => Math.ceil(t.length / 4) },
    });
    const pkg = await c.compile(input());
    expect(pkg.manifest.overflow!.droppedIds[0]).toBe('rag:2');
    expect(pkg.blocks[0]!.records.map((r) => r.id)).toEqual(['rag:1', 'rag:0'].slice(0, pkg.blocks[0]!.records.length));
    expect(pkg.manifest.tokens.estimated).toBeLessThanOrEqual(30);
    await expect(createContextCompiler({ window: 3 }).compile(input())).rejects.toMatchObject({ code: 'context_overflow' });
    await expect(createContextCompiler({ window: 3 }).compile(input())).rejects.toBeInstanceOf(ContextError);
  });

  it('warns about a source that throws or answers no text, and goes on', async () => {
    const c = createContextCompiler({
      sources: [
        createRagContextSource({ name: 'x', retrieve: () => { throw new Error('down'); } }),
        createRagContextSource({ name: 'y', retrieve: () => 'nope' as never }),
        createRagContextSource({ name: 'z', retrieve: () => [{ text: 'ok', index: 0 }, { index: 1 } as never] }),
      ],
    });
    const pkg = await c.compile(input());
    expect(pkg.manifest.warnings!.map((w) => w.source)).toEqual(['x', 'y', 'z']);
    expect(pkg.blocks.map((b) => b.source)).toEqual(['z']);
  });

  it('puts the working memory last, and keeps it for Claude 5.x', async () => {
    const pkg = await createContextCompiler().compile(input({ workingMemory: 'Goal: G' }));
    expect(pkg.manifest.placement).toEqual({ retrieval: 'none', workingMemory: 'tail', tailKept: false });
    for (const [modelId, kept] of [['claude-sonnet-5', true], ['claude-opus-5-20270101', true], ['claude-sonnet-4-5', false], ['claude-3-5-sonnet', false]] as const) {
      const claude = await createContextCompiler().compile(input({ workingMemory: 'G', model: { provider: 'anthropic', modelId } as LanguageModel }));
      expect(claude.manifest.placement.tailKept, modelId).toBe(kept);
    }
  });

  it('refuses bad options', () => {
    const rag = createRagContextSource({ retrieve: () => [] });
    expect(() => createContextCompiler({ sources: [rag, rag] })).toThrow(/two sources are named "rag"/);
    expect(() => createContextCompiler({ sources: [createRagContextSource({ name: 'working-memory', retrieve: () => [] })] })).toThrow(/working memory/);
    expect(() => createContextCompiler({ window: -1 })).toThrow(/window/);
    expect(() => createContextCompiler({ sources: [{}] as never })).toThrow(/source/);
    expect(() => createRagContextSource({} as never)).toThrow(/retrieve/);
  });
});

describe('the default estimator', () => {
  it('moves its ratio toward what the provider counted', () => {
    const e = createDefaultEstimator();
    expect(e.estimate('x'.repeat(400))).toBe(100);
    e.calibrate({ estimatedTokens: 100, inputTokens: 200, cacheReadTokens: 150, cacheWriteTokens: 0 });
    expect(e.ratio).toBeCloseTo(1 + 1 / 3);
    e.calibrate({ estimatedTokens: 0, inputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 });
    expect(e.ratio).toBeCloseTo(1 + 1 / 3);
  });
});

/**
 * Rule 6: structured output (json and tool strategies, repair) and
 * verification (verified, rejected, inconclusive, thrown, aborted), and the
 * step limit.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { runAgent, streamAgent, type AgentTool, type OutputSpec, type VerifyInput } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { collect, countingTool, fixedDeps, standardSchema } from './helpers.js';

type Answer = { answer: number };
const answerSchema = {
  type: 'object',
  properties: { answer: { type: 'number' } },
  required: ['answer'],
  additionalProperties: false,
};
const validateAnswer = (value: unknown): Answer => {
  if (value === null || typeof value !== 'object' || typeof (value as { answer?: unknown }).answer !== 'number') {
    throw new Error('Expected a numeric answer.');
  }
  return { answer: (value as Answer).answer };
};
const jsonOutput: OutputSpec<Answer> = { mode: 'json', schema: answerSchema, validate: validateAnswer };

const lastMessage = (request: { messages: readonly unknown[] } | undefined) =>
  request?.messages.at(-1) as { role: string; content: string } | undefined;

describe('structured output', () => {
  it('with tools: a separate finalization request offers the loop’s tools with toolChoice none and a responseFormat', async () => {
    const lookup = countingTool('42 is the answer', { description: 'Look the answer up.' });
    const model = createMockModel({
      responses: [
        { toolCalls: [{ toolName: 'lookup', args: {} }] },
        { text: 'I know the answer now.' },
        { text: '{"answer":42}' },
      ],
    });
    const result = await runAgent<Answer>({ model, prompt: 'Find the answer.', tools: { lookup }, output: jsonOutput, deps: fixedDeps() });
    expect(result.status).toBe('completed');
    if (result.status !== 'completed') return;
    expect(result.output).toEqual({ answer: 42 });
    expect(result.steps).toBe(3);
    expect(model.calls).toHaveLength(3);
    for (const loop of model.calls.slice(0, 2)) {
      expect(loop.toolChoice).toBe('auto');
      expect(loop.responseFormat).toBeUndefined();
    }
    const final = model.calls[2]!;
    expect(final.toolChoice).toBe('none');
    expect(final.tools).toEqual(model.calls[0]!.tools);
    expect(final.tools.map((t) => t.name)).toEqual(['lookup']);
    expect(final.responseFormat).toEqual({ type: 'json', schema: answerSchema });
    // One more turn of the same conversation, ending with a user turn.
    expect(final.messages.slice(0, model.calls[1]!.messages.length + 1)).toEqual([
      ...model.calls[1]!.messages,
      { role: 'assistant', content: 'I know the answer now.' },
    ]);
    expect(lastMessage(final)?.role).toBe('user');
  });

  it('without tools: the first request is the finalization request', async () => {
    const model = createMockModel({ responses: [{ text: '{"answer":7}' }] });
    const result = await runAgent<Answer>({ model, prompt: 'Answer.', output: jsonOutput, deps: fixedDeps() });
    expect(result.status).toBe('completed');
    if (result.status === 'completed') expect(result.output).toEqual({ answer: 7 });
    expect(model.calls).toHaveLength(1);
    expect(model.calls[0]!.toolChoice).toBe('none');
    expect(model.calls[0]!.responseFormat).toEqual({ type: 'json', schema: answerSchema });
    expect(model.calls[0]!.messages).toEqual([{ role: 'user', content: 'Answer.' }]);
  });

  it("tool mode forces 'json_output' and sends only that tool", async () => {
    const lookup = countingTool('x');
    const model = createMockModel({
      responses: [
        { text: 'Ready to answer.' },
        { toolCalls: [{ toolName: 'json_output', args: { answer: 5 } }] },
      ],
    });
    const result = await runAgent<Answer>({
      model, prompt: 'Answer.', tools: { lookup }, output: { ...jsonOutput, mode: 'tool' }, deps: fixedDeps(),
    });
    expect(result.status).toBe('completed');
    if (result.status === 'completed') expect(result.output).toEqual({ answer: 5 });
    const final = model.calls[1]!;
    expect(final.toolChoice).toEqual({ toolName: 'json_output' });
    expect(final.tools.map((t) => t.name)).toEqual(['json_output']);
    expect(final.tools[0]!.parameters).toEqual(answerSchema);
    expect(lookup.runs).toHaveLength(0);
  });

  it('tool mode forces output.name when it is set', async () => {
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'submit_answer', args: { answer: 9 } }] }] });
    const result = await runAgent<Answer>({
      model, prompt: 'Answer.', output: { ...jsonOutput, mode: 'tool', name: 'submit_answer' }, deps: fixedDeps(),
    });
    expect(result.status).toBe('completed');
    if (result.status === 'completed') expect(result.output).toEqual({ answer: 9 });
    expect(model.calls).toHaveLength(1);
    expect(model.calls[0]!.toolChoice).toEqual({ toolName: 'submit_answer' });
    expect(model.calls[0]!.tools.map((t) => t.name)).toEqual(['submit_answer']);
  });

  it('asks for a repair after invalid JSON and accepts a valid second attempt', async () => {
    const model = createMockModel({ responses: [{ text: 'The answer is 3.' }, { text: '{"answer":3}' }] });
    const result = await runAgent<Answer>({ model, prompt: 'Answer.', output: jsonOutput, maxOutputAttempts: 2, deps: fixedDeps() });
    expect(result.status).toBe('completed');
    if (result.status === 'completed') expect(result.output).toEqual({ answer: 3 });
    expect(model.calls).toHaveLength(2);
    const repair = lastMessage(model.calls[1]);
    expect(repair?.role).toBe('user');
    expect(repair?.content).toContain('not valid JSON');
    expect(model.calls[1]!.messages.at(-2)).toEqual({ role: 'assistant', content: 'The answer is 3.' });
  });

  it("stops with 'output-attempts-exhausted' after maxOutputAttempts invalid answers", async () => {
    const model = createMockModel({ responses: [{ text: 'nope' }, { text: '{"answer":"three"}' }, { text: '{"answer":3}' }] });
    const result = await runAgent<Answer>({ model, prompt: 'Answer.', output: jsonOutput, maxOutputAttempts: 2, deps: fixedDeps() });
    expect(result.status).toBe('stopped');
    if (result.status === 'stopped') expect(result.reason).toBe('output-attempts-exhausted');
    expect(model.calls).toHaveLength(2);
    expect(model.remaining()).toBe(1);
    expect(result).not.toHaveProperty('output');
  });

  it('validates with a Standard Schema value as output.schema by itself', async () => {
    const schema = standardSchema<{ n: number }>((v) => {
      const n = (v as { n?: unknown })?.n;
      return typeof n === 'number' ? { value: { n: n * 10 } } : { issues: [{ message: 'n must be a number' }] };
    });
    const model = createMockModel({ responses: [{ text: '{"n":"one"}' }, { text: '{"n":1}' }] });
    const result = await runAgent({ model, prompt: 'Answer.', output: { schema }, deps: fixedDeps() });
    expect(result.status).toBe('completed');
    if (result.status !== 'completed') return;
    expectTypeOf(result.output).toEqualTypeOf<{ n: number }>();
    expect(result.output).toEqual({ n: 10 });
    expect(lastMessage(model.calls[1])?.content).toContain('n must be a number');
  });

  it('streams drafts of the output through partialOutputStream, and types result.output', async () => {
    const text = '{"items":[1,2,3],"done":true}';
    const model = createMockModel({ responses: [{ text, chunks: ['{"items":[1', ',2,', '3],"do', 'ne":true}'] }] });
    const stream = streamAgent<{ items: number[]; done: boolean }>({
      model,
      prompt: 'List.',
      output: { schema: { type: 'object' }, validate: (v) => v as { items: number[]; done: boolean } },
      deps: fixedDeps(),
    });
    const drafts = await collect(stream.partialOutputStream);
    const result = await stream.result;
    expect(drafts.length).toBeGreaterThan(1);
    expect(drafts.at(-1)).toEqual({ items: [1, 2, 3], done: true });
    expect(drafts[0]).not.toEqual(drafts.at(-1));
    expect(result.status).toBe('completed');
    if (result.status !== 'completed') return;
    expectTypeOf(result.output).toEqualTypeOf<{ items: number[]; done: boolean }>();
    expect(result.output.items).toEqual([1, 2, 3]);
  });
});

describe('verification', () => {
  const run = (verify: (input: VerifyInput<Answer>) => ReturnType<NonNullable<Parameters<typeof runAgent<Answer>>[0]['verify']>>,
    texts: string[], extra: { maxVerifyAttempts?: number; abortSignal?: AbortSignal } = {}) => {
    const model = createMockModel({ responses: texts.map((text) => ({ text })) });
    const calls: Array<{ output: Answer; attempt: number; text: string }> = [];
    const promise = runAgent<Answer>({
      model,
      prompt: 'Answer.',
      output: jsonOutput,
      verify: (input) => {
        calls.push({ output: input.output, attempt: input.attempt, text: input.text });
        return verify(input);
      },
      deps: fixedDeps(),
      ...extra,
    });
    return { model, calls, promise };
  };

  it('accepts a verified candidate', async () => {
    const { promise, calls } = run(() => ({ status: 'verified' }), ['{"answer":42}']);
    const result = await promise;
    expect(result.status).toBe('completed');
    if (result.status === 'completed') expect(result.output).toEqual({ answer: 42 });
    expect(calls).toEqual([{ output: { answer: 42 }, attempt: 1, text: '{"answer":42}' }]);
  });

  it('sends a rejection’s feedback to the model and verifies the new candidate', async () => {
    const { promise, calls, model } = run(
      ({ output }) => (output.answer === 42 ? { status: 'verified' } : { status: 'rejected', feedback: 'Recheck the sum.' }),
      ['{"answer":41}', '{"answer":42}'],
    );
    const result = await promise;
    expect(result.status).toBe('completed');
    if (result.status === 'completed') expect(result.output).toEqual({ answer: 42 });
    expect(calls.map((c) => [c.output.answer, c.attempt])).toEqual([[41, 1], [42, 2]]);
    expect(model.calls).toHaveLength(2);
    const feedback = lastMessage(model.calls[1]);
    expect(feedback?.role).toBe('user');
    expect(feedback?.content).toContain('Recheck the sum.');
  });

  it("stops with 'verification-attempts-exhausted' after maxVerifyAttempts rejections", async () => {
    const { promise, calls, model } = run(() => ({ status: 'rejected', feedback: 'Wrong.' }),
      ['{"answer":1}', '{"answer":2}', '{"answer":3}'], { maxVerifyAttempts: 2 });
    const result = await promise;
    expect(result.status).toBe('stopped');
    if (result.status === 'stopped') expect(result.reason).toBe('verification-attempts-exhausted');
    expect(calls).toHaveLength(2);
    expect(model.calls).toHaveLength(2);
    expect(result).not.toHaveProperty('output');
  });

  it("stops with 'verification-inconclusive' on an inconclusive verdict, without another candidate", async () => {
    const { promise, calls, model } = run(() => ({ status: 'inconclusive', reason: 'Cannot tell.' }), ['{"answer":1}', '{"answer":2}']);
    const result = await promise;
    expect(result.status).toBe('stopped');
    if (result.status === 'stopped') expect(result.reason).toBe('verification-inconclusive');
    expect(calls).toHaveLength(1);
    expect(model.calls).toHaveLength(1);
  });

  it("treats a throwing verifier as inconclusive", async () => {
    const { promise, calls, model } = run(() => {
      throw new Error('checker offline');
    }, ['{"answer":1}', '{"answer":2}']);
    const result = await promise;
    expect(result.status).toBe('stopped');
    if (result.status === 'stopped') expect(result.reason).toBe('verification-inconclusive');
    expect(calls).toHaveLength(1);
    expect(model.calls).toHaveLength(1);
  });

  it("stops with 'aborted' when the verifier throws after the run was cancelled", async () => {
    const controller = new AbortController();
    const { promise, model } = run(() => {
      controller.abort();
      throw new Error('cancelled');
    }, ['{"answer":1}', '{"answer":2}'], { abortSignal: controller.signal });
    const result = await promise;
    expect(result.status).toBe('stopped');
    if (result.status === 'stopped') expect(result.reason).toBe('aborted');
    expect(model.calls).toHaveLength(1);
  });

  it("lets a cancellation outrank a verified verdict", async () => {
    const controller = new AbortController();
    const { promise } = run(() => {
      controller.abort();
      return { status: 'verified' };
    }, ['{"answer":1}'], { abortSignal: controller.signal });
    const result = await promise;
    expect(result.status).toBe('stopped');
    if (result.status === 'stopped') expect(result.reason).toBe('aborted');
  });
});

describe('the step limit', () => {
  it("stops with 'max-steps' when maxSteps model turns are used", async () => {
    const lookup: AgentTool & { runs: unknown[] } = countingTool('again');
    const model = createMockModel({
      responses: [
        { toolCalls: [{ toolName: 'lookup', args: { n: 1 } }] },
        { toolCalls: [{ toolName: 'lookup', args: { n: 2 } }] },
        { toolCalls: [{ toolName: 'lookup', args: { n: 3 } }] },
      ],
    });
    const result = await runAgent({ model, prompt: 'Loop.', tools: { lookup }, maxSteps: 2, deps: fixedDeps() });
    expect(result.status).toBe('stopped');
    if (result.status === 'stopped') expect(result.reason).toBe('max-steps');
    expect(result.steps).toBe(2);
    expect(model.calls).toHaveLength(2);
    expect(lookup.runs).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('counts finalization turns toward maxSteps', async () => {
    const model = createMockModel({ responses: [{ text: 'bad' }, { text: 'bad again' }, { text: '{"answer":1}' }] });
    const result = await runAgent<Answer>({ model, prompt: 'Answer.', output: jsonOutput, maxSteps: 2, maxOutputAttempts: 5, deps: fixedDeps() });
    expect(result.status).toBe('stopped');
    if (result.status === 'stopped') expect(result.reason).toBe('max-steps');
    expect(model.calls).toHaveLength(2);
  });
});

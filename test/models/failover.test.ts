/**
 * Model fail-over inside a run (000, "Model fail-over"): which errors fail a
 * call over and which never do, the failed model skipped for the rest of the
 * run and after a resume, the record in AgentRunEnvelope.models, the warning
 * part, fallbackModels in the binding; and reasoning parts that go back to the
 * model byte for byte on every later step and after a resume.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, resumeAgent, runAgent, streamAgent, type AgentEvent, type AgentOptions, type LanguageModel,
} from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createInMemoryBreakerStore } from 'cairn/models';
import { createMockModel, type MockTurn } from 'cairn/testing';

const sleep = async () => undefined;
const mock = (modelId: string, responses: MockTurn[]) => createMockModel({ modelId, responses });
const down = { error: { status: 503, message: 'unavailable' } };

async function events<T>(stream: ReturnType<typeof streamAgent<T>>): Promise<AgentEvent<T>[]> {
  const out: AgentEvent<T>[] = [];
  for await (const event of stream.events) out.push(event);
  return out;
}

describe('which failures fail over', () => {
  it.each([
    ['a 503', down],
    ['a 500', { error: { status: 500 } }],
    ['a 529', { error: { status: 529 } }],
    ['a 429 after the call\'s own retries', { error: { status: 429 } }],
    ['a network error', { error: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) }],
    ['a transport timeout', { error: new DOMException('timed out', 'TimeoutError') }],
  ])('%s before the first content', async (_name, failure) => {
    const primary = createMockModel({ modelId: 'primary', strict: false, responses: [failure as MockTurn] });
    const fallback = mock('fallback', [{ text: 'Answered by the fallback.' }]);
    const result = await runAgent({ model: primary, fallbackModels: [fallback], prompt: 'Hello?', deps: { sleep } });
    expect(result.status === 'completed' && result.output).toBe('Answered by the fallback.');
    expect(result.steps).toBe(1);
    expect(primary.calls).toHaveLength(3); // the first attempt and its two retries
  });

  it('an open breaker fails over at once, without a call to the broken model', async () => {
    const breakerStore = createInMemoryBreakerStore();
    await breakerStore.set('mock:primary', { failures: 5, cooldownUntil: Date.now() + 60_000 });
    const primary = mock('primary', [{ text: 'never' }]);
    const fallback = mock('fallback', [{ text: 'ok' }]);
    const result = await runAgent({ model: primary, fallbackModels: [fallback], prompt: 'Hi.', deps: { breakerStore } });
    expect(result.status).toBe('completed');
    expect(primary.calls).toHaveLength(0);
  });

  it.each([
    ['a 400', { error: { status: 400, message: 'bad request' } }],
    ['a 401', { error: { status: 401, message: 'bad key' } }],
    ['a 404 (unknown model)', { error: { status: 404, message: 'no such model' } }],
  ])('never %s', async (_name, failure) => {
    const primary = mock('primary', [failure as MockTurn]);
    const fallback = mock('fallback', [{ text: 'never' }]);
    const result = await runAgent({ model: primary, fallbackModels: [fallback], prompt: 'Hi.', deps: { sleep } });
    expect(result.status).toBe('failed');
    expect(fallback.calls).toHaveLength(0);
  });

  it('never a refusal: the run stops with reason refusal', async () => {
    const primary = mock('primary', [{ text: 'No.', finishReason: 'refusal' }]);
    const fallback = mock('fallback', [{ text: 'never' }]);
    const result = await runAgent({ model: primary, fallbackModels: [fallback], prompt: 'Hi.' });
    expect(result.status === 'stopped' && result.reason).toBe('refusal');
    expect(fallback.calls).toHaveLength(0);
  });

  it('never an error after the call produced content', async () => {
    const primary = mock('primary', [{ text: 'Partial answer here', streamError: { afterChunks: 1, error: { status: 503 } } }]);
    const fallback = mock('fallback', [{ text: 'never' }]);
    const result = await streamAgent({ model: primary, fallbackModels: [fallback], prompt: 'Hi.', deps: { sleep } }).result;
    expect(result.status === 'failed' && result.retry?.cause).toBeDefined();
    expect(fallback.calls).toHaveLength(0);
  });

  it('never an abort', async () => {
    const controller = new AbortController();
    const primary = mock('primary', [{ text: 'slow', delayMs: 5_000 }]);
    const fallback = mock('fallback', [{ text: 'never' }]);
    setTimeout(() => controller.abort(), 30);
    const result = await runAgent({ model: primary, fallbackModels: [fallback], prompt: 'Hi.', abortSignal: controller.signal });
    expect(result.status === 'stopped' && result.reason).toBe('aborted');
    expect(fallback.calls).toHaveLength(0);
  });

  it('never an elapsed deadline', async () => {
    let now = 1_000;
    const primary: LanguageModel = {
      specificationVersion: 'cairn-model-1', provider: 'mock', modelId: 'primary',
      doGenerate: async () => {
        now = 10_000;
        throw Object.assign(new Error('unavailable'), { statusCode: 503 });
      },
    };
    const fallback = mock('fallback', [{ text: 'never' }]);
    const result = await runAgent({ model: primary, fallbackModels: [fallback], prompt: 'Hi.', deadline: 5_000, deps: { clock: { now: () => now } } });
    expect(result.status === 'failed' && result.error.code).toBe('deadline_exceeded');
    expect(fallback.calls).toHaveLength(0);
  });

  it('when every candidate fails, the run fails with retry, and retryFailed goes on', async () => {
    const store = createInMemoryAgentRunStore();
    const session = { store, runId: 'all-down', scope: 's' };
    const primary = mock('primary', [down, { text: 'Back.' }]);
    const fallback = mock('fallback', [down]);
    const options = { model: primary, fallbackModels: [fallback], prompt: 'Hi.', maxRetries: 0, session, deps: { sleep } };
    const first = await runAgent(options);
    expect(first.status === 'failed' && first.retry).toEqual({ cause: 'provider-error', phase: 'loop' });
    const retried = await resumeAgent({ ...options, retryFailed: true });
    expect(retried.status === 'completed' && retried.output).toBe('Back.');
  });
});

describe('the record of a fail-over', () => {
  const approvalTool = {
    deploy: { description: 'Deploy.', parameters: { type: 'object' as const, properties: {} }, needsApproval: true, execute: () => 'deployed' },
  };

  it('records it in envelope.models, warns in place of the error, and skips the failed model for the rest of the run and after a resume', async () => {
    const store = createInMemoryAgentRunStore();
    const session = { store, runId: 'fo-1', scope: 's' };
    const primary = mock('primary', [down]);
    const fallback = mock('fallback', [
      { toolCalls: [{ toolName: 'deploy', args: {} }] },
      { text: 'Deployed.' },
    ]);
    const options: AgentOptions & { session: typeof session } = { model: primary, fallbackModels: [fallback], tools: approvalTool, prompt: 'Deploy.', maxRetries: 0, session, deps: { clock: { now: () => 7 } } };
    const stream = streamAgent(options);
    const seen = await events(stream);
    const first = await stream.result;
    expect(first.status).toBe('suspended');
    const warning = seen.find((e) => e.type === 'warning');
    expect(warning).toMatchObject({ type: 'warning', setting: 'fallbackModels' });
    expect(seen.some((e) => e.type === 'error')).toBe(false);
    const stored = await store.load('fo-1');
    expect(stored!.models).toEqual({
      policy: 1,
      selected: { provider: 'mock', modelId: 'fallback' },
      failovers: [{
        attempt: 1,
        failed: { provider: 'mock', modelId: 'primary' },
        next: { provider: 'mock', modelId: 'fallback' },
        modelStep: 0,
        phase: 'loop',
        error: { name: 'ModelCallError', code: 'model_call_failed', message: 'unavailable', cause: 'provider-error' },
      }],
    });
    expect(stored!.binding.fallback).toBe('mock:fallback');

    if (first.status !== 'suspended') return;
    const approvalResponses = first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));
    const done = await resumeAgent({ ...options, approvalResponses });
    expect(done.status === 'completed' && done.output).toBe('Deployed.');
    // The primary was asked once, at step 0; the resume's step went straight to the fallback.
    expect(primary.calls).toHaveLength(1);
    expect(fallback.calls).toHaveLength(2);
    expect((await store.load('fo-1'))!.models!.selected.modelId).toBe('fallback');
  });

  it('a run with fallbacks that never failed over records the primary as selected', async () => {
    const store = createInMemoryAgentRunStore();
    const result = await runAgent({
      model: mock('primary', [{ text: 'ok' }]), fallbackModels: [mock('fallback', [])], prompt: 'Hi.', session: { store, runId: 'r', scope: 's' },
    });
    expect(result.status).toBe('completed');
    expect((await store.load('r'))!.models).toEqual({ policy: 1, selected: { provider: 'mock', modelId: 'primary' }, failovers: [] });
  });

  it('a resume with other fallbackModels (or none) is a binding change, and writes nothing', async () => {
    const store = createInMemoryAgentRunStore();
    const session = { store, runId: 'b', scope: 's' };
    const options = { model: mock('primary', [{ toolCalls: [{ toolName: 'deploy', args: {} }] }]), fallbackModels: [mock('fallback', [])], tools: approvalTool, prompt: 'Deploy.', session };
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    const before = await store.load('b');
    for (const fallbackModels of [[mock('other', [])], undefined]) {
      const again = await resumeAgent({ ...options, fallbackModels });
      expect(again.status === 'failed' && again.error.message).toBe('Native agent binding changed across resume.');
    }
    expect(await store.load('b')).toEqual(before);
  });

  it('a failed finalization call fails over without using up a repair attempt', async () => {
    const primary = mock('primary', [down]);
    const fallback = mock('fallback', [{ text: '{"answer":42}' }]);
    const stream = streamAgent({
      model: primary, fallbackModels: [fallback], prompt: 'Answer.', maxRetries: 0, maxOutputAttempts: 1,
      output: { schema: { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'] }, validate: (v) => v as { answer: number } },
    });
    const seen = await events(stream);
    const result = await stream.result;
    expect(result.status === 'completed' && result.output).toEqual({ answer: 42 });
    expect(seen.filter((e) => e.type === 'output-attempt')).toEqual([{ type: 'output-attempt', attempt: 1, valid: true }]);
  });
});

describe('reasoning goes back to the model byte for byte', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-reasoning-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('on every later step and after a resume from a SQLite store', async () => {
    const thinking = { type: 'reasoning' as const, text: 'The user wants a deploy; check first.', providerMetadata: { anthropic: { signature: 'EqQBCkYIBxgCKkD+/sig==' } } };
    const callMeta = { google: { thoughtSignature: 'CiQB0e2Kb+7XyZ==' } };
    const script = (): MockTurn[] => [
      { reasoning: [thinking], toolCalls: [{ toolName: 'deploy', args: { env: 'eu' }, toolCallId: 'call-1' }] },
      { text: 'Deployed.' },
    ];
    // The mock has no way to attach call metadata: wrap its answer.
    const withCallMeta = (inner: ReturnType<typeof createMockModel>): LanguageModel => ({
      ...inner,
      doGenerate: async (request) => {
        const response = await inner.doGenerate(request);
        return { ...response, toolCalls: response.toolCalls.map((c) => ({ ...c, providerMetadata: callMeta })) };
      },
      doStream: undefined,
    });
    const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
    const session = { store: ops.agentRuns, runId: 'think', scope: 's' };
    const firstModel = createMockModel({ modelId: 'claude', responses: script().slice(0, 1) });
    const tools = { deploy: { parameters: { type: 'object' as const }, needsApproval: true, execute: () => 'ok' } };
    const first = await runAgent({ model: withCallMeta(firstModel), tools, prompt: 'Deploy.', session });
    expect(first.status).toBe('suspended');
    if (first.status !== 'suspended') return;
    const secondModel = createMockModel({ modelId: 'claude', responses: script().slice(1) });
    const done = await resumeAgent({
      model: withCallMeta(secondModel), tools, prompt: 'Deploy.', session,
      approvalResponses: [{ approvalId: first.pendingApprovals[0]!.approvalId, token: first.pendingApprovals[0]!.token, approved: true }],
    });
    expect(done.status).toBe('completed');
    const assistant = secondModel.calls[0]!.messages.find((m) => m.role === 'assistant');
    expect(assistant).toEqual({
      role: 'assistant',
      content: '',
      toolCalls: [{ toolCallId: 'call-1', toolName: 'deploy', args: { env: 'eu' }, providerMetadata: callMeta }],
      reasoning: [thinking],
    });
    expect(JSON.stringify((assistant as { reasoning: unknown }).reasoning)).toBe(JSON.stringify([thinking]));
    ops.close?.();
  });
});

describe('a run that failed over is priced per model', () => {
  it('keeps usage by the model that answered, and the headless report charges each at its own price', async () => {
    const { runHeadless } = await import('cairn/headless');
    const primary = mock('primary', [{ toolCalls: [{ toolName: 'look', args: {} }], usage: { inputTokens: 1_000_000, outputTokens: 0, totalTokens: 1_000_000 } }, down]);
    const fallback = mock('fallback', [{ text: 'Done.', usage: { inputTokens: 2_000_000, outputTokens: 0, totalTokens: 2_000_000 } }]);
    const prices: Record<string, number> = { 'mock:primary': 1, 'mock:fallback': 10 };
    const report = await runHeadless({
      model: primary, fallbackModels: [fallback], prompt: 'Go.', maxRetries: 0, store: createInMemoryAgentRunStore(),
      tools: { look: { parameters: { type: 'object' }, execute: () => 'seen' } },
      deps: { priceProvider: ({ provider, modelId, usage }) => (usage.inputTokens / 1_000_000) * (prices[`${provider}:${modelId}`] ?? NaN) },
    });
    expect(report.outcome).toBe('completed');
    // 1M tokens at $1 by the primary, 2M at $10 by the fallback.
    expect(report.cost).toEqual({ usd: 21, complete: true });
  });

  it('a run answered by one model carries no usageByModel', async () => {
    const result = await runAgent({ model: mock('only', [{ text: 'ok' }]), prompt: 'Hi.' });
    expect('usageByModel' in result).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const clock = { now: () => 5_000 };

describe('retryFailed', () => {
  it('the spec example: a run that failed on a 503 goes on from its last checkpoint', async () => {
    const store = createInMemoryAgentRunStore();
    const options = {
      model: createMockModel({ responses: [{ error: { status: 503, message: 'unavailable' } }, { text: 'Summary ready.' }] }),
      // The call's own retries would answer it at once; this run fails on the first 503.
      maxRetries: 0,
      prompt: 'Summarize ticket 9.',
      session: { store, runId: 'ticket-9', scope: 'tenant-a' },
      deps: { clock },
    };
    const first = await runAgent(options);
    expect(first.status).toBe('failed');
    const stored = await store.load('ticket-9');
    expect(stored?.status).toBe('failed');
    expect(stored?.retry).toMatchObject({ cause: 'provider-error', phase: 'loop' });
    // Without retryFailed a failed run answers with what it stored.
    const plain = await resumeAgent(options);
    expect(plain.status).toBe('failed');
    expect(options.model.calls).toHaveLength(1);
    const retried = await resumeAgent({ ...options, retryFailed: true });
    expect(retried.status).toBe('completed');
    expect(retried.text).toBe('Summary ready.');
    // The failed call stays counted as a model step.
    expect(retried.steps).toBe(2);
    expect(options.model.calls).toHaveLength(2);
  });

  it('a stream that broke off is transient; the tool that ran before it never runs again', async () => {
    const store = createInMemoryAgentRunStore();
    let charged = 0;
    const options = {
      model: createMockModel({ responses: [
        { toolCalls: [{ toolName: 'charge', args: {} }] },
        { text: 'Charged the ord', streamError: { afterChunks: 1, error: new Error('socket hang up') } },
        { text: 'Charged the order.' },
      ] }),
      prompt: 'Charge it.',
      session: { store, runId: 'r1', scope: 's' },
      deps: { clock },
      tools: { charge: { parameters: { type: 'object' as const }, execute: () => ++charged } },
    };
    const first = await runAgent(options);
    expect(first.status).toBe('failed');
    expect((await store.load('r1'))?.retry?.cause).toBe('stream-broke');
    const retried = await resumeAgent({ ...options, retryFailed: true });
    expect(retried.status).toBe('completed');
    expect(retried.text).toBe('Charged the order.');
    expect(charged).toBe(1);
  });

  it('a failure that is not transient is refused with a TypeError and nothing is written', async () => {
    const store = createInMemoryAgentRunStore();
    const options = {
      model: createMockModel({ responses: [{ error: { status: 400, message: 'bad request' } }] }),
      prompt: 'x',
      session: { store, runId: 'r2', scope: 's' },
      deps: { clock },
    };
    expect((await runAgent(options)).status).toBe('failed');
    const before = JSON.stringify(await store.load('r2'));
    expect((await store.load('r2'))?.retry).toBeUndefined();
    const retried = await resumeAgent({ ...options, retryFailed: true });
    expect(retried.status).toBe('failed');
    if (retried.status === 'failed') expect(retried.error.name).toBe('TypeError');
    expect(JSON.stringify(await store.load('r2'))).toBe(before);
  });

  it('is ignored for a run that did not fail', async () => {
    const store = createInMemoryAgentRunStore();
    const options = {
      model: createMockModel({ responses: [{ text: 'done' }] }),
      prompt: 'x',
      session: { store, runId: 'r3', scope: 's' },
      deps: { clock },
    };
    expect((await runAgent(options)).status).toBe('completed');
    const again = await resumeAgent({ ...options, retryFailed: true });
    expect(again.status).toBe('completed');
    expect(options.model.calls).toHaveLength(1);
  });

  it('a cancelled run records no retry', async () => {
    const store = createInMemoryAgentRunStore();
    const controller = new AbortController();
    const options = {
      model: createMockModel({ responses: [{ text: 'slow', delayMs: 50 }] }),
      prompt: 'x',
      session: { store, runId: 'r4', scope: 's' },
      abortSignal: controller.signal,
      deps: { clock },
    };
    const pending = runAgent(options);
    setTimeout(() => controller.abort(), 5);
    const result = await pending;
    expect(result.status).toBe('stopped');
    expect((await store.load('r4'))?.retry).toBeUndefined();
  });
});

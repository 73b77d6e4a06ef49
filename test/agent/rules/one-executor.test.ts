/**
 * Rule 3: one executor per run. A second start or resume of a run that is
 * executing through the same store object is refused with run_busy, writes
 * nothing, and the first run completes normally.
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, type ResumeOptions } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { fixedDeps, recordingStore, tick } from './helpers.js';

function slowRun() {
  const store = recordingStore();
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const runs: unknown[] = [];
  const model = createMockModel({
    responses: [{ toolCalls: [{ toolName: 'slow', args: {} }] }, { text: 'Finished.' }],
  });
  const options = {
    model,
    prompt: 'Do the slow thing.',
    session: { store, runId: 'busy-1', scope: 'tenant-a' },
    tools: {
      slow: {
        description: 'Waits until the test releases it.',
        parameters: { type: 'object' as const, properties: {} },
        execute: async () => {
          runs.push(1);
          started();
          await released;
          return 'slow done';
        },
      },
    },
    deps: fixedDeps(),
  } satisfies ResumeOptions;
  return { store, model, options, release, running, runs };
}

describe('one executor per run', () => {
  it('refuses a second runAgent of the same run id through the same store while the first runs', async () => {
    const { options, release, running, runs, store, model } = slowRun();
    const first = runAgent(options);
    await running;
    const savesBefore = store.attempts();
    const second = await runAgent({ ...options, model: createMockModel({ responses: [{ text: 'other' }] }) });
    expect(second.status).toBe('failed');
    if (second.status !== 'failed') return;
    expect(second.error.code).toBe('run_busy');
    expect(second.runId).toBe('busy-1');
    expect(store.attempts()).toBe(savesBefore);
    release();
    const done = await first;
    expect(done.status).toBe('completed');
    expect(done.text).toBe('Finished.');
    expect(runs).toHaveLength(1);
    expect(model.calls).toHaveLength(2);
    expect((await store.load('busy-1'))!.status).toBe('completed');
  });

  it('refuses a resumeAgent of the run while it runs, and the first completes normally', async () => {
    const { options, release, running, runs, store, model } = slowRun();
    const first = runAgent(options);
    await running;
    const savesBefore = store.attempts();
    const second = await resumeAgent(options);
    expect(second.status).toBe('failed');
    if (second.status !== 'failed') return;
    expect(second.error.code).toBe('run_busy');
    expect(store.attempts()).toBe(savesBefore);
    expect(model.calls).toHaveLength(1);
    release();
    const done = await first;
    expect(done.status).toBe('completed');
    expect(runs).toHaveLength(1);
    expect(model.calls).toHaveLength(2);
  });

  it('refuses a second executor started in the same tick, before the first has written anything', async () => {
    const { options, release, runs } = slowRun();
    const first = runAgent(options);
    const second = runAgent(options);
    const refused = await second;
    expect(refused.status).toBe('failed');
    if (refused.status === 'failed') expect(refused.error.code).toBe('run_busy');
    await tick();
    release();
    expect((await first).status).toBe('completed');
    expect(runs).toHaveLength(1);
  });

  it('lets the run be resumed again once its executor has finished', async () => {
    const { options, release } = slowRun();
    const first = runAgent(options);
    release();
    expect((await first).status).toBe('completed');
    const again = await resumeAgent(options);
    expect(again.status).toBe('completed');
  });
});

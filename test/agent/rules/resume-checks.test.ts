/**
 * Rule 4: a resume checks identity, version and binding before anything is
 * written; a refusal leaves the stored record byte for byte as it was. A
 * completed or failed run answers with its stored result, without a model call.
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, type AgentResult, type AgentTool, type JsonValue, type ResumeOptions } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { countingTool, fixedDeps, recordingStore, type RecordingStore } from './helpers.js';

const BINDING_MESSAGE = 'Native agent binding changed across resume.';
const SCOPE_MESSAGE = 'Native checkpoint version, identity, or scope mismatch.';

const answerSchema: JsonValue = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] };

/** A run that suspends on an approval, with output and limits that a resume must keep. */
async function suspendedRun() {
  const store = recordingStore();
  const publish = countingTool('published', { needsApproval: true });
  const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'publish', args: {} }] }, { text: '{"n":1}' }] });
  const options = {
    model,
    prompt: 'Publish.',
    bindingId: 'checks-v1',
    session: { store, runId: 'run-1', scope: 'tenant-a' },
    tools: { publish: publish as AgentTool },
    output: { schema: answerSchema, validate: (v: unknown) => v as { n: number } },
    maxSteps: 6,
    deps: fixedDeps(),
  } satisfies ResumeOptions<{ n: number }>;
  const first = await runAgent(options);
  expect(first.status).toBe('suspended');
  return { store, model, publish, options, first };
}

async function expectRefusal(
  store: RecordingStore,
  runId: string,
  resume: () => Promise<AgentResult<unknown>>,
  expected: { code: string; message?: string },
  model?: { calls: readonly unknown[] },
) {
  const before = await store.dump(runId);
  const attempts = store.attempts();
  const calls = model?.calls.length ?? 0;
  const result = await resume();
  expect(result.status).toBe('failed');
  if (result.status !== 'failed') return;
  expect(result.error.code).toBe(expected.code);
  if (expected.message !== undefined) expect(result.error.message).toBe(expected.message);
  expect(store.attempts()).toBe(attempts);
  expect(await store.dump(runId)).toBe(before);
  if (model) expect(model.calls.length).toBe(calls);
}

describe('resume checks, before anything is written', () => {
  it('refuses another scope with scope_mismatch', async () => {
    const { store, options, model, publish } = await suspendedRun();
    await expectRefusal(store, 'run-1', () => resumeAgent({ ...options, session: { ...options.session, scope: 'tenant-b' } }),
      { code: 'scope_mismatch', message: SCOPE_MESSAGE }, model);
    expect(publish.runs).toHaveLength(0);
  });

  it('refuses an unknown run id with run_not_found', async () => {
    const { store, options, model } = await suspendedRun();
    const result = await resumeAgent({ ...options, session: { ...options.session, runId: 'nope' } });
    expect(result.status).toBe('failed');
    if (result.status === 'failed') expect(result.error.code).toBe('run_not_found');
    expect(await store.load('nope')).toBeUndefined();
    expect(model.calls).toHaveLength(1);
  });

  describe('refuses a changed binding with the exact message', () => {
    const changes: Array<[string, (o: Awaited<ReturnType<typeof suspendedRun>>['options']) => ResumeOptions<{ n: number }>]> = [
      ['bindingId', (o) => ({ ...o, bindingId: 'checks-v2' })],
      ['model id', (o) => ({ ...o, model: createMockModel({ modelId: 'other-model', responses: [{ text: '{"n":1}' }] }) })],
      ['tool schema', (o) => ({
        ...o,
        tools: { publish: { ...o.tools.publish, parameters: { type: 'object', properties: { force: { type: 'boolean' } } } } },
      })],
      ['tool set', (o) => ({ ...o, tools: { ...o.tools, extra: countingTool() } })],
      ['output schema', (o) => ({ ...o, output: { ...o.output, schema: { type: 'object', properties: { m: { type: 'string' } } } } })],
      ['maxSteps', (o) => ({ ...o, maxSteps: 7 })],
      ['maxOutputAttempts', (o) => ({ ...o, maxOutputAttempts: 5 })],
      ['maxVerifyAttempts', (o) => ({ ...o, maxVerifyAttempts: 5 })],
    ];
    for (const [what, change] of changes) {
      it(`(${what})`, async () => {
        const { store, options, model, publish, first } = await suspendedRun();
        if (first.status !== 'suspended') return;
        const p = first.pendingApprovals[0]!;
        const changed = change(options);
        await expectRefusal(store, 'run-1',
          () => resumeAgent({ ...changed, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: true }] }),
          { code: 'binding_changed', message: BINDING_MESSAGE }, model);
        expect(publish.runs).toHaveLength(0);
      });
    }
  });

  // 3 is a V3 record: refused as a mismatch instead (test/v3/store-compat.test.ts).
  for (const version of [4, 'x', 0, undefined] as const) {
    it(`refuses an envelope of version ${JSON.stringify(version)} with checkpoint_version_unsupported`, async () => {
      const { store, options, model, publish, first } = await suspendedRun();
      if (first.status !== 'suspended') return;
      await store.tamper('run-1', (record) => {
        record.version = version;
      });
      const p = first.pendingApprovals[0]!;
      await expectRefusal(store, 'run-1',
        () => resumeAgent({ ...options, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: true }] }),
        { code: 'checkpoint_version_unsupported' }, model);
      expect(publish.runs).toHaveLength(0);
    });
  }

  it('refuses an envelope of another kind as an identity mismatch', async () => {
    const { store, options, model } = await suspendedRun();
    await store.tamper('run-1', (record) => {
      record.kind = 'other-agent-run';
    });
    await expectRefusal(store, 'run-1', () => resumeAgent(options), { code: 'scope_mismatch', message: SCOPE_MESSAGE }, model);
  });

  it('returns a completed run’s stored result without a model call or a write', async () => {
    const store = recordingStore();
    const model = createMockModel({ responses: [{ text: 'All done.' }] });
    const options = { model, prompt: 'Finish.', session: { store, runId: 'done-1', scope: 's' }, deps: fixedDeps() };
    const first = await runAgent(options);
    expect(first.status).toBe('completed');
    const before = await store.dump('done-1');
    const attempts = store.attempts();
    const again = await resumeAgent(options);
    expect(again).toEqual(first);
    expect(model.calls).toHaveLength(1);
    expect(store.attempts()).toBe(attempts);
    expect(await store.dump('done-1')).toBe(before);
  });

  it('returns a failed run’s stored result without a model call or a write', async () => {
    const store = recordingStore();
    const model = createMockModel({ responses: [{ error: { status: 400, message: 'bad request' } }], strict: false });
    const options = { model, prompt: 'Fail.', session: { store, runId: 'failed-1', scope: 's' }, deps: fixedDeps() };
    const first = await runAgent(options);
    expect(first.status).toBe('failed');
    if (first.status !== 'failed') return;
    expect(first.error.code).toBe('model_call_failed');
    expect((await store.load('failed-1'))!.status).toBe('failed');
    const before = await store.dump('failed-1');
    const attempts = store.attempts();
    const again = await resumeAgent(options);
    expect(again).toEqual(first);
    expect(model.calls).toHaveLength(1);
    expect(store.attempts()).toBe(attempts);
    expect(await store.dump('failed-1')).toBe(before);
  });
});

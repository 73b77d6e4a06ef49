/**
 * The contract from the outside: each public entry point is driven through the
 * refusals and failures a user can reach, and whatever comes out (a thrown or
 * rejected error, a result's or a report's `error`, an `error` event, a
 * receipt's error) is a Cairn error, or plain data with a code from the list.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CAIRN_ERROR_CODES, CairnError, InvalidOptionsError, RunIdentityError, createInMemoryAgentRunStore, resumeAgent, runAgent,
  streamAgent, type AgentEvent, type AgentOptions, type AgentResult, type AgentTools, type SerializedError,
} from 'cairn/agent';
import {
  createSkillTools, exitCodeFor, inspectRun, loadProjectInstructions, nodeSkillSource, resolveSkillSources, resumeHeadless,
  runHeadless,
} from 'cairn/headless';
import { createOpenAI } from 'cairn/openai';
import { createAnthropic } from 'cairn/anthropic';
import { createCrashPlan, createFaultyStore, createMockModel } from 'cairn/testing';

/** A serialized error of the contract: plain data, a code from the list, nothing but its fields. */
function expectSerialized(error: SerializedError | undefined, code?: string): void {
  expect(error, 'an error is reported').toBeDefined();
  expect(CAIRN_ERROR_CODES).toContain(error!.code);
  if (code !== undefined) expect(error!.code).toBe(code);
  expect(typeof error!.name).toBe('string');
  expect(typeof error!.message).toBe('string');
  for (const key of Object.keys(error!)) expect(['name', 'code', 'message', 'details', 'cause']).toContain(key);
}

/** A thrown error of the contract. */
function expectCairn(error: unknown, code?: string): void {
  expect(CairnError.isInstance(error), `a CairnError: ${String(error)}`).toBe(true);
  expect(CAIRN_ERROR_CODES).toContain((error as CairnError).code);
  if (code !== undefined) expect((error as CairnError).code).toBe(code);
}

async function rejection(work: () => unknown): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** A request a model adapter takes. */
const ask = (content: string) => ({ messages: [{ role: 'user' as const, content }], tools: [], toolChoice: 'auto' as const });

const failedError = (result: AgentResult<unknown>) => (result.status === 'failed' ? result.error : undefined);

/** A provider that answers every request with `status`, through the fetch it is given. */
const answering = (status: number, body = '{"error":{"message":"nope","type":"server_error"}}') =>
  async () => new Response(body, { status, headers: { 'content-type': 'application/json' } });

describe('cairn/agent: refusals are failed results with a listed code', () => {
  const bad: Array<[string, Record<string, unknown>]> = [
    ['no model', { prompt: 'x' }],
    ['no prompt', { model: createMockModel({ responses: [{ text: 'x' }] }) }],
    ['a bad limit', { model: createMockModel({ responses: [{ text: 'x' }] }), prompt: 'x', maxSteps: -1 }],
    ['a legacy hook', { model: createMockModel({ responses: [{ text: 'x' }] }), prompt: 'x', doneWhen: () => true }],
    ['a tool without parameters', { model: createMockModel({ responses: [{ text: 'x' }] }), prompt: 'x', tools: { t: { execute: () => 1 } } }],
    ['a schema of a draft Cairn cannot check', {
      model: createMockModel({ responses: [{ text: 'x' }] }), prompt: 'x',
      tools: { t: { parameters: { $schema: 'https://example.com/mine', type: 'object' }, execute: () => 1 } },
    }],
  ];

  it.each(bad)('runAgent with %s', async (_label, options) => {
    const result = await runAgent(options as unknown as AgentOptions<string>);
    expect(result.status).toBe('failed');
    expectSerialized(failedError(result), 'invalid_options');
  });

  it('streamAgent reports the refusal as an error event and a failed result', async () => {
    const stream = streamAgent({ prompt: 'x' } as unknown as AgentOptions<string>);
    const events: AgentEvent<string>[] = [];
    for await (const event of stream.events) events.push(event);
    const errors = events.filter((e): e is Extract<AgentEvent<string>, { type: 'error' }> => e.type === 'error');
    expect(errors.length).toBeGreaterThan(0);
    for (const event of errors) expectSerialized(event.error);
    expectSerialized(failedError(await stream.result));
  });

  it('resumeAgent without a session, of an unknown run, or with malformed verdicts', async () => {
    const store = createInMemoryAgentRunStore();
    const model = createMockModel({ strict: false, responses: [{ toolCalls: [{ toolName: 'deploy', args: {} }] }] });
    const tools: AgentTools = { deploy: { parameters: { type: 'object' }, needsApproval: true, execute: () => 'ok' } };
    const first = await runAgent({ model, tools, prompt: 'Deploy.', session: { store, runId: 'r', scope: 's' } });
    expect(first.status).toBe('suspended');
    const noSession = await resumeAgent({ model, tools } as never);
    expectSerialized(failedError(noSession), 'invalid_options');
    const unknown = await resumeAgent({ model, tools, session: { store, runId: 'missing', scope: 's' } });
    expectSerialized(failedError(unknown), 'run_not_found');
    const malformed = await resumeAgent({
      model, tools, session: { store, runId: 'r', scope: 's' }, approvalResponses: [{ approvalId: 7 }] as never,
    });
    // The spec's "fails with a TypeError", as data: the name says TypeError, the code is listed.
    expect(failedError(malformed)).toMatchObject({ name: 'TypeError', code: 'invalid_options' });
    expectSerialized(failedError(malformed));
  });

  it('a strict mock model called too often fails the run with mock_model_unexpected_call', async () => {
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'look', args: {} }] }] });
    const result = await runAgent({ model, prompt: 'x', tools: { look: { parameters: { type: 'object' }, execute: () => 'seen' } } });
    expectSerialized(failedError(result), 'mock_model_unexpected_call');
    // Called directly, it throws the Cairn error itself.
    const direct = createMockModel({ responses: [{ text: 'once' }] });
    await direct.doGenerate(ask('a'));
    expectCairn(await rejection(() => direct.doGenerate(ask('b'))), 'mock_model_unexpected_call');
    expectCairn(await rejection(() => createMockModel({ responses: [{ text: 'unused' }] }).assertAllUsed()), 'invalid_options');
  });

  it('a tool that throws a plain Error records an error with a listed code, and the run goes on', async () => {
    const store = createInMemoryAgentRunStore();
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'flaky', args: {} }] }, { text: 'Gave up.' }] });
    const result = await runAgent({
      model, prompt: 'x', session: { store, runId: 'tool-throws', scope: 's' },
      tools: { flaky: { parameters: { type: 'object' }, execute: () => { throw new Error('upstream timeout'); } } },
    });
    expect(result.status).toBe('completed');
    const receipts = Object.values((await store.load('tool-throws'))!.receipts ?? {}) as Array<{ error?: SerializedError }>;
    const errors = receipts.map((r) => r.error).filter((e) => e !== undefined);
    expect(errors.length).toBe(1);
    expectSerialized(errors[0], undefined);
    expect(errors[0]).toMatchObject({ name: 'Error', message: 'upstream timeout' });
  });
});

describe('providers: an HTTP failure is a Cairn error, thrown or reported', () => {
  const providers = [
    ['openai', (status: number) => createOpenAI({ apiKey: 'sk-test-0000000000', fetch: answering(status) })('gpt-5.2')],
    ['anthropic', (status: number) => createAnthropic({
      apiKey: 'sk-ant-test-000000000', fetch: answering(status, '{"type":"error","error":{"type":"api_error","message":"nope"}}'),
    })('claude-sonnet-4-5')],
  ] as const;

  for (const [name, make] of providers) {
    it.each([500, 401])(`${name} answering %i`, async (status) => {
      const model = make(status);
      expectCairn(await rejection(() => model.doGenerate(ask('hi'))), 'api_call_failed');
      const result = await runAgent({ model, prompt: 'hi', maxRetries: 0 });
      expectSerialized(failedError(result), 'api_call_failed');
    });
  }

  it('a provider model with no key is api_key_missing', async () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      const model = createOpenAI({ fetch: answering(200) })('gpt-5.2');
      expectCairn(await rejection(() => model.doGenerate(ask('hi'))), 'api_key_missing');
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    }
  });
});

describe('cairn/headless: what it throws is a Cairn error; what it reports has a listed code', () => {
  const model = () => createMockModel({ responses: [{ text: 'Done.' }] });

  it('runHeadless and resumeHeadless with bad options reject with a CairnTypeError', async () => {
    const store = createInMemoryAgentRunStore();
    for (const work of [
      () => runHeadless(null as never),
      () => resumeHeadless(undefined as never),
      () => runHeadless({ model: model(), prompt: 'x', store, projectInstructions: { role: 'user' } }),
      () => runHeadless({ model: model(), prompt: 'x', store, projectDir: join(tmpdir(), 'no-such-dir-for-cairn-errors') }),
      () => runHeadless({ model: model(), prompt: 'x', store, skills: 'skills', tools: { load_skill: { parameters: { type: 'object' }, execute: () => 1 } } }),
    ]) {
      const error = await rejection(work);
      expectCairn(error);
      expect(error).toBeInstanceOf(TypeError);
      expect(InvalidOptionsError.isInstance(error)).toBe(true);
    }
  });

  it('a refused headless leg reports its error with a listed code', async () => {
    const store = createInMemoryAgentRunStore();
    const report = await runHeadless({ model: model(), prompt: 'x', store, maxSteps: 0 });
    expect(report.outcome).toBe('failed');
    expectSerialized(report.error, 'invalid_options');
    // A malformed skills option or budget is a refusal too: the leg does not reject for it.
    const skills = await runHeadless({ model: model(), prompt: 'x', store, skills: [''] });
    expectSerialized(skills.error, 'invalid_options');
    const budget = await runHeadless({ model: model(), prompt: 'x', store, budget: { usd: -1 } });
    expectSerialized(budget.error, 'invalid_options');
  });

  it('a resume with answers the run cannot take fails with a TypeError, as data', async () => {
    const store = createInMemoryAgentRunStore();
    const tools: AgentTools = { deploy: { parameters: { type: 'object' }, needsApproval: true, execute: () => 'ok' } };
    const scripted = createMockModel({ strict: false, responses: [{ toolCalls: [{ toolName: 'deploy', args: {} }] }] });
    await runHeadless({ model: scripted, prompt: 'Deploy.', tools, store, runId: 'r' });
    const ghost = await resumeHeadless({ model: scripted, tools, store, runId: 'r', clientToolResults: [{ toolCallId: 'ghost', output: 1 }] });
    expect(ghost.error).toMatchObject({ name: 'TypeError', code: 'invalid_options' });
    expectSerialized(ghost.error);
    expect(exitCodeFor(ghost)).toBe(1);
    const both = await resumeHeadless({
      model: scripted, tools, store, runId: 'r', approvalResponses: [{ approvalId: 'a', approved: true }, { approvalId: 'a', approved: false }],
    });
    expectSerialized(both.error, 'invalid_options');
  });

  it('inspectRun of an unknown run rejects with a TypeError that is a RunIdentityError', async () => {
    const error = await rejection(() => inspectRun(createInMemoryAgentRunStore(), 'missing'));
    expectCairn(error, 'run_not_found');
    expect(error).toBeInstanceOf(TypeError);
    expect(RunIdentityError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ runId: 'missing' });
    expectCairn(await rejection(() => inspectRun(null as never, 'x')), 'invalid_options');
  });

  it('project instructions, skills and exitCodeFor refuse with CairnTypeErrors; a refused skill read is a SkillAccessError', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-errors-'));
    writeFileSync(join(dir, 'AGENTS.md'), 'Be brief.');
    for (const work of [
      () => loadProjectInstructions(join(dir, 'AGENTS.md')),
      () => loadProjectInstructions(dir, { maxBytes: -1 }),
      () => loadProjectInstructions(dir, { nope: 1 } as never),
      () => createSkillTools('not a list' as never),
      () => resolveSkillSources([7 as never]),
      () => nodeSkillSource(''),
      () => exitCodeFor(null as never),
      () => exitCodeFor({ kind: 'run', outcome: 'weird' } as never),
    ]) {
      const error = await rejection(work);
      expectCairn(error, 'invalid_options');
      expect(error).toBeInstanceOf(TypeError);
    }
    const source = nodeSkillSource(dir);
    expectCairn(await rejection(() => source.readResource('nope', 'x.md')), 'skill_access_denied');
  });
});

describe('cairn/testing: the helpers refuse with Cairn errors and inject Cairn errors', () => {
  it('createMockModel, createFaultyStore and createCrashPlan refuse bad input', async () => {
    for (const work of [
      () => createMockModel({ responses: 'x' } as never),
      () => createFaultyStore(createInMemoryAgentRunStore(), { failSave: { at: 0, mode: 'reject' } }),
      () => createCrashPlan({ at: { kind: 'disk', index: 1, when: 'before' } as never }),
    ]) expectCairn(await rejection(work), 'invalid_options');
  });

  it('a store fault reaches the run as a listed code', async () => {
    const store = createFaultyStore(createInMemoryAgentRunStore(), { failSave: { at: 1, mode: 'reject' } });
    const result = await runAgent({
      model: createMockModel({ responses: [{ text: 'x' }] }), prompt: 'x', session: { store, runId: 'faulty', scope: 's' },
    });
    expectSerialized(failedError(result));
    const direct = createFaultyStore(createInMemoryAgentRunStore(), { failLoad: { at: 1, mode: 'reject' } });
    expectCairn(await rejection(() => direct.load('x')), 'injected_fault');
  });
});

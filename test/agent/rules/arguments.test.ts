/**
 * A call's arguments are checked against its tool's `parameters` before any
 * approval and any effect: a call that does not match (or whose arguments are
 * not JSON) ends as `invalid-arguments`, answered to the model with what is
 * wrong, and the run goes on so the model can correct itself. A schema that
 * is not a valid object JSON Schema is refused before anything is written; a
 * Standard Schema value goes to the model as the JSON Schema it converts to.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { resumeAgent, runAgent, streamAgent, type AgentEvent, type AgentTool } from 'cairn/agent';
import { createMockModel, type MockResponse } from 'cairn/testing';
import { toolParameters } from '../../../src/agent/arguments.js';
import { countingTool, eventsOf, fixedDeps, recordingStore, standardSchema, toolMessages } from './helpers.js';

const emailParams = {
  type: 'object',
  properties: { to: { type: 'string' }, subject: { type: 'string' } },
  required: ['to'],
  additionalProperties: false,
} as const;

const sendCall = (args: unknown, toolCallId = 'c1'): MockResponse => ({ toolCalls: [{ toolName: 'send', toolCallId, args: args as never }] });
type End = Extract<AgentEvent, { type: 'tool-call-end' }>;

function emailRun(send: AgentTool, responses: MockResponse[]) {
  const store = recordingStore();
  const model = createMockModel({ responses });
  const options = {
    model, prompt: 'Email Ada.', tools: { send }, deps: fixedDeps(),
    session: { store, runId: 'args-1', scope: 'tenant-a' },
  };
  return { store, model, options };
}

describe('arguments are checked before approval and effect', () => {
  it('a call that does not match parameters ends as invalid-arguments; the model is told why and corrects itself', async () => {
    const send = countingTool('sent', { parameters: emailParams, needsApproval: true });
    const { model, options, store } = emailRun(send, [
      sendCall({ to: 5, cc: 'bob' }),
      sendCall({ to: 'ada@example.com' }, 'c2'),
      { text: 'Sent.' },
    ]);
    const events = await eventsOf(streamAgent(options));
    const result = events.find((e) => e.type === 'result')!.result;
    // Never offered for approval: the run suspends only on the corrected call.
    expect(result.status).toBe('suspended');
    if (result.status !== 'suspended') return;
    expect(result.pendingApprovals.map((p) => p.toolCallId)).toEqual(['c2']);
    expect(events.filter((e) => e.type === 'approval-request').map((e) => e.approval.toolCallId)).toEqual(['c2']);
    const end = events.find((e): e is End => e.type === 'tool-call-end' && e.toolCallId === 'c1')!;
    expect(end).toMatchObject({ outcome: 'invalid-arguments', isError: true });
    expect(end.output).toBe(
      'Invalid arguments for tool "send": (root) must NOT have additional properties ("cc"); /to must be string. ' +
      'Call it again with arguments that match its parameters schema.',
    );
    expect(toolMessages(model.calls[1])).toEqual([{ role: 'tool', toolCallId: 'c1', toolName: 'send', content: end.output, isError: true }]);
    // No effect identity: the call never came near its effect.
    expect(Object.keys((await store.load('args-1'))!.receipts)).toEqual([]);

    const p = result.pendingApprovals[0]!;
    const done = await resumeAgent({ ...options, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: true }] });
    expect(done.status).toBe('completed');
    expect(send.runs).toEqual([{ to: 'ada@example.com' }]);
  });

  it('arguments that are not JSON (the text a model sent) are invalid arguments, not a failed run', async () => {
    const send = countingTool('sent', { parameters: emailParams });
    const { model, options } = emailRun(send, [sendCall('{"to": "ada@exa'), { text: 'I will try again later.' }]);
    const done = await runAgent(options);
    expect(done.status).toBe('completed');
    expect(send.runs).toEqual([]);
    expect(toolMessages(model.calls[1])[0]).toMatchObject({
      content: expect.stringMatching(/^Invalid arguments for tool "send": they are not valid JSON \("\{\\"to\\": \\"ada@exa"\)/),
      isError: true,
    });
  });

  it('arguments a guardrail rewrote are the ones checked', async () => {
    const send = countingTool('sent', { parameters: emailParams });
    const { model, options } = emailRun(send, [sendCall({ to: 'ada@example.com' }), { text: 'Done.' }]);
    const done = await runAgent({ ...options, onToolCall: () => ({ action: 'rewrite', args: { to: ['ops'] } }) });
    expect(done.status).toBe('completed');
    expect(send.runs).toEqual([]);
    expect(toolMessages(model.calls[1])[0]!.content).toMatch(/\/to must be string/);
  });

  it('a zod schema goes to the model as JSON Schema, and checks the arguments itself', async () => {
    const send = countingTool('sent', { parameters: z.object({ to: z.string().email(), subject: z.string().optional() }) });
    const { model, options } = emailRun(send, [sendCall({ to: 'not an address' }), sendCall({ to: 'ada@example.com' }, 'c2'), { text: 'Sent.' }]);
    const done = await runAgent(options);
    expect(done.status).toBe('completed');
    expect(send.runs).toEqual([{ to: 'ada@example.com' }]);
    const wire = model.calls[0]!.tools!.find((t) => t.name === 'send')!.parameters as Record<string, unknown>;
    expect(wire).toMatchObject({ type: 'object', properties: { to: { type: 'string', format: 'email' } }, required: ['to'] });
    // Plain JSON Schema: none of the schema object's own internals.
    expect(JSON.stringify(wire)).not.toMatch(/~standard|_zod|"def"/);
    expect(toolMessages(model.calls[1])[0]!.content).toMatch(/^Invalid arguments for tool "send": \/to Invalid email address/);
  });

  it('parameters are compiled once per tool object, not again on every leg', async () => {
    let reads = 0;
    const parameters = new Proxy({ ...emailParams }, {
      get(target, key, receiver) {
        reads += 1;
        return Reflect.get(target, key, receiver);
      },
    });
    const send = countingTool('sent', { parameters, needsApproval: true });
    const { options } = emailRun(send, [sendCall({ to: 'ada@example.com' }), { text: 'Sent.' }]);
    const first = await runAgent(options);
    if (first.status !== 'suspended') throw new Error(first.status);
    const afterStart = reads;
    expect(afterStart).toBeGreaterThan(0);
    const p = first.pendingApprovals[0]!;
    const done = await resumeAgent({ ...options, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: true }] });
    expect(done.status).toBe('completed');
    expect(reads).toBe(afterStart);
  });
});

describe('tools built anew for every run', () => {
  it('check each call against their own schema: one compiled for an equal schema serves them, another schema never does', async () => {
    // A service that builds its tools per request: equal schemas, new objects every time.
    const build = (type: 'string' | 'number'): AgentTool => ({
      parameters: { type: 'object', properties: { to: { type } }, required: ['to'] },
      execute: () => 'sent',
    });
    const verdicts = [];
    for (const type of ['string', 'number', 'string', 'number'] as const) {
      const parameters = toolParameters('send', build(type));
      verdicts.push([await parameters.check({ to: 'ada@example.com' }), await parameters.check({ to: 5 })].map((v) => v.ok));
    }
    expect(verdicts).toEqual([[true, false], [false, true], [true, false], [false, true]]);
  });
});

describe('a schema that cannot describe the arguments is refused before anything is written', () => {
  const refusals: Array<[string, unknown, RegExp]> = [
    ['not a valid JSON Schema', { type: 'object', properties: { to: { type: 'strnig' } } }, /Tool "send": parameters is not a valid JSON Schema: \/properties\/to\/type/],
    ['not an object schema', { type: 'string' }, /Tool "send": parameters must be a JSON Schema of type "object"/],
    ['not a schema at all', 'an email', /Tool "send": parameters must be a JSON Schema object of type "object"/],
    ['missing', undefined, /Tool "send": parameters is required/],
    ['of a draft Cairn cannot check', { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' }, /draft Cairn cannot check/],
    ['a Standard Schema with no JSON Schema conversion', standardSchema(() => ({ value: {} })),
      /Tool "send": parameters is a Standard Schema value \(rules-test\) that offers no JSON Schema conversion.*Pass a JSON Schema object, or a schema that converts itself/],
    ['a zod schema that is not an object', z.string(), /must be a JSON Schema of type "object".*converted from the zod schema/],
  ];
  for (const [name, parameters, message] of refusals) {
    it(`parameters ${name}`, async () => {
      const send = { ...countingTool('sent'), parameters } as AgentTool & { runs: unknown[] };
      const { model, options, store } = emailRun(send, [sendCall({ to: 'ada' }), { text: 'Sent.' }]);
      for (const leg of [() => runAgent(options), async () => (await eventsOf(streamAgent(options))).find((e) => e.type === 'result')!.result,
        () => resumeAgent(options)]) {
        const refused = await leg();
        expect(refused).toMatchObject({ status: 'failed', error: { name: 'InvalidOptionsError', code: 'invalid_options' } });
        if (refused.status === 'failed') expect(refused.error.message).toMatch(message);
      }
      expect(store.attempts()).toBe(0);
      expect(model.calls).toHaveLength(0);
    });
  }
});

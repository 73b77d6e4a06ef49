/**
 * Handoffs (docs/delegation.md#handoffs): a transfer tool per target through
 * the one tool path, then the target's model, instructions and tools drive
 * every later step (finalization and verifier re-drives included), the active
 * agent is in the record so a resume goes on with the target, each receipt
 * carries its own tool's idempotent flag, and a resume's binding covers each
 * target. On the in-memory and the SQLite store.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Agent } from 'cairn';
import { resumeAgent, resumeStreamAgent, runAgent, streamAgent, type AgentResult } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { billingAgent, STORES, transfer, triageOptions, type Effects } from './handoff-helpers.js';

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

const pendingOf = (result: AgentResult<unknown>) => (result.status === 'suspended' ? result.pendingApprovals : []);

describe.each(STORES)('handoffs on the $name store', (kind) => {
  const open = () => {
    const opened = kind.open();
    closers.push(opened.close);
    return opened.store;
  };

  it('hands the run to billing: its model, instructions and tools drive every later step, and the record says so', async () => {
    const store = open();
    const effects: Effects = { refunds: [], lookups: [] };
    const triage = createMockModel({ modelId: 'triage-model', responses: [transfer()] });
    const billingModel = createMockModel({ modelId: 'billing-model', responses: [
      { toolCalls: [{ toolCallId: 'l1', toolName: 'lookup', args: { order: 'o-1' } }] },
      { text: 'Order o-1 totals 42.' },
    ] });
    const session = { store, runId: 'run-a', scope: 't' };
    const result = await runAgent(triageOptions(triage, billingAgent(billingModel, effects), { session }));
    expect(result.status).toBe('completed');
    expect(result.text).toBe('Order o-1 totals 42.');
    triage.assertAllUsed();
    billingModel.assertAllUsed();
    // The triage model was offered its own tool and the transfer; billing its own tools, never triage's.
    expect(triage.calls[0]!.tools!.map((t) => t.name).sort()).toEqual(['faq', 'transfer_to_billing']);
    expect(triage.calls[0]!.tools!.find((t) => t.name === 'transfer_to_billing')!.description).toContain('Refunds and invoices.');
    for (const call of billingModel.calls) expect(call.tools!.map((t) => t.name).sort()).toEqual(['lookup', 'refund']);
    // billing's instructions took the place of triage's system message; the conversation is the same one.
    expect(billingModel.calls[0]!.messages[0]).toEqual({ role: 'system', content: 'You are billing. Refund when asked.' });
    expect(billingModel.calls[0]!.messages.filter((m) => m.role === 'system')).toHaveLength(1);
    expect(billingModel.calls[0]!.messages.some((m) => m.role === 'user' && m.content === 'Refund order o-1, please.')).toBe(true);
    expect(effects.lookups).toEqual(['o-1']);
    const record = (await store.load('run-a', { scope: 't' }))!;
    expect(record.activeAgent).toBe('billing');
    expect(record.binding.handoffs).toMatch(/^sha256:/);
    // Each receipt carries the flag of the tool that ran it: the transfer and lookup are idempotent.
    expect(Object.values(record.receipts).map((r) => [r.toolName, r.status, r.idempotent]).sort()).toEqual([
      ['lookup', 'completed', true], ['transfer_to_billing', 'completed', true],
    ]);
  });

  it('a target suspended at an approval resumes, in a fresh leg, with the target: its tool runs once', async () => {
    const store = open();
    const effects: Effects = { refunds: [], lookups: [] };
    const session = { store, runId: 'run-b', scope: 't' };
    const first = await runAgent(triageOptions(
      createMockModel({ modelId: 'triage-model', responses: [transfer()] }),
      billingAgent(createMockModel({ modelId: 'billing-model', responses: [
        { toolCalls: [{ toolCallId: 'r1', toolName: 'refund', args: { order: 'o-1' } }] },
      ] }), effects),
      { session },
    ));
    expect(first.status).toBe('suspended');
    const [pending] = pendingOf(first);
    expect(pending).toMatchObject({ toolName: 'refund' });
    expect((await store.load('run-b', { scope: 't' }))!.activeAgent).toBe('billing');
    // A new leg, built from the same options: the root's model is never called again.
    const triageAgain = createMockModel({ modelId: 'triage-model', responses: [] });
    const billingAgain = createMockModel({ modelId: 'billing-model', responses: [{ text: 'Refunded o-1.' }] });
    const resumed = await resumeAgent({
      ...triageOptions(triageAgain, billingAgent(billingAgain, effects)),
      session,
      approvalResponses: [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }],
    });
    expect(resumed.status).toBe('completed');
    expect(resumed.text).toBe('Refunded o-1.');
    expect(triageAgain.calls).toHaveLength(0);
    expect(billingAgain.calls[0]!.messages[0]).toEqual({ role: 'system', content: 'You are billing. Refund when asked.' });
    expect(effects.refunds).toEqual(['o-1']);
    const record = (await store.load('run-b', { scope: 't' }))!;
    expect(record.receipts[Object.keys(record.receipts).find((k) => record.receipts[k]!.toolName === 'refund')!]).toMatchObject({ idempotent: false, status: 'completed' });
  });

  it('a resume whose target changed its model, instructions or tool schemas is refused as a binding change, with nothing written', async () => {
    const store = open();
    const effects: Effects = { refunds: [], lookups: [] };
    const session = { store, runId: 'run-c', scope: 't' };
    const base = () => billingAgent(createMockModel({ modelId: 'billing-model', responses: [
      { toolCalls: [{ toolCallId: 'r1', toolName: 'refund', args: { order: 'o-1' } }] },
    ] }), effects);
    const first = await runAgent(triageOptions(createMockModel({ modelId: 'triage-model', responses: [transfer()] }), base(), { session }));
    expect(first.status).toBe('suspended');
    const before = (await store.load('run-c', { scope: 't' }))!;
    const [pending] = pendingOf(first);
    const answers = { approvalResponses: [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }] };
    const billingModel = createMockModel({ modelId: 'billing-model', responses: [] });
    const changes: [string, Parameters<typeof billingAgent>[2], string][] = [
      ['instructions', { instructions: 'You are billing, v2.' }, 'handoff agent billing: its instructions'],
      ['model', { model: createMockModel({ modelId: 'billing-model-2', responses: [] }) }, 'handoff agent billing: its model'],
      ['tools', {
        tools: { ...base().tools, lookup: { ...base().tools!.lookup!, parameters: { type: 'object', properties: { id: { type: 'string' } } } } },
      }, 'handoff agent billing: its tool schemas'],
    ];
    for (const [, over, detail] of changes) {
      const triage = createMockModel({ modelId: 'triage-model', responses: [] });
      const refused = await resumeAgent({ ...triageOptions(triage, billingAgent(billingModel, effects, over)), session, ...answers });
      expect(refused.status).toBe('failed');
      expect(refused.status === 'failed' && refused.error).toMatchObject({ code: 'binding_changed', details: [detail] });
      expect(triage.calls).toHaveLength(0);
    }
    // A resume that no longer knows the agent driving the run is refused the same way.
    for (const [handoffs, details] of [[[], ['the handoffs']], [[{ name: 'sales', model: billingModel }], ['handoff agent billing was removed', 'handoff agent sales was added', 'handoff agent triage: its handoffs, description, fallback models or MCP catalog']]] as const) {
      const refused = await resumeAgent({ ...triageOptions(createMockModel({ modelId: 'triage-model', responses: [] }), base(), { handoffs: [...handoffs] }), session, ...answers });
      expect(refused.status === 'failed' && refused.error).toMatchObject({ code: 'binding_changed', details });
    }
    expect(billingModel.calls).toHaveLength(0);
    expect(effects.refunds).toEqual([]);
    expect((await store.load('run-c', { scope: 't' }))!.revision).toBe(before.revision);
  });
});

describe('after a handoff, the target drives finalization and the verifier re-drives', () => {
  it('the structured answer and the answer after the verifier\'s feedback come from the target\'s model', async () => {
    const triage = createMockModel({ modelId: 'triage-model', responses: [transfer()] });
    const billingModel = createMockModel({ modelId: 'billing-model', responses: [
      { text: 'Here it is.' },
      { text: '{"total": 41}' },
      { text: '{"total": 42}' },
    ] });
    const verdicts: number[] = [];
    const result = await runAgent<{ total: number }>({
      ...triageOptions(triage, billingAgent(billingModel, { refunds: [], lookups: [] })),
      output: {
        schema: { type: 'object', properties: { total: { type: 'number' } }, required: ['total'] },
        validate: (value: unknown) => value as { total: number },
      },
      verify: ({ output }: { output: { total: number } }) => {
        verdicts.push(output.total);
        return output.total === 42 ? { status: 'verified' } : { status: 'rejected', feedback: 'The total is 42.' };
      },
    } as never) as AgentResult<{ total: number }>;
    expect(result.status).toBe('completed');
    expect(result.status === 'completed' && result.output).toEqual({ total: 42 });
    expect(verdicts).toEqual([41, 42]);
    triage.assertAllUsed();
    billingModel.assertAllUsed();
    expect(billingModel.calls.at(-1)!.messages[0]).toEqual({ role: 'system', content: 'You are billing. Refund when asked.' });
  });
});

describe('transfers the model asks for', () => {
  it('a transfer to an agent the run does not know is answered as an unknown tool, and the run\'s own agent goes on', async () => {
    const triage = createMockModel({ modelId: 'triage-model', responses: [
      { toolCalls: [{ toolCallId: 'x', toolName: 'transfer_to_sales', args: {} }] },
      { text: 'I can only hand you to billing.' },
    ] });
    const billingModel = createMockModel({ modelId: 'billing-model', responses: [] });
    const result = await runAgent(triageOptions(triage, billingAgent(billingModel, { refunds: [], lookups: [] })));
    expect(result.status).toBe('completed');
    expect(result.text).toBe('I can only hand you to billing.');
    expect(billingModel.calls).toHaveLength(0);
    const answer = result.messages.find((m) => m.role === 'tool');
    expect(answer).toMatchObject({ toolName: 'transfer_to_sales', isError: true });
  });

  it('two transfers in one turn: the first is taken, the other is answered as not taken', async () => {
    const triage = createMockModel({ modelId: 'triage-model', responses: [{ toolCalls: [
      { toolCallId: 'a', toolName: 'transfer_to_billing', args: {} },
      { toolCallId: 'b', toolName: 'transfer_to_support', args: {} },
    ] }] });
    const billingModel = createMockModel({ modelId: 'billing-model', responses: [{ text: 'Billing here.' }] });
    const supportModel = createMockModel({ modelId: 'support-model', responses: [] });
    const result = await runAgent(triageOptions(triage, billingAgent(billingModel, { refunds: [], lookups: [] }), {
      handoffs: [billingAgent(billingModel, { refunds: [], lookups: [] }), { name: 'support', model: supportModel }],
    }));
    expect(result.status).toBe('completed');
    expect(result.text).toBe('Billing here.');
    expect(supportModel.calls).toHaveLength(0);
    const answers = result.messages.filter((m) => m.role === 'tool') as { toolCallId: string; content: unknown }[];
    expect(answers.find((m) => m.toolCallId === 'a')!.content).toEqual({ transferredTo: 'billing' });
    expect(answers.find((m) => m.toolCallId === 'b')!.content).toMatch(/^Not transferred/);
  });
});

describe('Agent objects as the run and as targets', () => {
  it('new Agent({ handoffs: [billing] }) hands off to another Agent, and agent.run resumes with it from a store', async () => {
    const refunds: string[] = [];
    const billing = new Agent({
      name: 'billing',
      model: createMockModel({ modelId: 'billing-model', responses: [
        { toolCalls: [{ toolCallId: 'r1', toolName: 'refund', args: { order: 'o-9' } }] },
        { text: 'Refunded o-9.' },
      ] }),
      instructions: 'You are billing.',
      tools: {
        refund: {
          description: 'Refund an order.',
          parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
          execute: async ({ order }: { order: string }) => {
            refunds.push(order);
            return 'ok';
          },
        },
      },
    });
    const triage = new Agent({ name: 'triage', model: createMockModel({ modelId: 'triage-model', responses: [transfer()] }), handoffs: [billing] });
    const result = await triage.run({ prompt: 'Refund o-9.' });
    expect(result.status).toBe('completed');
    expect(result.outputText).toBe('Refunded o-9.');
    expect(refunds).toEqual(['o-9']);
  });
});

describe('an Agent run resumed from its state', () => {
  it('agent.run({ state, approvalResponses }) goes on with the target the run was handed to, from a fresh Agent of the same definition', async () => {
    const refunds: string[] = [];
    const make = (billingResponses: Parameters<typeof createMockModel>[0]['responses'], triageResponses: Parameters<typeof createMockModel>[0]['responses']) => {
      const billing = new Agent({
        name: 'billing',
        model: createMockModel({ modelId: 'billing-model', responses: billingResponses }),
        instructions: 'You are billing.',
        tools: {
          refund: {
            description: 'Refund an order.', needsApproval: true,
            parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
            execute: async ({ order }: { order: string }) => {
              refunds.push(order);
              return 'ok';
            },
          },
        },
      });
      return new Agent({ name: 'triage', model: createMockModel({ modelId: 'triage-model', responses: triageResponses }), handoffs: [billing] });
    };
    const { store } = STORES[0]!.open();
    const first = await make([{ toolCalls: [{ toolCallId: 'r1', toolName: 'refund', args: { order: 'o-3' } }] }], [transfer()]).run({ prompt: 'Refund o-3.', store });
    expect(first.status).toBe('suspended');
    const [pending] = first.pendingApprovals;
    const next = await make([{ text: 'Refunded o-3.' }], []).run({
      state: first.state, store, approvalResponses: [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }],
    });
    expect(next.status).toBe('completed');
    expect(next.outputText).toBe('Refunded o-3.');
    expect(refunds).toEqual(['o-3']);
  });
});

describe('streams', () => {
  it('streamAgent hands off and streams the target\'s text; resumeStreamAgent goes on with the target', async () => {
    const { store } = STORES[0]!.open();
    const effects: Effects = { refunds: [], lookups: [] };
    const session = { store, runId: 'stream', scope: 't' };
    const stream = streamAgent(triageOptions(
      createMockModel({ modelId: 'triage-model', responses: [transfer()] }),
      billingAgent(createMockModel({ modelId: 'billing-model', responses: [
        { text: 'Checking.', toolCalls: [{ toolCallId: 'r1', toolName: 'refund', args: { order: 'o-1' } }] },
      ] }), effects),
      { session },
    ));
    const events: string[] = [];
    for await (const event of stream.events) if (event.type === 'tool-call-start') events.push((event as { toolName: string }).toolName);
    const first = await stream.result;
    expect(events).toEqual(['transfer_to_billing', 'refund']);
    expect(first.status).toBe('suspended');
    const [pending] = pendingOf(first);
    const billingAgain = createMockModel({ modelId: 'billing-model', responses: [{ text: 'Refunded.' }] });
    const resumed = resumeStreamAgent({
      ...triageOptions(createMockModel({ modelId: 'triage-model', responses: [] }), billingAgent(billingAgain, effects)),
      session, approvalResponses: [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }],
    });
    let text = '';
    for await (const delta of resumed.textStream) text += delta;
    expect(text).toBe('Refunded.');
    expect((await resumed.result).status).toBe('completed');
    expect(effects.refunds).toEqual(['o-1']);
  });
});

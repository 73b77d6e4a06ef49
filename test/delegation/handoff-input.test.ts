/**
 * Handoffs that cannot be used are refused with a typed HandoffError before
 * any model call, and nothing is written: a cycle (a target that would hand
 * the run back, a target listing itself), a target listed twice or two agents
 * of one name, a transfer tool that has the name of the agent's own tool, a
 * target that is not an agent, a name that cannot make a tool name.
 * Then the policy: a target's model and tools are held to the run's
 * allowlists and ledger, and its model fails over like the root's.
 */
import { describe, expect, it } from 'vitest';
import { Agent } from 'cairn';
import {
  createInMemoryAgentRunStore, HandoffError, runAgent, type AgentOptions, type HandoffAgentOptions, type HandoffTarget,
} from 'cairn/agent';
import { createExecutionContext } from 'cairn/policy';
import { createMockModel } from 'cairn/testing';
import { billingAgent, transfer, triageOptions } from './handoff-helpers.js';

const quiet = (modelId: string) => createMockModel({ modelId, responses: [] });

async function refused(options: AgentOptions, code: string, message: RegExp) {
  const store = createInMemoryAgentRunStore();
  const model = options.model as ReturnType<typeof createMockModel>;
  const result = await runAgent({ ...options, session: { store, runId: 'bad', scope: 't' } });
  expect(result.status).toBe('failed');
  expect(result.status === 'failed' && result.error).toMatchObject({ name: 'HandoffError', code });
  expect(result.status === 'failed' && result.error.message).toMatch(message);
  expect(model.calls).toHaveLength(0);
  expect(await store.load('bad', { scope: 't' })).toBeUndefined();
}

describe('handoffs refused before anything runs', () => {
  it('a cycle: billing hands back to triage, by name', async () => {
    const billing: HandoffAgentOptions = { name: 'billing', model: quiet('b'), handoffs: [{ name: 'triage', model: quiet('t2') }] };
    await refused(triageOptions(quiet('t'), billing), 'handoff_cycle', /triage → billing → triage/);
  });

  it('a longer cycle through a list mutated after the agents were made, and a target listing itself', async () => {
    const list: HandoffTarget[] = [];
    const refunds = new Agent({ name: 'refunds', model: quiet('r'), handoffs: list });
    const billing = new Agent({ name: 'billing', model: quiet('b'), handoffs: [refunds] });
    list.push(billing);
    await refused(triageOptions(quiet('t'), billing as never, { handoffs: [billing] }), 'handoff_cycle', /billing → refunds → billing/);
    const self: HandoffAgentOptions = { name: 'loop', model: quiet('l') };
    self.handoffs = [self];
    await refused(triageOptions(quiet('t'), self), 'handoff_cycle', /loop → loop/);
  });

  it('a target listed twice, and two different agents of one name', async () => {
    const billing = billingAgent(quiet('b'), { refunds: [], lookups: [] });
    await refused(triageOptions(quiet('t'), billing, { handoffs: [billing, billing] }), 'handoff_duplicate', /lists billing twice/);
    const other: HandoffAgentOptions = { name: 'billing', model: quiet('b2') };
    const sales: HandoffAgentOptions = { name: 'sales', model: quiet('s'), handoffs: [other] };
    await refused(triageOptions(quiet('t'), billing, { handoffs: [billing, sales] }), 'handoff_duplicate', /Two different agents .* named billing/);
  });

  it('a transfer tool with the name of one of the agent\'s own tools', async () => {
    const options = triageOptions(quiet('t'), billingAgent(quiet('b'), { refunds: [], lookups: [] }));
    options.tools = { ...options.tools, transfer_to_billing: { parameters: { type: 'object' }, execute: async () => 'x' } };
    await refused(options, 'handoff_tool_conflict', /transfer_to_billing/);
  });

  it('a target that is not an agent, a name that makes no tool name, a target whose own options are bad', async () => {
    await refused(triageOptions(quiet('t'), { name: 'x' } as never), 'handoff_invalid', /must be an Agent or/);
    await refused(triageOptions(quiet('t'), { name: 'has space', model: quiet('b') }), 'handoff_invalid', /letters, digits/);
    await refused(triageOptions(quiet('t'), { name: 'billing', model: quiet('b'), temperature: -1 }), 'handoff_invalid', /Handoff agent billing: temperature/);
    await refused(triageOptions(quiet('t'), billingAgent(quiet('b'), { refunds: [], lookups: [] }), { handoffs: 'billing' as never }), 'handoff_invalid', /array/);
  });

  it('HandoffError is typed: code, agent, path, fault', async () => {
    const billing: HandoffAgentOptions = { name: 'billing', model: quiet('b'), handoffs: [{ name: 'triage', model: quiet('t2') }] };
    const result = await runAgent(triageOptions(quiet('t'), billing));
    expect(result.status).toBe('failed');
    const error = new HandoffError('handoff_cycle', 'triage', 'x', { path: ['triage', 'billing', 'triage'] });
    expect(HandoffError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'handoff_cycle', agent: 'triage', path: ['triage', 'billing', 'triage'], fault: 'user', isRetryable: false });
  });
});

describe('a target under the run\'s execution policy', () => {
  it('a target model outside allowedModels fails the run at its first call; the root\'s steps ran', async () => {
    const triage = createMockModel({ modelId: 'triage-model', responses: [transfer()] });
    const billingModel = createMockModel({ modelId: 'billing-model', responses: [{ text: 'never' }] });
    const execution = createExecutionContext({ allowedModels: ['mock:triage-model'] });
    const result = await runAgent(triageOptions(triage, billingAgent(billingModel, { refunds: [], lookups: [] }), { execution }));
    expect(result.status).toBe('failed');
    expect(result.status === 'failed' && result.error).toMatchObject({ code: 'model_not_allowed' });
    expect(triage.calls).toHaveLength(1);
    expect(billingModel.calls).toHaveLength(0);
  });

  it('a target tool outside allowedTools fails its batch; the transfer itself is a tool the allowlist must name', async () => {
    const effects = { refunds: [], lookups: [] as string[] };
    const triage = createMockModel({ modelId: 'triage-model', responses: [transfer()] });
    const billingModel = createMockModel({ modelId: 'billing-model', responses: [{ toolCalls: [{ toolCallId: 'l', toolName: 'lookup', args: { order: 'o-1' } }] }] });
    const execution = createExecutionContext({ allowedTools: ['transfer_to_billing'] });
    const result = await runAgent(triageOptions(triage, billingAgent(billingModel, effects), { execution }));
    expect(result.status === 'failed' && result.error).toMatchObject({ code: 'tool_not_allowed' });
    expect(effects.lookups).toEqual([]);
    const blocked = await runAgent(triageOptions(createMockModel({ modelId: 'triage-model', responses: [transfer()] }), billingAgent(quiet('billing-model'), effects), {
      execution: createExecutionContext({ allowedTools: ['faq'] }),
    }));
    expect(blocked.status === 'failed' && blocked.error).toMatchObject({ code: 'tool_not_allowed' });
  });

  it('a target\'s model calls spend from the run\'s ledger, priced as the target\'s model', async () => {
    const triage = createMockModel({ modelId: 'triage-model', responses: [transfer()] });
    const billingModel = createMockModel({ modelId: 'billing-model', responses: [{ text: 'Done.' }] });
    const prices = { 'mock:triage-model': { input: 1, output: 1 }, 'mock:billing-model': { input: 2, output: 2 } };
    const execution = createExecutionContext({ prices, budget: { usd: 100 } });
    const result = await runAgent(triageOptions(triage, billingAgent(billingModel, { refunds: [], lookups: [] }), { execution }));
    expect(result.status).toBe('completed');
    const entries = await execution.ledger.entries();
    expect(entries.map((e) => [e.model, e.status])).toEqual([['mock:triage-model', 'committed'], ['mock:billing-model', 'committed']]);
  });

  it('a target\'s model fails over to the target\'s fallback, and the record says so', async () => {
    const triage = createMockModel({ modelId: 'triage-model', responses: [transfer()] });
    const billingModel = createMockModel({ modelId: 'billing-model', responses: [{ error: { status: 503, message: 'unavailable' } }] });
    const spare = createMockModel({ modelId: 'billing-spare', responses: [{ text: 'Spare here.' }] });
    const store = createInMemoryAgentRunStore();
    const result = await runAgent(triageOptions(triage, billingAgent(billingModel, { refunds: [], lookups: [] }, { fallbackModels: [spare], maxRetries: 0 }), {
      session: { store, runId: 'fo', scope: 't' },
    }));
    expect(result.status).toBe('completed');
    expect(result.text).toBe('Spare here.');
    expect(result.warnings.map((w) => w.setting)).toContain('fallbackModels');
    const record = (await store.load('fo', { scope: 't' }))!;
    expect(record.models).toMatchObject({ selected: { modelId: 'billing-spare' }, failovers: [{ failed: { modelId: 'billing-model' }, next: { modelId: 'billing-spare' } }] });
  });
});

describe('the fail-over record after a handoff', () => {
  it('a run that keeps one says it calls the target\'s model now', async () => {
    const store = createInMemoryAgentRunStore();
    const triage = createMockModel({ modelId: 'triage-model', responses: [transfer()] });
    const billingModel = createMockModel({ modelId: 'billing-model', responses: [{ text: 'Done.' }] });
    const result = await runAgent(triageOptions(triage, billingAgent(billingModel, { refunds: [], lookups: [] }), {
      fallbackModels: [quiet('triage-spare')], session: { store, runId: 'sel', scope: 't' },
    }));
    expect(result.status).toBe('completed');
    expect((await store.load('sel', { scope: 't' }))!.models).toMatchObject({ selected: { modelId: 'billing-model' }, failovers: [] });
  });
});

describe('names', () => {
  it('an Agent whose name makes no tool name runs as before without handoffs, and as the root of handoffs', async () => {
    const plain = new Agent({ name: 'Support Bot', model: createMockModel({ responses: [{ text: 'Hi.' }] }) });
    expect((await plain.run({ prompt: 'Hello.' })).status).toBe('completed');
    const root = new Agent({
      name: 'Support Bot',
      model: createMockModel({ modelId: 'triage-model', responses: [transfer()] }),
      handoffs: [{ name: 'billing', model: createMockModel({ modelId: 'billing-model', responses: [{ text: 'Billing.' }] }) }],
    });
    const result = await root.run({ prompt: 'Hello.' });
    expect(result.outputText).toBe('Billing.');
  });
});

/** A changed binding says which part changed, without values; the message stays the contract's. */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentOptions, type AgentTools } from 'cairn/agent';
import { resumeHeadless } from 'cairn/headless';
import { createMockModel } from 'cairn/testing';

const tools = (): AgentTools => ({
  deploy: { description: 'Deploy.', parameters: { type: 'object', properties: { env: { type: 'string' } } }, needsApproval: true, execute: () => 'ok' },
  audit: { description: 'Audit.', parameters: { type: 'object', properties: {} }, execute: () => 'ok' },
});

async function suspended(store = createInMemoryAgentRunStore()) {
  const options = {
    model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'deploy', args: { env: 'eu' } }] }] }),
    tools: tools(), prompt: 'Deploy.', maxSteps: 5, session: { store, runId: 'b', scope: 's' },
  } satisfies AgentOptions;
  expect((await runAgent(options)).status).toBe('suspended');
  return { store, options, before: await store.load('b') };
}

describe('a binding change', () => {
  it.each([
    ['the model', (o: AgentOptions) => ({ ...o, model: createMockModel({ modelId: 'other', responses: [] }) }), ['the model']],
    ['a tool\'s schema', (o: AgentOptions) => ({ ...o, tools: { ...tools(), deploy: { ...tools().deploy!, parameters: { type: 'object', properties: { region: { type: 'string' } } } } } }), ['tool deploy: its parameters schema']],
    ['a tool\'s description', (o: AgentOptions) => ({ ...o, tools: { ...tools(), audit: { ...tools().audit!, description: 'Audit it all.' } } }), ['tool audit: its description, output schema, replay, approval or client flag']],
    ['a new tool', (o: AgentOptions) => ({ ...o, tools: { ...tools(), rollback: { parameters: { type: 'object' }, execute: () => 'x' } } }), ['tool rollback was added']],
    ['a limit', (o: AgentOptions) => ({ ...o, maxSteps: 9 }), ['limit maxSteps']],
    ['the output schema', (o: AgentOptions) => ({ ...o, output: { schema: { type: 'object' }, validate: (v: unknown) => v } }) as AgentOptions, ['the output schema', 'limit outputMode']],
  ])('names %s, keeps the contract message, and writes nothing', async (_name, change, details) => {
    const { store, options, before } = await suspended();
    const result = await resumeAgent({ ...change(options), session: options.session });
    expect(result.status).toBe('failed');
    if (result.status !== 'failed') return;
    expect(result.error.message).toBe('Native agent binding changed across resume.');
    expect(result.error.details).toEqual(details);
    // No value of the change is shown.
    expect(JSON.stringify(result.error)).not.toMatch(/region|Audit it all|\b9\b/);
    expect(await store.load('b')).toEqual(before);
  });

  it('reaches the headless report', async () => {
    const store = createInMemoryAgentRunStore();
    await suspended(store);
    const report = await resumeHeadless({ model: createMockModel({ modelId: 'other', responses: [] }), tools: tools(), store, runId: 'b', scope: 's', maxSteps: 5 });
    expect(report.outcome).toBe('failed');
    expect(report.error?.details).toEqual(['the model']);
  });
});

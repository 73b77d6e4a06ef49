/**
 * Sampling requests from a server (`sampling/createMessage`): refused unless
 * the run turns sampling on; then admitted as a model call of the run (the
 * execution policy's model allowlist, a budget reservation) and charged to
 * the run's ledger.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { runAgent, type AgentResult } from 'cairn/agent';
import { createExecutionContext } from 'cairn/policy';
import { createMockModel } from 'cairn/testing';
import { cleanDirs, notesServer, world } from './helpers.js';

afterAll(cleanDirs);

const ask = { toolCalls: [{ toolName: 'notes__ask_model', args: { question: 'Capital of France?' } }] };
const toolAnswers = (result: AgentResult<string>) => result.messages.filter((m) => m.role === 'tool').map((m) => m.content);

describe('MCP sampling', () => {
  it('is off by default: the client does not offer it, and answers a request with Method not found', async () => {
    const { effects } = world('sampling-off');
    const result = await runAgent({
      model: createMockModel({ responses: [ask, { text: 'No answer.' }] }), prompt: 'x', mcp: { servers: [notesServer(effects)] },
    });
    expect(result.status).toBe('completed');
    // The client offers no sampling capability and has no handler for the request: JSON-RPC's Method not found.
    expect(String(toolAnswers(result)[0])).toContain('MCP error -32601: Method not found');
  });

  it('when on, answers with the sampling model, its request taken from the server (system prompt, messages, maxTokens capped)', async () => {
    const { effects } = world('sampling-on');
    const sampler = createMockModel({ modelId: 'sampler', responses: [{ text: 'Paris' }] });
    const result = await runAgent({
      model: createMockModel({ responses: [ask, { text: 'Paris it is.' }] }), prompt: 'x',
      mcp: { servers: [notesServer(effects)], sampling: { model: sampler, maxTokens: 20 } },
    });
    expect(toolAnswers(result)).toEqual(['the model said: Paris']);
    expect(sampler.calls).toHaveLength(1);
    expect(sampler.calls[0]!.messages).toEqual([
      { role: 'system', content: 'Answer in one word.' },
      { role: 'user', content: 'Capital of France?' },
    ]);
    // The server asked for 50 tokens; the run allows 20.
    expect(sampler.calls[0]!.settings?.maxOutputTokens).toBe(20);
  });

  it("is admitted through the run's budget and charged to its ledger", async () => {
    const { effects } = world('sampling-budget');
    const execution = createExecutionContext({ budget: { tokens: 1_000_000 } });
    const sampler = createMockModel({ modelId: 'sampler', responses: [{ text: 'Paris', usage: { inputTokens: 30, outputTokens: 7, totalTokens: 37 } }] });
    const result = await runAgent({
      model: createMockModel({ responses: [ask, { text: 'Paris it is.' }] }), prompt: 'x', execution,
      mcp: { servers: [notesServer(effects)], sampling: { model: sampler } },
    });
    expect(result.status).toBe('completed');
    const entries = await execution.ledger.entries(execution.path);
    const sampled = entries.filter((e) => e.model === 'mock:sampler');
    expect(sampled).toHaveLength(1);
    expect(sampled[0]).toMatchObject({ status: 'committed', tokens: 37 });
    const totals = await execution.accounting();
    expect(totals.committed.tokens).toBe(entries.reduce((sum, e) => sum + (e.status === 'committed' ? e.tokens ?? 0 : 0), 0));
    expect(totals.committed.tokens).toBeGreaterThanOrEqual(37 + result.usage.totalTokens);
  });

  it('is refused when the execution policy does not allow the sampling model: the server is told, the run warns', async () => {
    const { effects } = world('sampling-policy');
    const execution = createExecutionContext({ allowedModels: ['mock:mock-model'] });
    const sampler = createMockModel({ modelId: 'sampler', responses: [{ text: 'Paris' }] });
    const result = await runAgent({
      model: createMockModel({ responses: [ask, { text: 'Refused.' }] }), prompt: 'x', execution,
      mcp: { servers: [notesServer(effects)], sampling: { model: sampler } },
    });
    expect(result.status).toBe('completed');
    expect(sampler.calls).toHaveLength(0);
    expect(String(toolAnswers(result)[0])).toContain('the execution policy does not allow the model mock:sampler');
    expect(result.warnings.find((w) => w.setting === 'mcp')?.message).toContain('MCP server notes asked for sampling; refused');
  });
});

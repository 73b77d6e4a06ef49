/**
 * The execution policy on a run, through the public entry points: the batch
 * decided first (before guardrails, approvals or any sibling), requireApproval,
 * the model allowlist (fallbacks included), the context's deadline, the resume
 * settle deciding again, and what a verifier is handed.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, streamAgent, type AgentTool } from 'cairn/agent';
import { createExecutionContext } from 'cairn/policy';
import { createMockModel } from 'cairn/testing';

const sleep = async () => undefined;
const tool = (calls: string[], name: string, extra: Partial<AgentTool> = {}): AgentTool => ({
  description: name,
  parameters: { type: 'object', properties: {} },
  execute: () => {
    calls.push(name);
    return `${name} done`;
  },
  ...extra,
});
const session = (runId: string, store = createInMemoryAgentRunStore()) => ({ store, runId, scope: 'tenant-a' });

describe('the batch policy', () => {
  it('fails the run on a forbidden call before any guardrail, approval or sibling', async () => {
    const ran: string[] = [];
    const guarded: string[] = [];
    const model = createMockModel({
      responses: [{ toolCalls: [{ toolCallId: 'a', toolName: 'search', args: {} }, { toolCallId: 'b', toolName: 'deploy', args: {} }] }],
    });
    const stream = streamAgent({
      model,
      prompt: 'Search, then deploy.',
      tools: { search: tool(ran, 'search'), deploy: tool(ran, 'deploy', { needsApproval: true }) },
      onToolCall: ({ toolName }) => void guarded.push(toolName),
      execution: createExecutionContext({ allowedTools: ['search'] }),
      session: session('forbidden'),
    });
    const events = [];
    for await (const event of stream.events) events.push(event);
    const result = await stream.result;
    expect(result.status).toBe('failed');
    if (result.status !== 'failed') return;
    expect(result.error).toMatchObject({ name: 'ExecutionPolicyError', code: 'tool_not_allowed', toolCallId: 'b' });
    expect(ran).toEqual([]);
    expect(guarded).toEqual([]);
    expect(events.filter((e) => e.type === 'approval-request' || e.type === 'tool-call-start')).toEqual([]);
  });

  it('lets an allowed batch run, and answers a tool the run does not offer as not available', async () => {
    const ran: string[] = [];
    const model = createMockModel({
      responses: [
        { toolCalls: [{ toolCallId: 'a', toolName: 'search', args: {} }, { toolCallId: 'b', toolName: 'missing', args: {} }] },
        { text: 'Done.' },
      ],
    });
    const result = await runAgent({
      model, prompt: 'Search.', tools: { search: tool(ran, 'search') }, execution: createExecutionContext({ allowedTools: ['search'] }),
    });
    expect(result.status).toBe('completed');
    expect(ran).toEqual(['search']);
  });

  it('holds a tool for approval when the context requires it, whatever the tool says', async () => {
    const ran: string[] = [];
    const store = createInMemoryAgentRunStore();
    const options = {
      model: createMockModel({ responses: [{ toolCalls: [{ toolCallId: 'a', toolName: 'deploy', args: {} }] }, { text: 'Deployed.' }] }),
      prompt: 'Deploy.',
      tools: { deploy: tool(ran, 'deploy') },
      execution: createExecutionContext({ requireApproval: ['deploy'] }),
      session: session('approve', store),
    };
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    expect(ran).toEqual([]);
    if (first.status !== 'suspended') return;
    const approvalResponses = first.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true }));
    const second = await resumeAgent({ ...options, approvalResponses });
    expect(second.status).toBe('completed');
    expect(ran).toEqual(['deploy']);
  });

  it('decides again in the resume settle: an approved call the context now forbids fails the run and never runs', async () => {
    const ran: string[] = [];
    const store = createInMemoryAgentRunStore();
    const options = {
      model: createMockModel({ responses: [{ toolCalls: [{ toolCallId: 'a', toolName: 'deploy', args: {} }] }] }),
      prompt: 'Deploy.',
      tools: { deploy: tool(ran, 'deploy', { needsApproval: true }) },
      session: session('settle', store),
    };
    const first = await runAgent(options);
    if (first.status !== 'suspended') throw new Error('expected a suspension');
    const approvalResponses = first.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true }));
    const second = await resumeAgent({ ...options, approvalResponses, execution: createExecutionContext({ allowedTools: ['search'] }) });
    expect(second.status).toBe('failed');
    if (second.status === 'failed') expect(second.error).toMatchObject({ code: 'tool_not_allowed', toolCallId: 'a' });
    expect(ran).toEqual([]);
    expect((await store.load('settle'))?.status).toBe('failed');
  });
});

describe('the model allowlist', () => {
  it('refuses a model outside it before the call', async () => {
    const model = createMockModel({ modelId: 'big', responses: [{ text: 'never' }] });
    const result = await runAgent({ model, prompt: 'Hi.', execution: createExecutionContext({ allowedModels: ['mock:small'] }) });
    expect(result.status).toBe('failed');
    if (result.status === 'failed') {
      expect(result.error).toMatchObject({ name: 'ExecutionPolicyError', code: 'model_not_allowed' });
      expect(result.retry).toBeUndefined();
    }
    expect(model.calls).toHaveLength(0);
  });

  it('refuses a fallback outside it instead of failing over to it', async () => {
    const primary = createMockModel({ modelId: 'primary', strict: false, responses: [{ error: { status: 503 } }] });
    const fallback = createMockModel({ modelId: 'fallback', responses: [{ text: 'never' }] });
    const result = await runAgent({
      model: primary, fallbackModels: [fallback], prompt: 'Hi.', maxRetries: 0, deps: { sleep },
      execution: createExecutionContext({ allowedModels: ['mock:primary'] }),
    });
    expect(result.status === 'failed' && result.error.code).toBe('model_not_allowed');
    expect(primary.calls).toHaveLength(1);
    expect(fallback.calls).toHaveLength(0);
  });
});

describe('the context\'s deadline and the verifier', () => {
  it('a context deadline that passed fails the run before the model call', async () => {
    const model = createMockModel({ responses: [{ text: 'never' }] });
    const clock = { now: () => 5_000 };
    const result = await runAgent({ model, prompt: 'Hi.', deps: { clock }, execution: createExecutionContext({ deadline: 4_000 }) });
    expect(result.status === 'failed' && result.error.code).toBe('deadline_exceeded');
    expect(model.calls).toHaveLength(0);
  });

  it('a verifier receives the run\'s execution and signal (a private context without one)', async () => {
    const execution = createExecutionContext({ allowedTools: [] });
    const seen: unknown[] = [];
    const verify = ({ execution: e, signal }: { execution: unknown; signal: AbortSignal }) => {
      seen.push(e, signal instanceof AbortSignal);
      return { status: 'verified' as const };
    };
    await runAgent({ model: createMockModel({ responses: [{ text: 'A.' }] }), prompt: 'Hi.', verify, execution });
    expect(seen).toEqual([execution, true]);
    seen.length = 0;
    await runAgent({ model: createMockModel({ responses: [{ text: 'A.' }] }), prompt: 'Hi.', verify });
    expect((seen[0] as { path?: string }).path).toBe('root');
    expect(seen[0]).not.toBe(execution);
  });

  it('refuses an execution that is not a context', async () => {
    const result = await runAgent({ model: createMockModel({ responses: [] }), prompt: 'Hi.', execution: { path: 'root' } as never });
    expect(result.status === 'failed' && result.error.code).toBe('invalid_options');
  });
});

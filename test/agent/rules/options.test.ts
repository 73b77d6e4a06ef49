/**
 * Rule 5 (tool context and supported options): what a tool's ctx holds,
 * toolsContext validation and privacy, the deadline and the abort signal.
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, type AgentTool, type Message, type ResumeOptions } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { countingTool, counter, emptyParams, fixedDeps, recordingStore, standardSchema } from './helpers.js';

const SECRET = 'tenant-secret-5f1c';

describe('tool context', () => {
  it('hands execute toolCallId, modelStep, the messages up to the calling turn, a live signal and the context', async () => {
    const seen: Array<{ toolCallId: string; modelStep: number; messages: Message[]; aborted: boolean; isSignal: boolean; context: unknown }> = [];
    const note: AgentTool = {
      description: 'Take a note.',
      parameters: emptyParams,
      execute: (_args, ctx) => {
        seen.push({
          toolCallId: ctx.toolCallId,
          modelStep: ctx.modelStep,
          messages: JSON.parse(JSON.stringify(ctx.messages)) as Message[],
          aborted: ctx.signal.aborted,
          isSignal: ctx.signal instanceof AbortSignal,
          context: ctx.context,
        });
        return 'noted';
      },
    };
    const model = createMockModel({
      responses: [
        { toolCalls: [{ toolName: 'note', args: {}, toolCallId: 'call_a' }] },
        { toolCalls: [{ toolName: 'note', args: {}, toolCallId: 'call_b' }] },
        { text: 'Two notes.' },
      ],
    });
    const result = await runAgent({
      model, prompt: 'Take two notes.', tools: { note }, toolsContext: { note: { user: 'u1' } }, deps: fixedDeps(),
    });
    expect(result.status).toBe('completed');
    expect(seen.map((s) => [s.toolCallId, s.modelStep, s.aborted, s.isSignal, s.context])).toEqual([
      ['call_a', 0, false, true, { user: 'u1' }],
      ['call_b', 1, false, true, { user: 'u1' }],
    ]);
    expect(seen[0]!.messages).toEqual([
      { role: 'user', content: 'Take two notes.' },
      { role: 'assistant', content: '', toolCalls: [{ toolCallId: 'call_a', toolName: 'note', args: {} }] },
    ]);
    expect(seen[1]!.messages).toHaveLength(4);
    expect(seen[1]!.messages[2]).toMatchObject({ role: 'tool', toolCallId: 'call_a', content: 'noted' });
    expect(seen[1]!.messages[3]).toMatchObject({ role: 'assistant', toolCalls: [{ toolCallId: 'call_b' }] });
  });

  it('hands execute the value contextSchema returned, not the raw toolsContext entry', async () => {
    const contexts: unknown[] = [];
    const tool: AgentTool = {
      description: 'Uses a context.',
      parameters: emptyParams,
      contextSchema: standardSchema((v) => {
        const c = v as { apiBase?: unknown };
        return typeof c?.apiBase === 'string' ? { value: { apiBase: c.apiBase.toUpperCase() } } : { issues: [{ message: 'apiBase is required' }] };
      }),
      execute: (_a, ctx) => {
        contexts.push(ctx.context);
        return 'ok';
      },
    };
    const result = await runAgent({
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'tool', args: {} }] }, { text: 'ok' }] }),
      prompt: 'go', tools: { tool }, toolsContext: { tool: { apiBase: 'abc' } }, deps: fixedDeps(),
    });
    expect(result.status).toBe('completed');
    expect(contexts).toEqual([{ apiBase: 'ABC' }]);
  });

  for (const [what, tool] of [
    ['contextSchema', {
      contextSchema: standardSchema((v) => (typeof (v as { key?: unknown })?.key === 'string' ? { value: v } : { issues: [{ message: 'key is required' }] })),
    }],
    ['validateContext', {
      validateContext: (v: unknown) => {
        if (typeof (v as { key?: unknown })?.key !== 'string') throw new Error('key is required');
        return v;
      },
    }],
  ] as const) {
    it(`fails with tool_context_invalid, before any model call or save, when ${what} rejects the entry`, async () => {
      const store = recordingStore();
      const model = createMockModel({ responses: [{ text: 'never' }] });
      const keyed = countingTool('ok', tool as Partial<AgentTool>);
      const result = await runAgent({
        model,
        prompt: 'go',
        tools: { keyed },
        toolsContext: { keyed: { key: 42 } },
        session: { store, runId: 'ctx-1', scope: 's' },
        deps: fixedDeps(),
      });
      expect(result.status).toBe('failed');
      if (result.status === 'failed') expect(result.error.code).toBe('tool_context_invalid');
      expect(model.calls).toHaveLength(0);
      expect(store.attempts()).toBe(0);
      expect(await store.load('ctx-1')).toBeUndefined();
      expect(keyed.runs).toHaveLength(0);
    });
  }

  it('never puts toolsContext values into a stored envelope or a model request', async () => {
    const store = recordingStore();
    const ctxSeen: unknown[] = [];
    const charge = countingTool('charged', {
      needsApproval: (_args: unknown, ctx) => {
        ctxSeen.push(ctx.context);
        return true;
      },
      execute: (_args: unknown, ctx) => {
        ctxSeen.push(ctx.context);
        return 'charged';
      },
    });
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'charge', args: { amount: 3 } }] }, { text: 'Charged.' }] });
    const options = {
      model,
      prompt: 'Charge.',
      tools: { charge: charge as AgentTool },
      toolsContext: { charge: { apiKey: SECRET } },
      session: { store, runId: 'ctx-2', scope: 's' },
      deps: fixedDeps(),
    } satisfies ResumeOptions;
    const first = await runAgent(options);
    if (first.status !== 'suspended') throw new Error(first.status);
    const p = first.pendingApprovals[0]!;
    const done = await resumeAgent({ ...options, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: true }] });
    expect(done.status).toBe('completed');
    expect(ctxSeen).toContainEqual({ apiKey: SECRET });
    expect(store.saved.length).toBeGreaterThan(0);
    for (const envelope of store.saved) expect(envelope).not.toContain(SECRET);
    expect(JSON.stringify(model.calls)).not.toContain(SECRET);
    expect(JSON.stringify(done)).not.toContain(SECRET);
  });
});

describe('deadline and cancellation', () => {
  it('fails with deadline_exceeded, and does not run the tool, when the deadline passes before the call', async () => {
    let now = 1000;
    const lookup = countingTool();
    const model = createMockModel({
      responses: [
        () => {
          now = 5000; // The model answered after the deadline.
          return { toolCalls: [{ toolName: 'lookup', args: {} }] };
        },
        { text: 'never' },
      ],
    });
    const result = await runAgent({
      model, prompt: 'go', tools: { lookup }, deadline: 2000, deps: { clock: { now: () => now }, generateId: counter() },
    });
    expect(result.status).toBe('failed');
    if (result.status === 'failed') expect(result.error.code).toBe('deadline_exceeded');
    expect(lookup.runs).toHaveLength(0);
    expect(model.calls).toHaveLength(1);
  });

  it('fails with deadline_exceeded without a model call when the deadline already passed', async () => {
    const model = createMockModel({ responses: [{ text: 'never' }] });
    const result = await runAgent({ model, prompt: 'go', deadline: 999, deps: fixedDeps() });
    expect(result.status).toBe('failed');
    if (result.status === 'failed') expect(result.error.code).toBe('deadline_exceeded');
    expect(model.calls).toHaveLength(0);
  });

  it("stops with reason 'aborted', without a model call, when the signal is already aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    const model = createMockModel({ responses: [{ text: 'never' }] });
    const result = await runAgent({ model, prompt: 'go', abortSignal: controller.signal, deps: fixedDeps() });
    expect(result.status).toBe('stopped');
    if (result.status === 'stopped') expect(result.reason).toBe('aborted');
    expect(model.calls).toHaveLength(0);
  });

  it("stops with reason 'aborted' and does not run the tool when the signal aborts before the call is admitted", async () => {
    const controller = new AbortController();
    const lookup = countingTool();
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'lookup', args: {} }] }, { text: 'never' }] });
    const result = await runAgent({
      model,
      prompt: 'go',
      tools: { lookup },
      abortSignal: controller.signal,
      onToolCall: () => {
        controller.abort();
      },
      deps: fixedDeps(),
    });
    expect(result.status).toBe('stopped');
    if (result.status === 'stopped') expect(result.reason).toBe('aborted');
    expect(lookup.runs).toHaveLength(0);
    expect(model.calls).toHaveLength(1);
  });

  it("aborts the tool's ctx.signal and stops with reason 'aborted' when the run is cancelled during the tool", async () => {
    const controller = new AbortController();
    let toolSignal: AbortSignal | undefined;
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'wait', args: {} }] }, { text: 'never' }] });
    const result = await runAgent({
      model,
      prompt: 'go',
      tools: {
        wait: {
          description: 'Waits for cancellation.',
          parameters: emptyParams,
          execute: (_a, ctx) => {
            toolSignal = ctx.signal;
            setTimeout(() => controller.abort(), 5);
            return new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('cancelled'), { once: true }));
          },
        },
      },
      abortSignal: controller.signal,
      deps: fixedDeps(),
    });
    expect(toolSignal?.aborted).toBe(true);
    expect(result.status).toBe('stopped');
    if (result.status === 'stopped') expect(result.reason).toBe('aborted');
    expect(model.calls).toHaveLength(1);
  });
});

describe('model settings', () => {
  it('sends temperature, topP, effort and promptCaching with every call, and toolChoice on loop steps', async () => {
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'look', args: {} }] }, { text: 'done' }] });
    const result = await runAgent({
      model, prompt: 'x', temperature: 0.3, topP: 0.9, effort: 'low', promptCaching: true, toolChoice: 'required',
      tools: { look: { parameters: emptyParams, execute: () => 'seen' } },
      prepareStep: ({ messages }) => (messages.some((m) => m.role === 'tool') ? { toolChoice: 'none' } : undefined),
    });
    expect(result.status).toBe('completed');
    expect(model.calls.map((c) => c.settings)).toEqual([
      { temperature: 0.3, topP: 0.9, effort: 'low', promptCaching: true },
      { temperature: 0.3, topP: 0.9, effort: 'low', promptCaching: true },
    ]);
    expect(model.calls.map((c) => c.toolChoice)).toEqual(['required', 'none']);
  });

  it('sends no settings when the run sets none', async () => {
    const model = createMockModel({ responses: [{ text: 'done' }] });
    await runAgent({ model, prompt: 'x' });
    expect(model.calls[0]!.settings).toBeUndefined();
    expect(model.calls[0]!.toolChoice).toBe('auto');
  });

  it.each([
    [{ temperature: -1 }, 'temperature'],
    [{ temperature: Number.NaN }, 'temperature'],
    [{ topP: 0 }, 'topP'],
    [{ topP: 1.5 }, 'topP'],
    [{ effort: 'extreme' }, 'effort'],
    [{ promptCaching: 'yes' }, 'promptCaching'],
    [{ toolChoice: { toolName: 'missing' } }, 'toolChoice'],
    [{ toolChoice: 'sometimes' }, 'toolChoice'],
  ])('refuses %j before any call', async (bad, name) => {
    const store = recordingStore();
    const model = createMockModel({ responses: [{ text: 'never' }] });
    const result = await runAgent({ model, prompt: 'x', session: { store, runId: 'r', scope: 's' }, ...(bad as object) });
    expect(result.status).toBe('failed');
    if (result.status === 'failed') {
      expect(result.error.code).toBe('invalid_options');
      expect(result.error.message).toContain(name);
    }
    expect(model.calls).toHaveLength(0);
    expect(store.attempts()).toBe(0);
  });
});

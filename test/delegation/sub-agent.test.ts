/**
 * Sub-agents (agentTool): the child run is a normal durable run in the same
 * store and scope, with its own derived id and its parent named; its
 * approvals suspend the root and the root's resume settles them; it gets no
 * memory; bad definitions are typed errors with nothing run.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Agent, agentTool, childRunIdOf, SubAgentError, tool } from 'cairn';
import { createInMemoryAgentRunStore, runAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { z } from 'zod';
import { leadScript, researcherScript, STORES, world } from './sub-agent-helpers.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

for (const backend of STORES) {
  describe(`sub-agents on ${backend.name}`, () => {
    it('runs the child under its derived id in the same store and scope; the parent model sees its answer', async () => {
      const { store, close } = backend.open();
      cleanups.push(close);
      const w = world();
      const leadModel = leadScript();
      const lead = w.lead(leadModel, w.researcher(researcherScript()));
      const result = await lead.run({ prompt: 'Explain tides.', store, runId: 'root-1', scope: 'tenant-a' });
      expect(result.status).toBe('completed');
      expect(result.outputText).toBe('Because of the moon.');
      expect(w.effects).toEqual(['tides']);
      // The parent's model got the child's final text as the call's result.
      const toolMessage = leadModel.calls[1]!.messages.find((m) => m.role === 'tool');
      expect(toolMessage).toMatchObject({ toolName: 'research', content: 'Tides follow the moon.' });
      const root = (await store.load('root-1', { scope: 'tenant-a' }))!;
      const call = Object.values(root.receipts).find((r) => r.toolName === 'research')!;
      const childId = childRunIdOf('root-1', call.modelStep, call.toolCallId);
      expect(call).toMatchObject({ status: 'completed', idempotent: true, child: { runId: childId } });
      const child = (await store.load(childId, { scope: 'tenant-a' }))!;
      expect(child.status).toBe('completed');
      expect(child.binding.parent).toEqual({ runId: 'root-1', toolCallId: call.toolCallId, modelStep: 0, tool: 'research', depth: 1 });
      // The child's effect has its own receipt in the child's record.
      expect(Object.values(child.receipts)).toEqual([expect.objectContaining({ toolName: 'lookup', status: 'completed' })]);
    });

    it("a child's approval suspends the root; the root's resume reaches the child, which runs the effect once", async () => {
      const { store, reopen, close } = backend.open();
      cleanups.push(close);
      const w = world({ gated: true });
      const first = await w.lead(leadScript(), w.researcher(researcherScript())).run({ prompt: 'Explain tides.', store, runId: 'root-2' });
      expect(first.status).toBe('suspended');
      expect(w.effects).toEqual([]);
      const [pending] = first.pendingApprovals;
      expect(pending).toMatchObject({ toolName: 'lookup', runId: expect.stringMatching(/^sub_/) });
      const rootRecord = (await store.load('root-2'))!;
      const call = rootRecord.pendingApprovals[0]!;
      expect(call).toMatchObject({ toolName: 'lookup', args: { q: 'tides' }, runId: expect.stringMatching(/^sub_/) });
      expect(rootRecord.status).toBe('suspended');
      const childRecord = (await store.load(call.runId!))!;
      expect(childRecord.status).toBe('suspended');

      // Another process: fresh agents whose models continue where the first left off.
      const leadRest = createMockModel({ responses: [{ text: 'Because of the moon.' }] });
      const researcherRest = createMockModel({ responses: [{ text: 'Tides follow the moon.' }] });
      const later = w.lead(leadRest, w.researcher(researcherRest));
      const second = await later.run({
        runId: 'root-2', store: reopen(), approvalResponses: [{ approvalId: pending!.approvalId, approved: true, token: pending!.token }],
      });
      expect(second.status).toBe('completed');
      expect(second.outputText).toBe('Because of the moon.');
      expect(w.effects).toEqual(['tides']);
      expect((await reopen().load(call.runId!))!.status).toBe('completed');
      // Again: the ended run answers from its record; nothing runs twice.
      const third = await later.run({ runId: 'root-2', store: reopen() });
      expect(third.status).toBe('completed');
      expect(w.effects).toEqual(['tides']);
    });

    it('without the verdict the root stays suspended and nothing is written', async () => {
      const { store, close } = backend.open();
      cleanups.push(close);
      const w = world({ gated: true });
      const first = await w.lead(leadScript(), w.researcher(researcherScript())).run({ prompt: 'Explain tides.', store, runId: 'root-3' });
      const revision = (await store.load('root-3'))!.revision;
      const again = await w.lead(createMockModel({ responses: [] }), w.researcher(createMockModel({ responses: [] }))).run({ runId: 'root-3', store });
      expect(again.status).toBe('suspended');
      expect(again.pendingApprovals.map((p) => p.approvalId)).toEqual(first.pendingApprovals.map((p) => p.approvalId));
      expect((await store.load('root-3'))!.revision).toBe(revision);
      expect(w.effects).toEqual([]);
    });

    it('a denial reaches the child: its model hears it, and the parent completes with its answer', async () => {
      const { store, close } = backend.open();
      cleanups.push(close);
      const w = world({ gated: true });
      const first = await w.lead(leadScript(), w.researcher(researcherScript())).run({ prompt: 'Explain tides.', store, runId: 'root-4' });
      const [pending] = first.pendingApprovals;
      const researcherRest = createMockModel({ responses: [{ text: 'I was not allowed to look.' }] });
      const leadRest = createMockModel({ responses: [{ text: 'No research today.' }] });
      const second = await w.lead(leadRest, w.researcher(researcherRest)).run({
        runId: 'root-4', store, approvalResponses: [{ approvalId: pending!.approvalId, approved: false, token: pending!.token, reason: 'no' }],
      });
      expect(second.status).toBe('completed');
      expect(w.effects).toEqual([]);
      expect(researcherRest.calls[0]!.messages.at(-1)).toMatchObject({ role: 'tool', content: 'Tool call denied. Reason: no' });
      expect(leadRest.calls[0]!.messages.at(-1)).toMatchObject({ role: 'tool', content: 'I was not allowed to look.' });
    });
  });
}

describe('what a sub-agent inherits', () => {
  it("the parent's guardrails see the child's calls; the child's budget is the parent's ledger (a child context)", async () => {
    const { createExecutionContext } = await import('cairn/policy');
    const seen: string[] = [];
    const execution = createExecutionContext({ name: 'root', budget: { tokens: 1_000_000 } });
    const w = world();
    const store = createInMemoryAgentRunStore();
    const researcher = w.researcher(researcherScript());
    const lead = w.lead(leadScript(), researcher);
    const result = await runAgent({
      ...lead.engineOptions('root-g', {}),
      prompt: 'Explain tides.', session: { store, runId: 'root-g', scope: 'default' }, execution,
      onToolCall: ({ toolName }) => {
        seen.push(toolName);
      },
    });
    expect(result.status).toBe('completed');
    expect(seen).toEqual(['research', 'lookup']);
    const entries = await execution.ledger.entries();
    // Two model calls of the root, two of the child under root/research.
    expect(entries.filter((e) => e.scope === 'root').length).toBe(2);
    expect(entries.filter((e) => e.scope === 'root/research').length).toBe(2);
    const childId = Object.values((await store.load('root-g'))!.receipts)[0]!.child!.runId;
    expect((await store.load(childId))!.ledger?.scope).toBe('root/research');
  });

  it('a parent guardrail that blocks a child call blocks it in the child', async () => {
    const w = world();
    const lead = w.lead(leadScript(), w.researcher(createMockModel({ responses: [
      { toolCalls: [{ toolName: 'lookup', args: { q: 'tides' } }] },
      { text: 'Blocked.' },
    ] })));
    const result = await runAgent({
      ...lead.engineOptions('root-b', {}), prompt: 'Explain tides.',
      session: { store: createInMemoryAgentRunStore(), runId: 'root-b', scope: 'default' },
      onToolCall: ({ toolName }) => (toolName === 'lookup' ? { action: 'block', reason: 'not from here' } : undefined),
    });
    expect(result.status).toBe('completed');
    expect(w.effects).toEqual([]);
  });

  it('a sub-agent gets no memory and no chat, even when its agent has them', async () => {
    const { createInMemoryMemoryStore } = await import('cairn/memory').catch(() => ({ createInMemoryMemoryStore: undefined }));
    const w = world();
    const memoryLike = { store: (createInMemoryMemoryStore as undefined | (() => unknown))?.() ?? {}, scope: { userId: 'u1' } };
    const researcher = new Agent({ name: 'researcher', model: researcherScript(), maxSteps: 4, tools: w.researcher(researcherScript()).tools as never, memory: memoryLike as never });
    const store = createInMemoryAgentRunStore();
    const result = await w.lead(leadScript(), researcher).run({ prompt: 'Explain tides.', store, runId: 'root-m' });
    expect(result.status).toBe('completed');
    const childId = Object.values((await store.load('root-m'))!.receipts)[0]!.child!.runId;
    const child = (await store.load(childId))!;
    expect(child.binding.memory).toBeUndefined();
    expect(child.memory).toBeUndefined();
  });
});

describe('bad input: typed errors, nothing run', () => {
  const leaf = () => new Agent({ name: 'leaf', model: createMockModel({ responses: [] }), tools: [] });

  it('agentTool given something that is not an Agent', () => {
    expect(() => agentTool({} as never, { name: 'x' })).toThrow(SubAgentError);
    expect(() => agentTool({ run: () => 1 } as never, { name: 'x' })).toThrow(expect.objectContaining({ code: 'agent_tool_invalid' }));
    expect(() => agentTool(leaf(), { name: 'bad name!' })).toThrow(expect.objectContaining({ code: 'agent_tool_invalid' }));
    expect(() => agentTool(leaf(), { name: 'x', maxDepth: 0 })).toThrow(expect.objectContaining({ code: 'agent_tool_invalid' }));
  });

  it('a scoped context on agentTool, at definition or through toolsContext, is refused before anything runs', async () => {
    expect(() => agentTool(leaf(), { name: 'x', contextSchema: {} } as never)).toThrow(expect.objectContaining({ code: 'agent_tool_scoped_context' }));
    expect(() => agentTool(leaf(), { name: 'x', scopedContext: true } as never)).toThrow(expect.objectContaining({ code: 'agent_tool_scoped_context' }));
    const model = createMockModel({ responses: [] });
    const store = createInMemoryAgentRunStore();
    const result = await runAgent({
      model, prompt: 'hi', tools: { x: agentTool(leaf(), { name: 'x' }) }, toolsContext: { x: { messages: [], agentPath: ['root'] } },
      session: { store, runId: 'scoped', scope: 'default' },
    });
    expect(result.status).toBe('failed');
    expect(result.status === 'failed' && result.error.code).toBe('agent_tool_scoped_context');
    expect(model.calls).toHaveLength(0);
    expect(await store.load('scoped')).toBeUndefined();
  });

  it('a sub-agent deeper than maxDepth: refused at definition, or failed before its child runs', async () => {
    let agent = leaf();
    for (let i = 0; i < 4; i++) agent = new Agent({ name: `a${i}`, model: createMockModel({ responses: [] }), tools: [agentTool(agent, { name: `t${i}` })] });
    // agent nests 5 deep (itself and 4 below): more than the default 4.
    expect(() => agentTool(agent, { name: 'deep' })).toThrow(expect.objectContaining({ code: 'subagent_depth_exceeded' }));
    expect(() => agentTool(agent, { name: 'deep', maxDepth: 5 })).not.toThrow();

    // At run time: a tool allowing depth 1 inside a child (depth 2) fails its call; the inner child never runs.
    const innerModel = createMockModel({ responses: [] });
    const inner = new Agent({ name: 'inner', model: innerModel, tools: [] });
    const middle = new Agent({ name: 'middle', model: createMockModel({ responses: [
      { toolCalls: [{ toolName: 'deeper', args: { input: 'go' } }] },
      { text: 'could not go deeper' },
    ] }), tools: [agentTool(inner, { name: 'deeper', maxDepth: 1 })] });
    const top = new Agent({ name: 'top', model: createMockModel({ responses: [
      { toolCalls: [{ toolName: 'middle', args: { input: 'go' } }] },
      { text: 'done' },
    ] }), tools: [agentTool(middle, { name: 'middle' })] });
    const store = createInMemoryAgentRunStore();
    const result = await top.run({ prompt: 'go', store, runId: 'deep-root' });
    expect(result.status).toBe('completed');
    expect(innerModel.calls).toHaveLength(0);
    const middleId = Object.values((await store.load('deep-root'))!.receipts)[0]!.child!.runId;
    const middleRecord = (await store.load(middleId))!;
    const failed = Object.values(middleRecord.receipts)[0]!;
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'subagent_depth_exceeded' } });
    expect(await store.load(failed.child!.runId)).toBeUndefined();
  });

  it("duplicate tool names with the parent's tools are refused", () => {
    const other = tool({ name: 'research', schema: z.object({}), execute: () => 'x' });
    expect(() => new Agent({ model: createMockModel({ responses: [] }), tools: [other, agentTool(leaf(), { name: 'research' })] }))
      .toThrow(expect.objectContaining({ code: 'tool_name_duplicate' }));
  });

  it("a sub-agent with a client tool is refused (its tools run on the server)", () => {
    const clientOnly = new Agent({ name: 'c', model: createMockModel({ responses: [] }), tools: { ask: { parameters: { type: 'object' } } } });
    expect(() => agentTool(clientOnly, { name: 'c' })).toThrow(expect.objectContaining({ code: 'agent_tool_invalid' }));
  });
});

describe('the hierarchy', () => {
  it("a streamed root carries the child's run views, each with its own run id and parentRunId", async () => {
    const { streamAgent } = await import('cairn/agent');
    const w = world();
    const lead = w.lead(leadScript(), w.researcher(researcherScript()));
    const store = createInMemoryAgentRunStore();
    const stream = streamAgent({ ...lead.engineOptions('root-s', {}), prompt: 'Explain tides.', session: { store, runId: 'root-s', scope: 'default' } });
    const views: { runId: string; parentRunId: string | null; status: string }[] = [];
    for await (const event of stream.events) if (event.type === 'agent-run-update') views.push(event.view);
    expect((await stream.result).status).toBe('completed');
    const childId = Object.values((await store.load('root-s'))!.receipts)[0]!.child!.runId;
    const childViews = views.filter((v) => v.runId === childId);
    expect(childViews.length).toBeGreaterThan(0);
    expect(childViews.every((v) => v.parentRunId === 'root-s')).toBe(true);
    expect(childViews.at(-1)!.status).toBe('completed');
    expect(views.filter((v) => v.runId === 'root-s').every((v) => v.parentRunId === null)).toBe(true);
  });
});

describe('describeRun and inspectRun show the hierarchy', () => {
  it('the parent lists its child runs; the child names its parent', async () => {
    const { describeRun } = await import('cairn/machines');
    const { inspectRun } = await import('cairn/headless');
    const w = world();
    const store = createInMemoryAgentRunStore();
    await w.lead(leadScript(), w.researcher(researcherScript())).run({ prompt: 'Explain tides.', store, runId: 'root-h' });
    const root = describeRun((await store.load('root-h'))!);
    expect(root.parentRunId).toBeNull();
    expect(root.childRuns).toEqual([{ runId: expect.stringMatching(/^sub_/), toolCallId: expect.any(String), toolName: 'research', modelStep: 0 }]);
    const childId = root.childRuns[0]!.runId;
    expect(describeRun((await store.load(childId))!)).toMatchObject({ parentRunId: 'root-h', childRuns: [] });
    expect(await inspectRun(store, 'root-h', { scope: 'default' })).toMatchObject({ childRuns: [{ runId: childId, toolName: 'research' }] });
    const child = await inspectRun(store, childId, { scope: 'default' });
    expect(child.parentRunId).toBe('root-h');
    expect(child.childRuns).toBeUndefined();
  });
});

describe('a child only narrows the run', () => {
  it("agentTool's execution cannot widen the parent's context: the call fails before its child runs", async () => {
    const { createExecutionContext } = await import('cairn/policy');
    const execution = createExecutionContext({ name: 'root', budget: { tokens: 100_000 } });
    const childModel = createMockModel({ responses: [] });
    const researcher = new Agent({ name: 'researcher', model: childModel, tools: [] });
    const lead = new Agent({ model: createMockModel({ responses: [
      { toolCalls: [{ toolName: 'research', args: { input: 'go' } }] },
      { text: 'It could not run.' },
    ] }), tools: [agentTool(researcher, { name: 'research', execution: { budget: { tokens: 500_000 } } })] });
    const store = createInMemoryAgentRunStore();
    const result = await runAgent({ ...lead.engineOptions('root-w', {}), prompt: 'go', session: { store, runId: 'root-w', scope: 'default' }, execution });
    expect(result.status).toBe('completed');
    const receipt = Object.values((await store.load('root-w'))!.receipts)[0]!;
    expect(receipt).toMatchObject({ status: 'failed', error: { code: 'policy_widened' } });
    expect(childModel.calls).toHaveLength(0);
    expect(await store.load(receipt.child!.runId)).toBeUndefined();
  });

  it("a child that exhausts its share of the parent's budget stops; the parent's model hears subagent_stopped", async () => {
    const { createExecutionContext } = await import('cairn/policy');
    const execution = createExecutionContext({ name: 'root', budget: { tokens: 1_000_000 } });
    const researcher = new Agent({ name: 'researcher', model: researcherScript(), tools: [] });
    const leadModel = createMockModel({ responses: [
      { toolCalls: [{ toolName: 'research', args: { input: 'go' } }] },
      { text: 'Out of budget.' },
    ] });
    const lead = new Agent({ model: leadModel, tools: [agentTool(researcher, { name: 'research', execution: { budget: { tokens: 1 } } })] });
    const result = await runAgent({ ...lead.engineOptions('root-x', {}), prompt: 'go', session: { store: createInMemoryAgentRunStore(), runId: 'root-x', scope: 'default' }, execution });
    expect(result.status).toBe('completed');
    const toolMessage = leadModel.calls[1]!.messages.find((m) => m.role === 'tool');
    expect(toolMessage).toMatchObject({ isError: true, content: expect.stringContaining('budget-exceeded') });
  });

  it("the parent's cancellation reaches the child", async () => {
    const controller = new AbortController();
    const lookup = tool({
      name: 'lookup', schema: z.object({ q: z.string() }),
      execute: async () => {
        controller.abort();
        return 'looked';
      },
    });
    const researcherModel = createMockModel({ responses: [{ toolCalls: [{ toolName: 'lookup', args: { q: 'x' } }] }, { text: 'never' }] });
    const researcher = new Agent({ name: 'researcher', model: researcherModel, tools: [lookup] });
    const leadModel = createMockModel({ responses: [{ toolCalls: [{ toolName: 'research', args: { input: 'go' } }] }, { text: 'never' }] });
    const lead = new Agent({ model: leadModel, tools: [agentTool(researcher, { name: 'research' })] });
    const result = await lead.run({ prompt: 'go', abortSignal: controller.signal });
    expect(result.status).toBe('stopped');
    // Neither the child nor the parent asked its model again after the abort.
    expect(researcherModel.calls).toHaveLength(1);
    expect(leadModel.calls).toHaveLength(1);
  });
});

describe('nested sub-agents', () => {
  it("a grandchild's approval suspends the root, and the root's resume reaches it through the child", async () => {
    const store = createInMemoryAgentRunStore();
    const done: string[] = [];
    const agents = (scripts: { leaf: ReturnType<typeof createMockModel>; middle: ReturnType<typeof createMockModel>; top: ReturnType<typeof createMockModel> }) => {
      const archive = tool({ name: 'archive', schema: z.object({ q: z.string() }), requiresApproval: true, execute: ({ q }) => (done.push(q), `archived ${q}`) });
      const leaf = new Agent({ name: 'leaf', model: scripts.leaf, tools: [archive] });
      const middle = new Agent({ name: 'middle', model: scripts.middle, tools: [agentTool(leaf, { name: 'leaf' })] });
      return new Agent({ name: 'top', model: scripts.top, tools: [agentTool(middle, { name: 'middle' })] });
    };
    const first = await agents({
      top: createMockModel({ responses: [{ toolCalls: [{ toolName: 'middle', args: { input: 'go' } }] }] }),
      middle: createMockModel({ responses: [{ toolCalls: [{ toolName: 'leaf', args: { input: 'go' } }] }] }),
      leaf: createMockModel({ responses: [{ toolCalls: [{ toolName: 'archive', args: { q: 'x' } }] }] }),
    }).run({ prompt: 'go', store, runId: 'nest' });
    expect(first.status).toBe('suspended');
    const record = (await store.load('nest'))!;
    const [pending] = record.pendingApprovals;
    expect(pending).toMatchObject({ toolName: 'archive', runId: expect.stringMatching(/^sub_/) });
    // The approval came from the grandchild: its run's parent is the child, whose parent is the root.
    const leafRun = (await store.load(pending!.runId!))!;
    const middleRun = (await store.load(leafRun.binding.parent!.runId))!;
    expect(leafRun.binding.parent!.depth).toBe(2);
    expect(middleRun.binding.parent).toMatchObject({ runId: 'nest', depth: 1 });
    const [shown] = first.pendingApprovals;
    const second = await agents({
      top: createMockModel({ responses: [{ text: 'top done' }] }),
      middle: createMockModel({ responses: [{ text: 'middle done' }] }),
      leaf: createMockModel({ responses: [{ text: 'leaf done' }] }),
    }).run({ runId: 'nest', store, approvalResponses: [{ approvalId: shown!.approvalId, approved: true, token: shown!.token }] });
    expect(second.status).toBe('completed');
    expect(second.outputText).toBe('top done');
    expect(done).toEqual(['x']);
  });
});

describe('the binding of a sub-agent', () => {
  it('a resume with a changed sub-agent is refused with BindingChangedError before anything runs, and nothing is written', async () => {
    const w = world({ gated: true });
    const store = createInMemoryAgentRunStore();
    const first = await w.lead(leadScript(), w.researcher(researcherScript())).run({ prompt: 'Explain tides.', store, runId: 'root-bc' });
    const [pending] = first.pendingApprovals;
    const revision = (await store.load('root-bc'))!.revision;
    // The researcher now has another tool: its binding changed.
    const other = tool({ name: 'other', schema: z.object({ x: z.number() }), execute: () => 'x' });
    const changed = new Agent({ name: 'researcher', model: createMockModel({ responses: [] }), maxSteps: 4, tools: [other] });
    const leadModel = createMockModel({ responses: [] });
    const refused = await w.lead(leadModel, changed).run({
      runId: 'root-bc', store, approvalResponses: [{ approvalId: pending!.approvalId, approved: true, token: pending!.token }],
    });
    expect(refused.status).toBe('failed');
    expect(refused.result.status === 'failed' && refused.result.error).toMatchObject({ name: 'BindingChangedError', code: 'binding_changed' });
    expect(leadModel.calls).toHaveLength(0);
    expect(w.effects).toEqual([]);
    expect((await store.load('root-bc'))!.revision).toBe(revision);
  });
});

describe('what the parent sees', () => {
  it("a sub-agent with output answers with its validated output as JSON; two calls in one turn are two child runs", async () => {
    const schema = z.object({ answer: z.string() });
    let n = 0;
    const answers = ['one', 'two'];
    const childModel = createMockModel({ strict: false, responses: [() => ({ text: JSON.stringify({ answer: answers[n++] ?? 'more' }) })] });
    const researcher = new Agent({ name: 'researcher', model: childModel, output: { schema } });
    const leadModel = createMockModel({ responses: [
      { toolCalls: [{ toolCallId: 'a', toolName: 'research', args: { input: 'first' } }, { toolCallId: 'b', toolName: 'research', args: { input: 'second' } }] },
      { text: 'Both answered.' },
    ] });
    const store = createInMemoryAgentRunStore();
    const result = await new Agent({ model: leadModel, tools: [agentTool(researcher, { name: 'research' })] }).run({ prompt: 'go', store, runId: 'root-o' });
    expect(result.status).toBe('completed');
    const toolMessages = leadModel.calls[1]!.messages.filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => m.content).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual([{ answer: 'one' }, { answer: 'two' }]);
    const children = Object.values((await store.load('root-o'))!.receipts).map((r) => r.child!.runId);
    expect(new Set(children).size).toBe(2);
    expect(children).toEqual(expect.arrayContaining([childRunIdOf('root-o', 0, 'a'), childRunIdOf('root-o', 0, 'b')]));
  });
});

describe('a child that failed for a transient cause', () => {
  it("is not a failure for the parent's model: the root stops, and its next resume retries the child from its checkpoint", async () => {
    const w = world();
    const store = createInMemoryAgentRunStore();
    const researcherModel = createMockModel({ responses: [
      { toolCalls: [{ toolName: 'lookup', args: { q: 'tides' } }] },
      { error: { status: 503, message: 'overloaded' } },
    ] });
    const researcher = new Agent({ name: 'researcher', model: researcherModel, maxSteps: 4, maxRetries: 0, tools: w.researcher(researcherScript()).tools as never });
    const leadModel = createMockModel({ responses: [{ toolCalls: [{ toolName: 'research', args: { input: 'Why tides?' } }] }] });
    const first = await w.lead(leadModel, researcher).run({ prompt: 'Explain tides.', store, runId: 'root-t' });
    expect(first.status).toBe('stopped');
    expect(first.result).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required', unknownEffects: [] });
    expect(w.effects).toEqual(['tides']);
    expect(leadModel.calls).toHaveLength(1);
    const again = new Agent({ name: 'researcher', model: createMockModel({ responses: [{ text: 'Tides follow the moon.' }] }), maxSteps: 4, maxRetries: 0, tools: w.researcher(researcherScript()).tools as never });
    const second = await w.lead(createMockModel({ responses: [{ text: 'Because of the moon.' }] }), again).run({ runId: 'root-t', store });
    expect(second.status).toBe('completed');
    expect(second.outputText).toBe('Because of the moon.');
    // The lookup the child made before its model failed is not made again.
    expect(w.effects).toEqual(['tides']);
  });
});

describe('an agentTool with requiresApproval', () => {
  it('holds the delegation itself for a verdict: no child run before it, and a denial starts none', async () => {
    const childModel = createMockModel({ responses: [] });
    const researcher = new Agent({ name: 'researcher', model: childModel, tools: [] });
    const agent = (model: ReturnType<typeof createMockModel>) =>
      new Agent({ model, tools: [agentTool(researcher, { name: 'research', requiresApproval: true })] });
    const store = createInMemoryAgentRunStore();
    const first = await agent(createMockModel({ responses: [{ toolCalls: [{ toolCallId: 'r', toolName: 'research', args: { input: 'go' } }] }] }))
      .run({ prompt: 'go', store, runId: 'root-a' });
    expect(first.status).toBe('suspended');
    const [pending] = first.pendingApprovals;
    expect(pending).toMatchObject({ toolName: 'research' });
    expect(pending!.runId).toBeUndefined();
    expect(await store.load(childRunIdOf('root-a', 0, 'r'))).toBeUndefined();
    const denied = await agent(createMockModel({ responses: [{ text: 'Not delegated.' }] }))
      .run({ runId: 'root-a', store, approvalResponses: [{ approvalId: pending!.approvalId, approved: false, token: pending!.token }] });
    expect(denied.status).toBe('completed');
    expect(childModel.calls).toHaveLength(0);
    expect(await store.load(childRunIdOf('root-a', 0, 'r'))).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeStreamAgent, streamAgent, type AgentRunView } from '../../src/agent/index.js';
import type { AgentEvent } from '../../src/agent/types.js';
import { RunViewBuilder, runViewSeed } from '../../src/agent/run-view.js';
import { createMockModel } from '../../src/testing/index.js';

async function collect(events: AsyncIterable<AgentEvent<unknown>>) {
  const all: AgentEvent<unknown>[] = [];
  for await (const event of events) all.push(event);
  const views = all.flatMap((e) => (e.type === 'agent-run-update' ? [e.view] : []));
  return { all, views };
}

const SECRET_PROMPT = 'prompt-canary-4471';
const SECRET_ARG = 'argument-canary-9183';
const SECRET_SCOPE = 'scope-canary-2250';
const SECRET_RESULT = 'result-canary-6605';

function suspendingOptions(store = createInMemoryAgentRunStore()) {
  return {
    model: createMockModel({
      responses: [
        { toolCalls: [{ toolName: 'publish', args: { slug: SECRET_ARG } }, { toolName: 'lookup', args: { q: SECRET_ARG } }, { toolName: 'pick', args: { from: SECRET_ARG } }] },
        { text: 'Done.' },
      ],
    }),
    prompt: SECRET_PROMPT,
    system: SECRET_PROMPT,
    maxSteps: 7,
    session: { store, runId: 'view-1', scope: SECRET_SCOPE },
    tools: {
      publish: { parameters: { type: 'object' as const }, needsApproval: true, execute: () => SECRET_RESULT },
      lookup: { parameters: { type: 'object' as const }, execute: () => ({ found: SECRET_RESULT }) },
      pick: { parameters: { type: 'object' as const } },
    },
  };
}

describe('run views on a stream', () => {
  it('follows a run from its start to its result, the last view just before the result', async () => {
    const stream = streamAgent({ model: createMockModel({ responses: [{ text: 'Hello', usage: { inputTokens: 3, outputTokens: 2 } }] }), prompt: 'hi' });
    const { all, views } = await collect(stream.events);
    expect(views.length).toBeGreaterThan(1);
    expect(views[0]).toMatchObject({ status: 'running', steps: 0, parentRunId: null, resumed: false });
    const last = views.at(-1)!;
    expect(all.at(-2)).toEqual({ type: 'agent-run-update', view: last });
    expect(all.at(-1)!.type).toBe('result');
    const result = await stream.result;
    expect(last).toMatchObject({ runId: result.runId, status: 'completed', steps: 1, phase: 'loop' });
    expect(last.usage.inputTokens).toBe(3);
    expect(last.usage.outputTokens).toBe(2);
    expect(last.limits).toEqual({ maxSteps: 20, maxOutputAttempts: 3, maxVerifyAttempts: 3, deadline: null });
  });

  it('counts tool calls and pending answers of a suspension, then a resume that completes', async () => {
    const store = createInMemoryAgentRunStore();
    const options = suspendingOptions(store);
    const first = streamAgent(options);
    const { views } = await collect(first.events);
    const suspended = views.at(-1)!;
    expect(suspended).toMatchObject({
      runId: 'view-1', status: 'suspended', steps: 1,
      tools: { started: 3, completed: 1, failed: 0, pendingApprovals: 1, pendingClientCalls: 1 },
      limits: { maxSteps: 7 },
    });
    const result = await first.result;
    if (result.status !== 'suspended') throw new Error(result.status);
    const resumed = resumeStreamAgent({
      ...options,
      approvalResponses: result.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true })),
      clientToolResults: result.pendingClientCalls.map((c) => ({ toolCallId: c.toolCallId, output: 'b' })),
    });
    const second = await collect(resumed.events);
    expect(second.views[0]).toMatchObject({ runId: 'view-1', resumed: true, status: 'running' });
    expect(second.views.at(-1)).toMatchObject({ status: 'completed', steps: 2, tools: { pendingApprovals: 0, pendingClientCalls: 0 } });
    // The two calls the first leg left waiting end in this one: they count as this leg's calls.
    expect(second.views.at(-1)!.tools).toMatchObject({ started: 2, completed: 2 });
  });

  it('never carries a prompt, tool arguments or results, the scope or the run state', async () => {
    const options = suspendingOptions();
    const first = streamAgent(options);
    const { views } = await collect(first.events);
    const result = await first.result;
    if (result.status !== 'suspended') throw new Error(result.status);
    const resumed = resumeStreamAgent({
      ...options,
      approvalResponses: result.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true })),
      clientToolResults: result.pendingClientCalls.map((c) => ({ toolCallId: c.toolCallId, output: SECRET_RESULT })),
    });
    const second = await collect(resumed.events);
    const text = JSON.stringify([...views, ...second.views]);
    for (const canary of [SECRET_PROMPT, SECRET_ARG, SECRET_SCOPE, SECRET_RESULT, 'messages', 'snapshot', 'Done.']) {
      expect(text).not.toContain(canary);
    }
    const keys = new Set([...views, ...second.views].flatMap((v) => Object.keys(v)));
    expect([...keys].sort()).toEqual(
      ['limits', 'parentRunId', 'phase', 'resumed', 'runId', 'status', 'steps', 'tools', 'usage'].sort(),
    );
  });

  it('gives a run that a tool starts its own run id and the parent run id, and shows it on the parent stream', async () => {
    const parent = streamAgent({
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'delegate', args: {} }] }, { text: 'ok' }] }),
      prompt: 'go',
      session: { store: createInMemoryAgentRunStore(), runId: 'parent-1', scope: 's' },
      tools: {
        delegate: {
          parameters: { type: 'object' as const },
          execute: async () => {
            const child = streamAgent({ model: createMockModel({ responses: [{ text: 'inner' }] }), prompt: 'inner' });
            return (await child.result).text;
          },
        },
      },
    });
    const { views } = await collect(parent.events);
    const childViews = views.filter((v) => v.runId !== 'parent-1');
    expect(childViews.length).toBeGreaterThan(0);
    expect(childViews.every((v) => v.parentRunId === 'parent-1')).toBe(true);
    expect(childViews.at(-1)!.status).toBe('completed');
    expect(views.filter((v) => v.runId === 'parent-1').at(-1)).toMatchObject({ status: 'completed', parentRunId: null });
  });

  it('sends one view for a leg refused before it began, with the error code only', async () => {
    const stream = resumeStreamAgent({
      model: createMockModel({ responses: [] }),
      session: { store: createInMemoryAgentRunStore(), runId: 'missing', scope: 's' },
    });
    const { views } = await collect(stream.events);
    expect(views).toHaveLength(1);
    expect(views[0]).toMatchObject({ runId: 'missing', status: 'failed', errorCode: 'run_not_found' });
  });
});

describe('RunViewBuilder', () => {
  it('ignores events that do not change the view, and copies the view it returns', () => {
    const builder = new RunViewBuilder(runViewSeed({ maxSteps: 4, deadline: 99 }));
    expect(builder.apply({ type: 'text-delta', step: 0, delta: 'x' })).toBeUndefined();
    const view = builder.apply({ type: 'run-start', runId: 'r', resumed: false }) as AgentRunView;
    view.tools.started = 50;
    expect(builder.view.tools.started).toBe(0);
    expect(builder.view.limits).toEqual({ maxSteps: 4, maxOutputAttempts: 3, maxVerifyAttempts: 3, deadline: 99 });
  });
});

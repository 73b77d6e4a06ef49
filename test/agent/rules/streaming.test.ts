/**
 * Rule 8: streams. Events are named noun-then-action and cover the run's
 * steps, text, calls and result; streamAgent starts nothing before it is
 * used; warnings and errors arrive as parts, never as throws.
 */
import { describe, expect, it } from 'vitest';
import {
  resumeAgent, resumeStreamAgent, runAgent, streamAgent, type AgentEvent, type ResumeOptions,
} from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { collect, countingTool, fixedDeps, recordingStore, tick } from './helpers.js';

const ACTIONS = new Set(['start', 'end', 'finish', 'delta', 'request']);

function toolRun() {
  const store = recordingStore();
  const lookup = countingTool({ hits: 1 });
  const model = createMockModel({
    responses: [
      { text: 'Let me check the index.', toolCalls: [{ toolName: 'lookup', args: { q: 'a' } }] },
      { text: 'Found one hit in the index.' },
    ],
  });
  const options = {
    model, prompt: 'Search.', tools: { lookup }, session: { store, runId: 'stream-1', scope: 's' }, deps: fixedDeps(),
  } satisfies ResumeOptions;
  return { store, model, lookup, options };
}

const indexOf = (events: AgentEvent[], match: (e: AgentEvent) => boolean) => {
  const i = events.findIndex(match);
  expect(i).toBeGreaterThanOrEqual(0);
  return i;
};

describe('streams', () => {
  it('name events noun-then-action and include the step, text, call and result events, in order', async () => {
    const { options } = toolRun();
    const stream = streamAgent(options);
    const events = await collect(stream.events);
    const types = events.map((e) => e.type);
    for (const required of ['run-start', 'step-start', 'text-delta', 'step-finish', 'tool-call-start', 'tool-output', 'tool-call-end', 'result']) {
      expect(types).toContain(required);
    }
    for (const type of new Set(types)) {
      expect(type).toMatch(/^[a-z]+(-[a-z]+)*$/);
      const words = type.split('-');
      // An action word, when there is one, comes after the noun it acts on.
      words.forEach((word, i) => {
        if (ACTIONS.has(word)) expect(i, type).toBe(words.length - 1);
      });
      if (words.length > 1) expect(ACTIONS.has(words[0]!), type).toBe(false);
    }

    expect(types.at(-1)).toBe('result');
    expect(types.filter((t) => t === 'result')).toHaveLength(1);
    expect(types[0]).toBe('run-start');
    const is = (type: string, extra: Record<string, unknown> = {}) => (e: AgentEvent) =>
      e.type === type && Object.entries(extra).every(([k, v]) => (e as Record<string, unknown>)[k] === v);
    const start0 = indexOf(events, is('step-start', { step: 0 }));
    const delta0 = indexOf(events, is('text-delta', { step: 0 }));
    const finish0 = indexOf(events, is('step-finish', { step: 0 }));
    const callStart = indexOf(events, is('tool-call-start', { toolCallId: 'tool_0' }));
    const callEnd = indexOf(events, is('tool-call-end', { toolCallId: 'tool_0' }));
    const start1 = indexOf(events, is('step-start', { step: 1 }));
    const finish1 = indexOf(events, is('step-finish', { step: 1 }));
    expect(start0).toBeLessThan(delta0);
    expect(delta0).toBeLessThan(finish0);
    expect(finish0).toBeLessThan(callStart);
    expect(callStart).toBeLessThan(callEnd);
    expect(callEnd).toBeLessThan(start1);
    expect(start1).toBeLessThan(finish1);

    expect(events[callStart]).toEqual({ type: 'tool-call-start', step: 0, toolCallId: 'tool_0', toolName: 'lookup', args: { q: 'a' } });
    expect(events[callEnd]).toEqual({ type: 'tool-call-end', step: 0, toolCallId: 'tool_0', toolName: 'lookup', output: { hits: 1 }, isError: false });
    expect(events[finish0]).toMatchObject({ type: 'step-finish', step: 0, finishReason: 'tool-calls' });
    expect(events.filter((e) => e.type === 'tool-call-start')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'tool-call-end')).toHaveLength(1);

    const text1 = events.filter((e): e is Extract<AgentEvent, { type: 'text-delta' }> => e.type === 'text-delta' && e.step === 1);
    expect(text1.map((e) => e.delta).join('')).toBe('Found one hit in the index.');
    const result = await stream.result;
    expect(events.at(-1)).toEqual({ type: 'result', result });
    expect(result.status).toBe('completed');
    expect(result.text).toBe('Found one hit in the index.');
  });

  it('report every call that ends as a tool-call-end part with its outcome (blocked, unknown tool, denied)', async () => {
    const store = recordingStore();
    const publish = countingTool('published', { needsApproval: true });
    const model = createMockModel({
      responses: [
        { toolCalls: [{ toolName: 'lookup', args: {} }, { toolName: 'missing', args: {} }, { toolName: 'publish', args: {} }] },
        { text: 'Done.' },
      ],
    });
    const options = {
      model,
      prompt: 'Go.',
      tools: { lookup: countingTool(), publish },
      onToolCall: ({ toolName }: { toolName: string }) => (toolName === 'lookup' ? { action: 'block' as const, reason: 'Not now.' } : undefined),
      session: { store, runId: 'outcomes', scope: 's' },
      deps: fixedDeps(),
    } satisfies ResumeOptions;
    const firstEvents = await collect(streamAgent(options).events);
    const first = (firstEvents.at(-1) as Extract<AgentEvent, { type: 'result' }>).result;
    if (first.status !== 'suspended') throw new Error(first.status);
    expect(firstEvents.filter((e) => e.type === 'approval-request')).toHaveLength(1);
    const p = first.pendingApprovals[0]!;
    const secondEvents = await collect(resumeStreamAgent({
      ...options, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: false, reason: 'No.' }],
    }).events);
    const ends = [...firstEvents, ...secondEvents].filter((e): e is Extract<AgentEvent, { type: 'tool-call-end' }> => e.type === 'tool-call-end');
    // Calls of one turn run concurrently: their ends arrive in completion order.
    ends.sort((a, b) => a.toolCallId.localeCompare(b.toolCallId));
    expect(ends.map((e) => [e.toolCallId, e.outcome, e.isError])).toEqual([
      ['tool_0', 'blocked', true],
      ['tool_1', 'policy-violation', true],
      ['tool_2', 'denied', true],
    ]);
    expect(ends[2]!.output).toBe('Tool call denied. Reason: No.');
  });

  it('call no model (and write nothing) before the stream is first used', async () => {
    const { options, model, store } = toolRun();
    const stream = streamAgent(options);
    void stream.events;
    void stream.textStream;
    await tick(20);
    expect(model.calls).toHaveLength(0);
    expect(store.attempts()).toBe(0);
    const result = await stream.result;
    expect(result.status).toBe('completed');
    expect(model.calls).toHaveLength(2);
  });

  it('deliver a resume’s warnings as parts, never as throws', async () => {
    const store = recordingStore();
    const publish = countingTool('published', { needsApproval: true });
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'publish', args: {} }] }, { text: 'ok' }] });
    const options = {
      model, prompt: 'Publish.', tools: { publish }, session: { store, runId: 'warn-1', scope: 's' }, deps: fixedDeps(),
    } satisfies ResumeOptions;
    const first = await runAgent(options);
    if (first.status !== 'suspended') throw new Error(first.status);
    const p = first.pendingApprovals[0]!;
    const stream = resumeStreamAgent({
      ...options,
      approvalResponses: [{ approvalId: p.approvalId, token: 'forged', approved: true }],
      retryToolCallIds: ['nobody-asked'],
    });
    const events = await collect(stream.events);
    const warnings = events.filter((e) => e.type === 'warning');
    expect(warnings.map((w) => (w as { setting: string }).setting).sort()).toEqual(['approvalResponses', 'retryToolCallIds']);
    expect(events.at(-1)!.type).toBe('result');
    const result = await stream.result;
    expect(result.status).toBe('suspended');
    expect(result.warnings).toEqual(warnings);
    expect(publish.runs).toHaveLength(0);

    // The same warnings on the non-streaming entry point: on the result, not thrown.
    const plain = await resumeAgent({ ...options, approvalResponses: [{ approvalId: p.approvalId, token: 'forged', approved: true }] });
    expect(plain.warnings.map((w) => w.setting)).toEqual(['approvalResponses']);
  });

  it('deliver a refused resume as an error part and a failed result, without throwing', async () => {
    const store = recordingStore();
    const stream = resumeStreamAgent({
      model: createMockModel({ responses: [{ text: 'never' }] }),
      prompt: 'x',
      session: { store, runId: 'ghost', scope: 's' },
      deps: fixedDeps(),
    });
    const events = await collect(stream.events);
    expect(events.map((e) => e.type)).toEqual(['error', 'agent-run-update', 'result']);
    expect(events[0]).toMatchObject({ type: 'error', error: { code: 'run_not_found' } });
    const result = await stream.result;
    expect(result.status).toBe('failed');
  });

  it('deliver a failing model call as a failed result, without throwing from the stream', async () => {
    const stream = streamAgent({
      model: createMockModel({ responses: [{ error: { status: 500, message: 'provider down' } }] }),
      maxRetries: 0,
      prompt: 'x',
      deps: fixedDeps(),
    });
    const events = await collect(stream.events);
    expect(events.at(-1)!.type).toBe('result');
    const result = await stream.result;
    expect(result.status).toBe('failed');
    if (result.status === 'failed') expect(result.error.message).toContain('provider down');
  });
});

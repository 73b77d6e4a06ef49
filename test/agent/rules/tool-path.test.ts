/**
 * Rule 5 (the path of a call): finish-reason gate, unknown tools, guardrails,
 * failures, validation and projection, onToolResult, parallel calls.
 */
import { describe, expect, it } from 'vitest';
import {
  runAgent, streamAgent, type AgentEvent, type AgentOptions, type AgentTool, type JsonValue, type ResumeOptions,
} from 'cairn/agent';
import { createMockModel, type MockResponse } from 'cairn/testing';
import {
  countingTool, eventsOf, fixedDeps, recordingStore, standardSchema, tick, toolMessages,
} from './helpers.js';

function lookupRun(lookup: AgentTool, responses: MockResponse[], extra: Partial<AgentOptions> = {}) {
  const store = recordingStore();
  const model = createMockModel({ responses });
  const options = {
    model,
    prompt: 'Look it up.',
    session: { store, runId: 'path-1', scope: 'tenant-a' },
    tools: { lookup },
    deps: fixedDeps(),
    ...extra,
  } satisfies ResumeOptions;
  return { store, model, options };
}

const callLookup = (args: { [key: string]: JsonValue } = { q: 'x' }): MockResponse => ({ toolCalls: [{ toolName: 'lookup', args }] });
const resultEvent = (events: AgentEvent[]) => (events.at(-1) as Extract<AgentEvent, { type: 'result' }>).result;

describe('the tool path', () => {
  describe('finish-reason gate', () => {
    it("dispatches no call of a turn cut off by 'length' and stops with reason length", async () => {
      const lookup = countingTool();
      const { options, model } = lookupRun(lookup, [{ toolCalls: [{ toolName: 'lookup', args: {} }, { toolName: 'lookup', args: {} }], finishReason: 'length' }]);
      const result = await runAgent(options);
      expect(result.status).toBe('stopped');
      if (result.status === 'stopped') expect(result.reason).toBe('length');
      expect(lookup.runs).toHaveLength(0);
      expect(model.calls).toHaveLength(1);
    });

    it("dispatches no call of a turn refused by 'content-filter' and stops with reason refusal", async () => {
      const lookup = countingTool();
      const { options, model, store } = lookupRun(lookup, [{ toolCalls: [{ toolName: 'lookup', args: {} }], finishReason: 'content-filter' }]);
      const result = await runAgent(options);
      expect(result.status).toBe('stopped');
      if (result.status === 'stopped') expect(result.reason).toBe('refusal');
      expect(lookup.runs).toHaveLength(0);
      expect(model.calls).toHaveLength(1);
      expect((await store.load('path-1'))!.receipts).toEqual({});
    });
  });

  it('answers a call of an unknown tool with an error (policy violation) and goes on', async () => {
    const lookup = countingTool();
    const { options, model } = lookupRun(lookup, [{ toolCalls: [{ toolName: 'deleteEverything', args: {} }] }, { text: 'Sorry.' }]);
    const events = await eventsOf(streamAgent(options));
    const result = resultEvent(events);
    expect(result.status).toBe('completed');
    expect(result.text).toBe('Sorry.');
    expect(model.calls).toHaveLength(2);
    const [answer] = toolMessages(model.calls[1]);
    expect(answer).toMatchObject({ toolCallId: 'tool_0', toolName: 'deleteEverything', isError: true });
    expect(answer!.content).toEqual(expect.stringContaining('deleteEverything'));
    expect(events.find((e) => e.type === 'tool-call-end')).toMatchObject({ toolCallId: 'tool_0', isError: true, outcome: 'policy-violation' });
  });

  it("answers a call onToolCall blocks with 'Tool call blocked: <reason>' and does not run the tool", async () => {
    const lookup = countingTool();
    const seen: unknown[] = [];
    const { options, model } = lookupRun(lookup, [callLookup({ q: 'secret' }), { text: 'Blocked, fine.' }], {
      onToolCall: (input) => {
        seen.push(input);
        return { action: 'block', reason: 'No secrets.' };
      },
    });
    const events = await eventsOf(streamAgent(options));
    expect(resultEvent(events).status).toBe('completed');
    expect(lookup.runs).toHaveLength(0);
    expect(seen).toEqual([{ toolCallId: 'tool_0', toolName: 'lookup', args: { q: 'secret' }, modelStep: 0 }]);
    expect(toolMessages(model.calls[1])).toEqual([
      { role: 'tool', toolCallId: 'tool_0', toolName: 'lookup', content: 'Tool call blocked: No secrets.', isError: true },
    ]);
    expect(events.find((e) => e.type === 'tool-call-end')).toMatchObject({ toolCallId: 'tool_0', isError: true, outcome: 'blocked' });
  });

  it('hands the tool the arguments onToolCall rewrote', async () => {
    const lookup = countingTool('found');
    const { options, model } = lookupRun(lookup, [callLookup({ q: 'raw' }), { text: 'ok' }], {
      onToolCall: ({ args }) => ({ action: 'rewrite', args: { ...(args as object), q: 'clean', limit: 3 } }),
    });
    const result = await runAgent(options);
    expect(result.status).toBe('completed');
    expect(lookup.runs).toEqual([{ q: 'clean', limit: 3 }]);
    expect(toolMessages(model.calls[1])).toEqual([{ role: 'tool', toolCallId: 'tool_0', toolName: 'lookup', content: 'found' }]);
  });

  it("gives the model a throwing tool's error message and stores a 'failed' receipt", async () => {
    let runs = 0;
    const { options, model, store } = lookupRun({
      description: 'Breaks.',
      parameters: { type: 'object', properties: {} },
      execute: () => {
        runs += 1;
        throw new Error('upstream timed out');
      },
    }, [callLookup(), { text: 'It failed.' }]);
    const events = await eventsOf(streamAgent(options));
    const result = resultEvent(events);
    expect(result.status).toBe('completed');
    expect(runs).toBe(1);
    expect(toolMessages(model.calls[1])).toEqual([
      { role: 'tool', toolCallId: 'tool_0', toolName: 'lookup', content: 'upstream timed out', isError: true },
    ]);
    const receipt = (await store.load('path-1'))!.receipts['0:tool_0'];
    expect(receipt).toMatchObject({ toolCallId: 'tool_0', toolName: 'lookup', modelStep: 0, status: 'failed' });
    expect(receipt!.error).toMatchObject({ message: 'upstream timed out' });
    expect(events.find((e) => e.type === 'tool-call-end')).toMatchObject({ isError: true, outcome: 'failed' });
  });

  it('treats a result the Standard Schema outputSchema rejects as a validation failure', async () => {
    const lookup = countingTool({ hits: 'many' }, {
      outputSchema: standardSchema((v) =>
        typeof (v as { hits?: unknown }).hits === 'number' ? { value: v } : { issues: [{ message: 'hits must be a number' }] }),
      toModelOutput: () => 'projection must not run',
    });
    const { options, model, store } = lookupRun(lookup, [callLookup(), { text: 'ok' }]);
    const events = await eventsOf(streamAgent(options));
    expect(resultEvent(events).status).toBe('completed');
    expect(lookup.runs).toHaveLength(1);
    const [answer] = toolMessages(model.calls[1]);
    expect(answer).toMatchObject({ toolCallId: 'tool_0', isError: true });
    expect(answer!.content).toEqual(expect.stringContaining('hits must be a number'));
    expect(events.find((e) => e.type === 'tool-call-end')).toMatchObject({ isError: true, outcome: 'validation-failure' });
    expect((await store.load('path-1'))!.receipts['0:tool_0']).toMatchObject({ status: 'validation-failed', rawResult: { hits: 'many' } });
  });

  it('treats a result validateResult rejects as a validation failure', async () => {
    const lookup = countingTool({ hits: -1 }, {
      outputSchema: { type: 'object', properties: { hits: { type: 'number', minimum: 0 } } },
      validateResult: () => {
        throw new Error('hits must not be negative');
      },
    });
    const { options, model, store } = lookupRun(lookup, [callLookup(), { text: 'ok' }]);
    const events = await eventsOf(streamAgent(options));
    expect(resultEvent(events).status).toBe('completed');
    const [answer] = toolMessages(model.calls[1]);
    expect(answer).toMatchObject({ isError: true });
    expect(answer!.content).toEqual(expect.stringContaining('hits must not be negative'));
    expect(events.find((e) => e.type === 'tool-call-end')).toMatchObject({ outcome: 'validation-failure' });
    expect((await store.load('path-1'))!.receipts['0:tool_0']).toMatchObject({ status: 'validation-failed' });
  });

  it('treats a throwing toModelOutput as a projection failure, keeping the raw result in the receipt', async () => {
    const lookup = countingTool({ hits: 2 }, {
      toModelOutput: () => {
        throw new Error('cannot render');
      },
    });
    const { options, model, store } = lookupRun(lookup, [callLookup(), { text: 'ok' }]);
    const events = await eventsOf(streamAgent(options));
    expect(resultEvent(events).status).toBe('completed');
    expect(lookup.runs).toHaveLength(1);
    const [answer] = toolMessages(model.calls[1]);
    expect(answer).toMatchObject({ isError: true });
    expect(answer!.content).toEqual(expect.stringContaining('cannot render'));
    expect(events.find((e) => e.type === 'tool-call-end')).toMatchObject({ outcome: 'projection-failure', isError: true });
    expect((await store.load('path-1'))!.receipts['0:tool_0']).toMatchObject({ status: 'projection-failed', rawResult: { hits: 2 } });
  });

  it("shows the model toModelOutput's projection while the tool-output event carries the raw result", async () => {
    const raw = { hits: 2, internal: 'row-ids 17,18' };
    const lookup = countingTool(raw, { toModelOutput: (r: typeof raw) => `${r.hits} hits` });
    const { options, model, store } = lookupRun(lookup, [callLookup(), { text: 'ok' }]);
    const events = await eventsOf(streamAgent(options));
    expect(resultEvent(events).status).toBe('completed');
    expect(toolMessages(model.calls[1])).toEqual([{ role: 'tool', toolCallId: 'tool_0', toolName: 'lookup', content: '2 hits' }]);
    expect(JSON.stringify(model.calls)).not.toContain('row-ids');
    const output = events.filter((e) => e.type === 'tool-output');
    expect(output).toEqual([{ type: 'tool-output', step: 0, toolCallId: 'tool_0', toolName: 'lookup', rawResult: raw }]);
    expect(events.find((e) => e.type === 'tool-call-end')).toMatchObject({ output: '2 hits', isError: false });
    expect(events.find((e) => e.type === 'tool-call-end')).not.toHaveProperty('outcome');
    expect((await store.load('path-1'))!.receipts['0:tool_0']).toMatchObject({ status: 'completed', rawResult: raw, modelOutput: '2 hits' });
  });

  it("lets onToolResult change only the model's copy: the receipt keeps the tool's projection", async () => {
    const seen: unknown[] = [];
    const lookup = countingTool({ hits: 2 }, { toModelOutput: (r: { hits: number }) => `${r.hits} hits` });
    const { options, model, store } = lookupRun(lookup, [callLookup(), { text: 'ok' }], {
      onToolResult: (input) => {
        seen.push(input);
        return `[redacted] ${String(input.output)}`;
      },
    });
    const result = await runAgent(options);
    expect(result.status).toBe('completed');
    expect(seen).toEqual([{ toolCallId: 'tool_0', toolName: 'lookup', modelStep: 0, output: '2 hits', isError: false }]);
    expect(toolMessages(model.calls[1])).toEqual([{ role: 'tool', toolCallId: 'tool_0', toolName: 'lookup', content: '[redacted] 2 hits' }]);
    expect((await store.load('path-1'))!.receipts['0:tool_0']).toMatchObject({ status: 'completed', rawResult: { hits: 2 }, modelOutput: '2 hits' });
  });

  it('runs every call of one turn, concurrently, and answers them in the turn’s order', async () => {
    const log: string[] = [];
    const tool = (name: string, delay: number): AgentTool => ({
      description: name,
      parameters: { type: 'object', properties: {} },
      execute: async () => {
        log.push(`start ${name}`);
        await tick(delay);
        log.push(`end ${name}`);
        return `${name} result`;
      },
    });
    const model = createMockModel({
      responses: [
        { toolCalls: [{ toolName: 'slow', args: {} }, { toolName: 'fast', args: {} }, { toolName: 'slow', args: { again: true } }] },
        { text: 'All three done.' },
      ],
    });
    const result = await runAgent({
      model, prompt: 'Do three things.', tools: { slow: tool('slow', 40), fast: tool('fast', 0) }, deps: fixedDeps(),
    });
    expect(result.status).toBe('completed');
    expect(log.filter((l) => l.startsWith('start'))).toHaveLength(3);
    expect(log.slice(0, 3)).toEqual(['start slow', 'start fast', 'start slow']);
    expect(toolMessages(model.calls[1]).map((m) => [m.toolCallId, m.toolName, m.content])).toEqual([
      ['tool_0', 'slow', 'slow result'],
      ['tool_1', 'fast', 'fast result'],
      ['tool_2', 'slow', 'slow result'],
    ]);
  });
});

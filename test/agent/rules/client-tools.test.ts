/**
 * Rule 2: client tools (no execute). The run suspends on them; a resume with
 * clientToolResults answers them through the same validation and projection
 * path as a server tool's result; a missing result keeps the run suspended;
 * an approval-gated client tool needs its verdict and its result.
 */
import { describe, expect, it } from 'vitest';
import {
  resumeAgent, resumeStreamAgent, runAgent, type AgentEvent, type AgentTool, type ResumeOptions,
} from 'cairn/agent';
import { createMockModel, type MockResponse } from 'cairn/testing';
import { eventsOf, fixedDeps, recordingStore, standardSchema, toolMessages } from './helpers.js';

function clientRun(tool: AgentTool, responses: MockResponse[] = [
  { toolCalls: [{ toolName: 'pickColor', args: { palette: 'warm' } }] },
  { text: 'You picked a colour.' },
]) {
  const store = recordingStore();
  const model = createMockModel({ responses });
  const options = {
    model,
    prompt: 'Let the user pick a colour.',
    session: { store, runId: 'client-1', scope: 'tenant-a' },
    tools: { pickColor: tool },
    deps: fixedDeps(),
  } satisfies ResumeOptions;
  return { store, model, options };
}

const params = { type: 'object' as const, properties: { palette: { type: 'string' } } };

describe('client tools', () => {
  it('suspend the run with pendingClientCalls', async () => {
    const { options, model, store } = clientRun({ description: 'Ask the user.', parameters: params });
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    if (first.status !== 'suspended') return;
    expect(first.pendingApprovals).toEqual([]);
    expect(first.pendingClientCalls).toEqual([{ toolCallId: 'tool_0', toolName: 'pickColor', args: { palette: 'warm' }, modelStep: 0 }]);
    expect(model.calls).toHaveLength(1);
    const stored = (await store.load('client-1'))!;
    expect(stored.status).toBe('suspended');
    expect(stored.pendingClientCalls).toEqual(first.pendingClientCalls);
  });

  it('complete when a resume supplies the result, which passes validateResult and toModelOutput', async () => {
    const validated: unknown[] = [];
    const { options, model } = clientRun({
      description: 'Ask the user.',
      parameters: params,
      validateResult: (value) => {
        validated.push(value);
        return value;
      },
      toModelOutput: (value: { color: string }) => `The user chose ${value.color}.`,
    });
    await runAgent(options);
    const events = await eventsOf(resumeStreamAgent({ ...options, clientToolResults: [{ toolCallId: 'tool_0', output: { color: 'red' } }] }));
    const result = (events.at(-1) as Extract<AgentEvent, { type: 'result' }>).result;
    expect(result.status).toBe('completed');
    expect(result.text).toBe('You picked a colour.');
    expect(validated).toEqual([{ color: 'red' }]);
    expect(model.calls).toHaveLength(2);
    expect(toolMessages(model.calls[1])).toEqual([
      { role: 'tool', toolCallId: 'tool_0', toolName: 'pickColor', content: 'The user chose red.' },
    ]);
    const end = events.find((e) => e.type === 'tool-call-end');
    expect(end).toMatchObject({ toolCallId: 'tool_0', output: 'The user chose red.', isError: false, outcome: 'client-result' });
  });

  it('answer the model with an error when the result fails the outputSchema (outcome validation-failure)', async () => {
    const { options, model, store } = clientRun({
      description: 'Ask the user.',
      parameters: params,
      outputSchema: standardSchema((v) =>
        typeof (v as { color?: unknown }).color === 'string' ? { value: v } : { issues: [{ message: 'color must be a string' }] }),
      toModelOutput: () => 'never shown',
    });
    await runAgent(options);
    const events = await eventsOf(resumeStreamAgent({ ...options, clientToolResults: [{ toolCallId: 'tool_0', output: { color: 7 } }] }));
    const result = (events.at(-1) as Extract<AgentEvent, { type: 'result' }>).result;
    expect(result.status).toBe('completed');
    const [answer] = toolMessages(model.calls[1]);
    expect(answer).toMatchObject({ toolCallId: 'tool_0', isError: true });
    expect(answer!.content).toEqual(expect.stringContaining('color must be a string'));
    expect(answer!.content).not.toBe('never shown');
    expect(events.find((e) => e.type === 'tool-call-end')).toMatchObject({ toolCallId: 'tool_0', isError: true, outcome: 'validation-failure' });
    expect((await store.load('client-1'))!.receipts['0:tool_0']).toMatchObject({ status: 'validation-failed', rawResult: { color: 7 } });
  });

  it('answer the model with an error when validateResult throws', async () => {
    const { options, model } = clientRun({
      description: 'Ask the user.',
      parameters: params,
      validateResult: () => {
        throw new Error('not a colour');
      },
    });
    await runAgent(options);
    const result = await resumeAgent({ ...options, clientToolResults: [{ toolCallId: 'tool_0', output: 'blue-ish' }] });
    expect(result.status).toBe('completed');
    const [answer] = toolMessages(model.calls[1]);
    expect(answer).toMatchObject({ toolCallId: 'tool_0', isError: true });
    expect(answer!.content).toEqual(expect.stringContaining('not a colour'));
  });

  it('stay suspended, writing nothing, when the result is missing', async () => {
    const { options, model, store } = clientRun({ description: 'Ask the user.', parameters: params });
    const first = await runAgent(options);
    const before = await store.dump('client-1');
    for (const clientToolResults of [undefined, []]) {
      const again = await resumeAgent({ ...options, ...(clientToolResults ? { clientToolResults } : {}) });
      expect(again.status).toBe('suspended');
      if (again.status !== 'suspended' || first.status !== 'suspended') return;
      expect(again.pendingClientCalls).toEqual(first.pendingClientCalls);
    }
    expect(model.calls).toHaveLength(1);
    expect(await store.dump('client-1')).toBe(before);
  });

  it('refuse, with a TypeError and no write, a result for a call the run does not wait on', async () => {
    const { options, model, store } = clientRun({ description: 'Ask the user.', parameters: params });
    await runAgent(options);
    const before = await store.dump('client-1');
    const again = await resumeAgent({ ...options, clientToolResults: [{ toolCallId: 'tool_9', output: 'x' }] });
    expect(again.status).toBe('failed');
    if (again.status === 'failed') expect(again.error).toMatchObject({ name: 'TypeError', code: 'invalid_options' });
    expect(model.calls).toHaveLength(1);
    expect(await store.dump('client-1')).toBe(before);
  });

  describe('an approval-gated client tool', () => {
    const gated = (): AgentTool => ({ description: 'Ask the user, after approval.', parameters: params, needsApproval: true });

    it('is not answered by its result alone', async () => {
      const { options, model, store } = clientRun(gated());
      const first = await runAgent(options);
      expect(first.status).toBe('suspended');
      if (first.status !== 'suspended') return;
      expect(first.pendingApprovals.map((p) => p.toolCallId)).toEqual(['tool_0']);
      const before = await store.dump('client-1');
      const again = await resumeAgent({ ...options, clientToolResults: [{ toolCallId: 'tool_0', output: { color: 'red' } }] });
      expect(again.status).toBe('suspended');
      expect(model.calls).toHaveLength(1);
      expect(await store.dump('client-1')).toBe(before);
    });

    it('is not answered by its verdict alone', async () => {
      const { options, model } = clientRun(gated());
      const first = await runAgent(options);
      if (first.status !== 'suspended') throw new Error(first.status);
      const p = first.pendingApprovals[0]!;
      const again = await resumeAgent({ ...options, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: true }] });
      expect(again.status).toBe('suspended');
      expect(model.calls).toHaveLength(1);
    });

    it('completes when one resume brings both the verdict and the result', async () => {
      const { options, model } = clientRun(gated());
      const first = await runAgent(options);
      if (first.status !== 'suspended') throw new Error(first.status);
      const p = first.pendingApprovals[0]!;
      const resumed = await resumeAgent({
        ...options,
        approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: true }],
        clientToolResults: [{ toolCallId: 'tool_0', output: { color: 'red' } }],
      });
      expect(resumed.status).toBe('completed');
      expect(resumed.warnings).toEqual([]);
      expect(model.calls).toHaveLength(2);
      expect(toolMessages(model.calls[1])).toEqual([
        { role: 'tool', toolCallId: 'tool_0', toolName: 'pickColor', content: { color: 'red' } },
      ]);
    });
  });
});

/**
 * agent.stream(): the engine's stream of an Agent run, with agent-run-update
 * views that carry counts, ids and limits but no prompt, tool arguments,
 * scope or state; the terminal result event is the engine's; finish() gives
 * the Agent's result.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, tool } from 'cairn';
import type { AgentEvent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

describe('agent.stream', () => {
  it('emits agent-run-update views without private data, then the unchanged result event', async () => {
    const secret = tool({ name: 'vault', schema: z.object({ code: z.string() }), execute: () => 'opened' });
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'vault', args: { code: 'hunter2-args' } }] }, { text: 'Opened.' }] });
    const agent = new Agent({ model, instructions: 'private-instructions', maxSteps: 4, tools: [secret] });
    const { stream, finish } = await agent.stream({ prompt: 'private-prompt', scope: 'tenant-private' });
    const events: AgentEvent[] = [];
    for await (const event of stream.events) events.push(event);
    const views = events.filter((e): e is Extract<AgentEvent, { type: 'agent-run-update' }> => e.type === 'agent-run-update').map((e) => e.view);
    expect(views.length).toBeGreaterThan(2);
    const last = views.at(-1)!;
    expect(last).toMatchObject({
      status: 'completed', parentRunId: null, steps: 2, limits: { maxSteps: 4 }, tools: { started: 1, completed: 1, failed: 0 },
    });
    const shown = JSON.stringify(views);
    for (const hidden of ['private-prompt', 'private-instructions', 'hunter2-args', 'tenant-private', 'cairn-agent-run']) expect(shown).not.toContain(hidden);
    expect(events.at(-1)!.type).toBe('result');
    const result = await finish();
    expect(result.outputText).toBe('Opened.');
    expect(result.runId).toBe(last.runId);
    expect(result.state.scope).toBe('tenant-private');
  });
});

/**
 * Nothing private leaves the server: every frame of runs whose prompt,
 * system text, tool arguments, tool results and errors carry canary strings
 * is scanned for them. And run views of nested runs go on the wire with their
 * own run id and their parent's.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeStreamAgent, streamAgent, type AgentTools } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { agentStateFromParts, createInMemoryAgentStreamJournal, resumeAgentStreamResponse, toAgentStreamResponse } from 'cairn/ui';
import { readAll } from './helpers.js';

const CANARY = {
  prompt: 'CANARY-PROMPT-7d1f',
  system: 'CANARY-SYSTEM-22ab',
  args: 'CANARY-ARGS-9c3e',
  result: 'CANARY-RESULT-51f0',
  raw: 'CANARY-RAW-0b8d',
  secret: 'CANARY-SECRET-e4a7',
  modelError: 'CANARY-MODEL-ERROR-3f19',
};

function scan(text: string): string[] {
  return Object.entries(CANARY).filter(([, canary]) => text.includes(canary)).map(([name]) => name);
}

const tools: AgentTools = {
  lookup: {
    description: 'Looks a record up.',
    parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
    execute: () => ({ value: CANARY.result, nested: { raw: CANARY.raw } }),
  },
  explode: {
    description: 'Fails with a secret in its message.',
    parameters: { type: 'object', properties: {} },
    execute: () => {
      throw new Error(`connection to db failed: password=${CANARY.secret} token ${CANARY.secret}`);
    },
  },
  approveMe: {
    description: 'Needs a person.',
    parameters: { type: 'object', properties: { what: { type: 'string' } }, required: ['what'] },
    needsApproval: true,
    execute: () => CANARY.result,
  },
};

describe('what leaves the server', () => {
  it('carries no prompt, system text, tool result, raw result, arguments of a running call, or error text', async () => {
    const journal = createInMemoryAgentStreamJournal();
    const runs = createInMemoryAgentRunStore();
    const session = { store: runs, runId: 'canary', scope: 's' };
    const model = createMockModel({
      strict: false,
      responses: [
        { text: 'Looking.', toolCalls: [{ toolName: 'lookup', args: { key: CANARY.args }, toolCallId: 'c1' }, { toolName: 'explode', toolCallId: 'c2' }] },
        { toolCalls: [{ toolName: 'approveMe', args: { what: 'ship it' }, toolCallId: 'c3' }] },
        { text: 'Done.' },
      ],
    });
    const options = { model, prompt: `Find ${CANARY.prompt}`, system: `You are ${CANARY.system}`, tools };
    const wire: string[] = [];
    const first = toAgentStreamResponse(streamAgent({ ...options, session }), { runId: 'canary', store: journal, scope: 's' });
    const firstText = await first.text();
    wire.push(firstText);
    const state = agentStateFromParts(undefined, firstText.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6))));
    expect(state.status).toBe('suspended');
    // The tool failure is on the wire, by code, without its message.
    expect(state.parts).toContainEqual(expect.objectContaining({ type: 'tool', toolCallId: 'c2', state: 'error' }));
    const approval = state.pendingApprovals[0]!;
    const second = toAgentStreamResponse(resumeStreamAgent({
      ...options, session, approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }],
    }), { runId: 'canary', store: journal, scope: 's' });
    wire.push(await second.text());
    wire.push(await (await resumeAgentStreamResponse({ store: journal, streamId: 'canary', scope: 's' })).text());
    for (const text of wire) expect(scan(text)).toEqual([]);
    // The run itself did see them: the canaries are on the server, in the record.
    expect(scan(JSON.stringify(await runs.load('canary')))).toEqual(expect.arrayContaining(['prompt', 'system', 'args', 'result']));
  });

  it('sends a failed run without the message its model error carried', async () => {
    const model = createMockModel({ responses: [{ error: new Error(`upstream said api_key=${CANARY.secret}: ${CANARY.modelError}`) }] });
    const frames = await readAll(toAgentStreamResponse(streamAgent({ model, prompt: CANARY.prompt, maxRetries: 0 }), { runId: 'f' }));
    const text = JSON.stringify(frames);
    expect(scan(text)).toEqual([]);
    const terminal = frames.at(-1)!.data.data.terminal;
    expect(terminal.status).toBe('failed');
    expect(terminal.error.code).toBe('model_call_failed');
  });

  it('redacts a secret in a message of Cairn own', async () => {
    const frames = await readAll(toAgentStreamResponse(
      resumeStreamAgent({ model: createMockModel({ responses: [] }), session: { store: createInMemoryAgentRunStore(), runId: `sk-${'a'.repeat(20)}`, scope: 's' } }),
      { runId: 'x' },
    ));
    const error = frames.at(-1)!.data.data.terminal.error;
    expect(error.code).toBe('run_not_found');
    expect(error.message).toContain('[redacted]');
    expect(JSON.stringify(frames)).not.toContain('a'.repeat(20));
  });
});

describe('run views on the wire', () => {
  it('shows a nested run with its own run id and the parent run id, and never its prompt', async () => {
    const nestedTools: AgentTools = {
      delegate: {
        description: 'Runs a helper agent.',
        parameters: { type: 'object', properties: {} },
        execute: async () => {
          const child = streamAgent({ model: createMockModel({ responses: [{ text: 'child answer' }] }), prompt: CANARY.prompt, session: { store: createInMemoryAgentRunStore(), runId: 'child-run', scope: 's' } });
          return (await child.result).text;
        },
      },
    };
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'delegate', toolCallId: 'd1' }] }, { text: 'parent done' }] });
    const frames = await readAll(toAgentStreamResponse(
      streamAgent({ model, prompt: 'Delegate.', tools: nestedTools, session: { store: createInMemoryAgentRunStore(), runId: 'parent-run', scope: 's' } }),
      { runId: 'parent-run' },
    ));
    const views = frames.filter((f) => f.data.type === 'data-run-view').map((f) => f.data.data);
    expect(views.some((v) => v.runId === 'child-run' && v.parentRunId === 'parent-run')).toBe(true);
    expect(views.some((v) => v.runId === 'parent-run' && v.parentRunId === null)).toBe(true);
    const state = agentStateFromParts(undefined, frames.map((f) => f.data));
    expect(state.view).toMatchObject({ runId: 'parent-run', status: 'completed', tools: { started: 1, completed: 1 } });
    expect(state.childViews['child-run']).toMatchObject({ parentRunId: 'parent-run', status: 'completed', steps: 1 });
    expect(scan(JSON.stringify(frames))).toEqual([]);
  });
});

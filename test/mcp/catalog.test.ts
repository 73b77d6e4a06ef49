/**
 * The servers' tool catalog is part of the binding: a resume whose servers
 * list another catalog fails with the binding error unless
 * `onCatalogChange: 'accept'` (which records the new one). A catalog a server
 * announces (`notifications/tools/list_changed`) comes in at the next step
 * boundary, gated like any other tool, and never in the middle of a step.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentOptions, type AgentResult, type AgentSession,
} from 'cairn/agent';
import { createExecutionContext } from 'cairn/policy';
import { createMockModel } from 'cairn/testing';
import { cleanDirs, effectLines, notesServer, world } from './helpers.js';

afterAll(cleanDirs);

const toolAnswers = (result: AgentResult<string>) => result.messages.filter((m) => m.role === 'tool').map((m) => m.content);
const approveAll = (result: AgentResult<string>) =>
  (result.status === 'suspended' ? result.pendingApprovals : []).map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));

describe('the catalog in the binding', () => {
  /** A run suspended on the approval of notes__add_note, its servers listing the v1 catalog. */
  async function suspended(name: string) {
    const { effects } = world(name);
    const store = createInMemoryAgentRunStore();
    const session: AgentSession = { store, runId: name, scope: 't' };
    // One scripted model for every leg: a resume goes on from where the run left its script.
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'notes__add_note', args: { text: 'n1' } }] }, { text: 'Done.' }], strict: false });
    const base = (variant: string, extra: Partial<AgentOptions['mcp']> = {}): AgentOptions & { session: AgentSession } => ({
      model,
      prompt: 'x', session,
      mcp: { servers: [notesServer(effects, { needsApproval: ['add_note'], env: { MCP_VARIANT: variant } })], ...extra },
    });
    const first = await runAgent(base('v1'));
    expect(first.status).toBe('suspended');
    return { store, base, approvals: approveAll(first), effects, before: (await store.load(name))!.binding };
  }

  it('a resume whose servers list the same catalog goes on', async () => {
    const { base, approvals, effects } = await suspended('same');
    const resumed = await resumeAgent({ ...base('v1'), approvalResponses: approvals });
    expect(resumed.status).toBe('completed');
    expect(effectLines(effects)).toEqual(['note n1']);
  });

  it('a changed catalog fails the resume with the binding error, says which tool changed, and writes nothing', async () => {
    const { store, base, approvals, effects } = await suspended('changed');
    const revision = (await store.load('changed'))!.revision;
    const resumed = await resumeAgent({ ...base('v2'), approvalResponses: approvals });
    expect(resumed.status).toBe('failed');
    expect(resumed.status === 'failed' && resumed.error).toMatchObject({
      name: 'BindingChangedError', code: 'binding_changed', message: 'Native agent binding changed across resume.',
      details: ['mcp tool notes__add_note: its schemas, description, replay or approval'],
    });
    expect((await store.load('changed'))!.revision).toBe(revision);
    expect(effectLines(effects)).toEqual([]);
  });

  it("onCatalogChange: 'accept' goes on with the new catalog, says so, and records it", async () => {
    const { store, base, approvals, effects, before } = await suspended('accept');
    const resumed = await resumeAgent({ ...base('v2', { onCatalogChange: 'accept' }), approvalResponses: approvals });
    expect(resumed.status).toBe('completed');
    expect(resumed.warnings.find((w) => w.setting === 'mcp')?.message).toContain('mcp tool notes__add_note: its schemas');
    expect(effectLines(effects)).toEqual(['note n1']);
    const after = (await store.load('accept'))!.binding;
    expect(after.mcp).not.toBe(before.mcp);
    // The recorded catalog is the new one: a resume with the v2 servers and the default 'fail' finds nothing changed.
    const again = await resumeAgent(base('v2'));
    expect(again.status).toBe('completed');
  });

  it('a resume without mcp, of a run that had it, is a changed binding', async () => {
    const { base, approvals } = await suspended('dropped');
    const { mcp: _dropped, ...withoutMcp } = base('v1');
    const resumed = await resumeAgent({ ...withoutMcp, approvalResponses: approvals });
    expect(resumed.status === 'failed' && resumed.error.code).toBe('binding_changed');
  });

  it('a run that ended answers from its record without starting its servers', async () => {
    const { effects } = world('ended');
    const store = createInMemoryAgentRunStore();
    const session = { store, runId: 'ended', scope: 't' };
    const options = { model: createMockModel({ responses: [{ text: 'Hi.' }] }), prompt: 'x', session, mcp: { servers: [notesServer(effects)] } };
    expect((await runAgent(options)).status).toBe('completed');
    const gone = { name: 'notes', transport: { type: 'stdio' as const, command: '/nonexistent/server' } };
    const resumed = await resumeAgent({ ...options, mcp: { servers: [gone] } });
    expect(resumed).toMatchObject({ status: 'completed', text: 'Hi.' });
  });
});

describe('a catalog the server announces', () => {
  it('comes in at the next step boundary: a call of the new tool in the same step is not available, in the next it runs', async () => {
    const { effects } = world('refresh');
    const store = createInMemoryAgentRunStore();
    const model = createMockModel({
      responses: [
        // Step 0: add a tool, and call it in the same batch (before any boundary).
        { toolCalls: [{ toolName: 'notes__add_tool', args: { name: 'stamp' }, toolCallId: 'add' }, { toolName: 'notes__stamp', args: { text: 'early' }, toolCallId: 'early' }] },
        { toolCalls: [{ toolName: 'notes__stamp', args: { text: 'late' }, toolCallId: 'late' }] },
        { text: 'Stamped.' },
      ],
    });
    const result = await runAgent({ model, prompt: 'x', mcp: { servers: [notesServer(effects)] }, session: { store, runId: 'refresh', scope: 't' } });
    expect(result.status).toBe('completed');
    expect(toolAnswers(result)).toEqual(['added stamp', 'Tool "notes__stamp" is not available.', 'stamp: late']);
    expect(model.calls[0]!.tools.map((t) => t.name)).not.toContain('notes__stamp');
    expect(model.calls[1]!.tools.map((t) => t.name)).toContain('notes__stamp');
    expect(effectLines(effects)).toEqual(['stamp late']);
    expect(result.warnings.find((w) => w.setting === 'mcp')?.message).toContain('mcp tool notes__stamp was added');
    // The record's binding follows the catalog the run used last.
    const binding = (await store.load('refresh'))!.binding;
    expect(Object.keys(binding.parts!.mcp!)).toContain('notes__stamp');
  });

  it('is gated like any other tool: the execution policy and approvals hold a refreshed tool', async () => {
    const { effects } = world('gated');
    const responses = () => [
      { toolCalls: [{ toolName: 'notes__add_tool', args: { name: 'stamp' } }] },
      { toolCalls: [{ toolName: 'notes__stamp', args: { text: 'x' } }] },
      { text: 'ok' },
    ];
    const execution = createExecutionContext({ allowedTools: ['notes__add_tool'] });
    const refused = await runAgent({ model: createMockModel({ responses: responses() }), prompt: 'x', execution, mcp: { servers: [notesServer(effects)] } });
    expect(refused.status === 'failed' && refused.error.code).toBe('tool_not_allowed');
    const held = await runAgent({
      model: createMockModel({ responses: responses() }), prompt: 'x', mcp: { servers: [notesServer(effects, { needsApproval: ['stamp'] })] },
    });
    expect(held.status).toBe('suspended');
    expect(held.status === 'suspended' && held.pendingApprovals.map((p) => p.toolName)).toEqual(['notes__stamp']);
    expect(effectLines(effects)).toEqual([]);
  });
});

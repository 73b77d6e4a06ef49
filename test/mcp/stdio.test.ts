/**
 * MCP tools over stdio against a real server written with the SDK's server
 * classes (servers/notes.mjs): named `<server>__<tool>`, called through the
 * run's one tool path (receipts, approvals, the execution policy), replay
 * policy from the server's annotations, tool errors, outputSchema checks.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, resumeAgent, runAgent, streamAgent, type AgentEvent, type AgentOptions, type AgentResult, type AgentSession,
} from 'cairn/agent';
import { createExecutionContext } from 'cairn/policy';
import { createMockModel } from 'cairn/testing';
import { cleanDirs, effectLines, notesServer, rawServer, world } from './helpers.js';

afterAll(cleanDirs);

const call = (toolName: string, args: Record<string, unknown> = {}, toolCallId?: string) => ({
  toolCalls: [{ toolName, args: args as never, ...(toolCallId ? { toolCallId } : {}) }],
});
const toolMessages = (result: AgentResult<string>) => result.messages.filter((m) => m.role === 'tool');

describe('MCP tools over stdio', () => {
  it('offers each tool as <server>__<tool> with its description and schema, and runs a call through a receipt', async () => {
    const { effects } = world('basic');
    const store = createInMemoryAgentRunStore();
    const model = createMockModel({ responses: [call('notes__add_note', { text: 'milk' }), { text: 'Noted.' }] });
    const result = await runAgent({
      model, prompt: 'Note milk.', mcp: { servers: [notesServer(effects)] },
      session: { store, runId: 'basic', scope: 't' },
    });
    expect(result.status).toBe('completed');
    const offered = model.calls[0]!.tools;
    expect(offered.map((t) => t.name)).toEqual([
      'notes__add_note', 'notes__add_tool', 'notes__ask_model', 'notes__charge', 'notes__echo', 'notes__fail', 'notes__list_notes', 'notes__weather',
    ]);
    const addNote = offered.find((t) => t.name === 'notes__add_note')!;
    expect(addNote.description).toBe('Add a note to the board.');
    expect(addNote.parameters).toMatchObject({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
    expect(toolMessages(result).map((m) => m.content)).toEqual(['noted: milk']);
    expect(effectLines(effects)).toEqual(['note milk']);
    const envelope = await store.load('basic');
    const receipts = Object.values(envelope!.receipts);
    expect(receipts).toHaveLength(1);
    expect(receipts[0]).toMatchObject({
      toolName: 'notes__add_note', status: 'completed', idempotent: false,
      rawResult: { content: [{ type: 'text', text: 'noted: milk' }] }, modelOutput: 'noted: milk',
    });
    expect(envelope!.binding.mcp).toMatch(/^sha256:/);
    expect(Object.keys(envelope!.binding.parts!.mcp!)).toContain('notes__add_note');
  });

  it('takes a tool as idempotent only when the server marks it read-only or idempotent, unless replay is never', async () => {
    const { effects } = world('replay');
    const run = async (replay?: 'never') => {
      const store = createInMemoryAgentRunStore();
      const result = await runAgent({
        model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'notes__list_notes' }, { toolName: 'notes__echo', args: { text: 'a' } }] }, { text: 'ok' }] }),
        prompt: 'x', mcp: { servers: [notesServer(effects, replay ? { replay } : {})] }, session: { store, runId: 'r', scope: 't' },
      });
      expect(result.status).toBe('completed');
      const receipts = Object.values((await store.load('r'))!.receipts);
      return Object.fromEntries(receipts.map((r) => [r.toolName, r.idempotent]));
    };
    expect(await run()).toEqual({ notes__list_notes: true, notes__echo: false });
    expect(await run('never')).toEqual({ notes__list_notes: false, notes__echo: false });
  });

  it('names tools with a toolPrefix of the server, or bare with an empty one', async () => {
    const { effects } = world('prefix');
    for (const [toolPrefix, name] of [['board_', 'board_echo'], ['', 'echo']] as const) {
      const model = createMockModel({ responses: [call(name, { text: 'hi' }), { text: 'ok' }] });
      const result = await runAgent({ model, prompt: 'x', mcp: { servers: [notesServer(effects, { toolPrefix })] } });
      expect(toolMessages(result).map((m) => m.content)).toEqual(['hi']);
    }
  });

  it('holds an MCP call for approval (needsApproval) and runs it once after the verdict', async () => {
    const { effects } = world('approval');
    const store = createInMemoryAgentRunStore();
    const options: AgentOptions & { session: AgentSession } = {
      model: createMockModel({ responses: [call('notes__add_note', { text: 'approved note' }), { text: 'Done.' }] }),
      prompt: 'x', mcp: { servers: [notesServer(effects, { needsApproval: ['add_note'] })] },
      session: { store, runId: 'approval', scope: 't' },
    };
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    expect(effectLines(effects)).toEqual([]);
    const pending = first.status === 'suspended' ? first.pendingApprovals : [];
    expect(pending.map((p) => p.toolName)).toEqual(['notes__add_note']);
    const resumed = await resumeAgent({
      ...options, approvalResponses: pending.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true })),
    });
    expect(resumed.status).toBe('completed');
    expect(effectLines(effects)).toEqual(['note approved note']);
  });

  it('holds MCP tools to the execution policy: a tool it does not allow fails the run before any call starts', async () => {
    const { effects } = world('policy');
    const execution = createExecutionContext({ allowedTools: ['notes__echo'] });
    const result = await runAgent({
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'notes__echo', args: { text: 'a' } }, { toolName: 'notes__add_note', args: { text: 'b' } }] }] }),
      prompt: 'x', execution, mcp: { servers: [notesServer(effects)] },
    });
    expect(result.status).toBe('failed');
    expect(result.status === 'failed' && result.error.code).toBe('tool_not_allowed');
    expect(effectLines(effects)).toEqual([]);
  });

  it("tells the model a tool's error (isError) as the call's failure, and a resume replays it", async () => {
    const { effects } = world('fail');
    const store = createInMemoryAgentRunStore();
    const events: AgentEvent[] = [];
    const stream = streamAgent({
      model: createMockModel({ responses: [call('notes__fail'), { text: 'It failed.' }] }),
      prompt: 'x', mcp: { servers: [notesServer(effects)] }, session: { store, runId: 'fail', scope: 't' },
    });
    for await (const event of stream.events) events.push(event);
    const end = events.find((e) => e.type === 'tool-call-end');
    expect(end).toMatchObject({ isError: true, outcome: 'failed', output: 'the printer is on fire' });
    const receipt = Object.values((await store.load('fail'))!.receipts)[0]!;
    expect(receipt).toMatchObject({ status: 'failed', error: { name: 'McpError', code: 'mcp_tool_error', message: 'the printer is on fire' } });
  });

  it("checks structuredContent against the tool's outputSchema: the model sees it when it matches, and why when it does not", async () => {
    // The SDK's McpServer checks its own tools' results, so the low-level server stands in for one that does not.
    const outputSchema = { type: 'object', properties: { city: { type: 'string' }, celsius: { type: 'number' } }, required: ['city', 'celsius'] };
    const tools = ['good', 'bad', 'bare'].map((name) => ({ name, inputSchema: { type: 'object' }, outputSchema }));
    const results = {
      good: { content: [{ type: 'text', text: 'Oslo 21' }], structuredContent: { city: 'Oslo', celsius: 21 } },
      bad: { content: [{ type: 'text', text: 'Rome warm' }], structuredContent: { city: 'Rome', celsius: 'warm' } },
      bare: { content: [{ type: 'text', text: 'no structure' }] },
    };
    const store = createInMemoryAgentRunStore();
    const model = createMockModel({
      responses: [{ toolCalls: ['good', 'bad', 'bare'].map((name) => ({ toolName: `weather__${name}`, toolCallId: name })) }, { text: 'ok' }],
    });
    const result = await runAgent({
      model, prompt: 'x', mcp: { servers: [rawServer('weather', tools, { results })] }, session: { store, runId: 'out', scope: 't' },
    });
    expect(result.status).toBe('completed');
    const byId = Object.fromEntries(toolMessages(result).map((m) => [(m as { toolCallId: string }).toolCallId, m.content]));
    expect(byId.good).toEqual({ city: 'Oslo', celsius: 21 });
    expect(String(byId.bad)).toContain('mcp_output_invalid');
    expect(String(byId.bad)).toContain('/celsius must be number');
    expect(String(byId.bare)).toContain('the result has no structuredContent');
    const receipts = Object.fromEntries(Object.values((await store.load('out'))!.receipts).map((r) => [r.toolCallId, r]));
    expect([receipts.good!.status, receipts.bad!.status, receipts.bare!.status]).toEqual(['completed', 'validation-failed', 'validation-failed']);
    // The raw result is kept as the server sent it.
    expect(receipts.bad!.rawResult).toMatchObject({ structuredContent: { city: 'Rome', celsius: 'warm' } });
  });
});

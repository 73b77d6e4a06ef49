/**
 * A handoff target with MCP servers of its own (a real MCP server over stdio,
 * test/mcp/servers/notes.mjs, written with the SDK's server classes): its
 * tools are offered once it drives the run, never to the root; its catalog is
 * in the binding from the start, so a resume whose target server lists a
 * changed catalog is refused with nothing written, while a resume of a run
 * that ended answers from the record without contacting the server.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentOptions } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { cleanDirs, effectLines, notesServer, world } from '../mcp/helpers.js';

afterAll(cleanDirs);

const note = { toolCallId: 'n1', toolName: 'notes__add_note', args: { text: 'milk' } };

function options(effects: string, billing: ReturnType<typeof createMockModel>, extra: { variant?: string; approval?: boolean } = {}): AgentOptions {
  return {
    name: 'triage',
    model: createMockModel({ modelId: 'triage', responses: [{ toolCalls: [{ toolCallId: 't1', toolName: 'transfer_to_billing', args: {} }] }] }),
    prompt: 'Note milk.',
    handoffs: [{
      name: 'billing',
      model: billing,
      instructions: 'You are billing.',
      mcp: { servers: [notesServer(effects, { ...(extra.variant ? { env: { MCP_VARIANT: extra.variant } } : {}), ...(extra.approval ? { needsApproval: ['add_note'] } : {}) })] },
    }],
  };
}

describe('a handoff target with MCP servers', () => {
  it('offers its MCP tools once it drives the run, through the same receipts; a resume of the ended run does not contact its server', async () => {
    const { effects } = world('handoff-mcp');
    const store = createInMemoryAgentRunStore();
    const session = { store, runId: 'mcp-1', scope: 't' };
    const billing = createMockModel({ modelId: 'billing', responses: [{ toolCalls: [note] }, { text: 'Noted.' }] });
    const opts = options(effects, billing);
    const result = await runAgent({ ...opts, session });
    expect(result.status).toBe('completed');
    expect((opts.model as ReturnType<typeof createMockModel>).calls[0]!.tools!.map((t) => t.name)).toEqual(['transfer_to_billing']);
    expect(billing.calls[0]!.tools!.map((t) => t.name)).toContain('notes__add_note');
    expect(effectLines(effects)).toEqual(['note milk']);
    const record = (await store.load('mcp-1', { scope: 't' }))!;
    expect(Object.values(record.receipts).map((r) => [r.toolName, r.status])).toContainEqual(['notes__add_note', 'completed']);
    // The server now lists another catalog; the run ended, so its stored result answers and the server is not asked.
    const again = await resumeAgent({ ...options(effects, createMockModel({ modelId: 'billing', responses: [] }), { variant: 'v2' }), session });
    expect(again).toMatchObject({ status: 'completed', text: 'Noted.' });
    expect(effectLines(effects)).toEqual(['note milk']);
  }, 60_000);

  it('a resume whose target server changed its catalog is refused as a binding change, with nothing written', async () => {
    const { effects } = world('handoff-mcp-changed');
    const store = createInMemoryAgentRunStore();
    const session = { store, runId: 'mcp-2', scope: 't' };
    const first = await runAgent({ ...options(effects, createMockModel({ modelId: 'billing', responses: [{ toolCalls: [note] }] }), { approval: true }), session });
    expect(first.status).toBe('suspended');
    const before = (await store.load('mcp-2', { scope: 't' }))!;
    expect(before.activeAgent).toBe('billing');
    const [pending] = first.status === 'suspended' ? first.pendingApprovals : [];
    const billing = createMockModel({ modelId: 'billing', responses: [] });
    const refused = await resumeAgent({
      ...options(effects, billing, { variant: 'v2', approval: true }), session,
      approvalResponses: [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }],
    });
    expect(refused.status === 'failed' && refused.error).toMatchObject({
      code: 'binding_changed', details: ['handoff agent billing: its handoffs, description, fallback models or MCP catalog'],
    });
    expect(billing.calls).toHaveLength(0);
    expect(effectLines(effects)).toEqual([]);
    expect((await store.load('mcp-2', { scope: 't' }))!.revision).toBe(before.revision);
  }, 60_000);
});

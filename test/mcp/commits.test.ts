/**
 * An MCP tool's projection (its structured content, or the text of its
 * content blocks) is Cairn's own, pure and total: the tool-call chart applies
 * it on the transition that keeps the raw result, so an MCP step with a store
 * commits as often as a local tool without a projection, and the one commit
 * holds the raw result and the answer. What the model reads is what the
 * projection gave before, for every kind of content block; a run with
 * onToolResult keeps the path with a separate raw-result commit.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentOptions, type AgentResult, type AgentRunEnvelope, type AgentRunStore, type AgentTool,
} from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { recordingStore } from '../support/recording-store.js';
import { cleanDirs, effectLines, notesServer, rawServer, world } from './helpers.js';

afterAll(cleanDirs);

const PING = { name: 'ping', inputSchema: { type: 'object' } };
const toolMessages = (result: AgentResult<string>) => result.messages.filter((m) => m.role === 'tool').map((m) => m.content);
const oneCall = (toolName: string) => [{ toolCalls: [{ toolName, toolCallId: 'c1', args: {} }] }, { text: 'Done.' }];
const twoCalls = (toolName: string) => [
  { toolCalls: [{ toolName, toolCallId: 'c1', args: {} }, { toolName, toolCallId: 'c2', args: {} }] }, { text: 'Done.' },
];

/** Runs `options` once with a recording store: the result, the envelopes saved in order, and the last one. */
async function recorded(runId: string, options: Partial<AgentOptions>) {
  const { store, saved } = recordingStore();
  const result = await runAgent({ prompt: 'Go.', ...options, model: options.model!, session: { store, runId, scope: 't' } });
  return { result, saved, last: saved[saved.length - 1]! };
}

const statuses = (saved: AgentRunEnvelope[], key: string) => saved.map((e) => e.receipts[key]?.status ?? null);

describe('an MCP step with a store: no commit of its own for the raw result', () => {
  for (const [name, turn] of [['one call', oneCall], ['two calls in one turn', twoCalls]] as const) {
    it(`${name}: as many commits as a local tool without a projection, one more for a local tool with one`, async () => {
      const mcp = await recorded(`mcp-${name}`, { mcp: { servers: [rawServer('raw', [PING])] }, model: createMockModel({ responses: turn('raw__ping') }) });
      const plain: AgentTool = { description: 'Ping.', parameters: { type: 'object' }, execute: () => ({ content: [{ type: 'text', text: 'ping ok' }] }) };
      const local = await recorded(`local-${name}`, { tools: { ping: plain }, model: createMockModel({ responses: turn('ping') }) });
      const projected: AgentTool = { ...plain, toModelOutput: (r) => (r as { content: { text: string }[] }).content[0]!.text };
      const user = await recorded(`user-${name}`, { tools: { ping: projected }, model: createMockModel({ responses: turn('ping') }) });
      for (const r of [mcp, local, user]) expect(r.result).toMatchObject({ status: 'completed', text: 'Done.' });
      expect(mcp.saved.length).toBe(local.saved.length);
      const calls = name === 'one call' ? 1 : 2;
      expect(user.saved.length).toBe(local.saved.length + calls);
      expect(toolMessages(mcp.result)).toEqual(toolMessages(user.result));
      // No commit holds a raw result without its answer: the receipt goes from executing to completed.
      for (const key of ['0:c1', ...(calls === 2 ? ['0:c2'] : [])]) {
        expect(statuses(mcp.saved, key).filter((s) => s !== null && s !== 'executing' && s !== 'completed')).toEqual([]);
        expect(mcp.last.receipts[key]).toMatchObject({
          status: 'completed', rawResult: { content: [{ type: 'text', text: 'ping ok' }] }, modelOutput: 'ping ok',
        });
      }
    });
  }

  it('every kind of content block reads as before: the run with onToolResult (the old path) gives the same answers and receipts', async () => {
    const tools = ['mixed', 'structured'].map((name) => ({ name, inputSchema: { type: 'object' } }));
    const results = {
      mixed: {
        content: [
          { type: 'text', text: 'The chart:' },
          { type: 'image', data: 'aGVsbG8=', mimeType: 'image/png' },
          { type: 'audio', data: 'aGVsbG8=', mimeType: 'audio/wav' },
          { type: 'resource_link', uri: 'file:///chart.csv', name: 'chart' },
          { type: 'resource', resource: { uri: 'file:///notes.txt', text: 'notes' } },
        ],
      },
      structured: { content: [{ type: 'text', text: '{"temp":21}' }], structuredContent: { temp: 21, unit: 'C' } },
    };
    const turn = [
      { toolCalls: tools.map((t, i) => ({ toolName: `raw__${t.name}`, toolCallId: `c${i + 1}`, args: {} })) },
      { text: 'Done.' },
    ];
    const servers = [rawServer('raw', tools, { results })];
    const inline = await recorded('inline', { mcp: { servers }, model: createMockModel({ responses: turn }) });
    // onToolResult (here answering nothing, so the model's copy stays) keeps the path with its own raw-result commit.
    const old = await recorded('old', { mcp: { servers }, model: createMockModel({ responses: turn }), onToolResult: () => undefined });
    expect(toolMessages(inline.result)).toEqual([
      'The chart:\n[image image/png]\n[audio audio/wav]\n[resource file:///chart.csv]\n[resource file:///notes.txt]',
      { temp: 21, unit: 'C' },
    ]);
    expect(toolMessages(old.result)).toEqual(toolMessages(inline.result));
    for (const key of ['0:c1', '0:c2']) expect(inline.last.receipts[key]).toEqual(old.last.receipts[key]);
    expect(old.saved.length).toBe(inline.saved.length + 2);
    expect(statuses(old.saved, '0:c1')).toContain('executed');
    expect(statuses(inline.saved, '0:c1')).not.toContain('executed');
  });

  it('a crash before the one commit leaves the executing receipt: the resume stops for reconciliation, and the call is not made again', async () => {
    const { effects } = world('commit-crash');
    const inner = createInMemoryAgentRunStore();
    let failing = true;
    // The commit that would hold the call's outcome fails (the process is gone before it lands).
    const store: AgentRunStore = {
      load: (runId, options) => inner.load(runId, options),
      async save(envelope, options) {
        if (failing && envelope.receipts['0:c1'] && envelope.receipts['0:c1'].status !== 'executing') throw new Error('disk gone');
        await inner.save(envelope, options);
      },
    };
    const options = {
      prompt: 'Note milk.', mcp: { servers: [notesServer(effects)] },
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'notes__add_note', toolCallId: 'c1', args: { text: 'milk' } }] }, { text: 'Noted.' }] }),
      session: { store, runId: 'crash', scope: 't' },
    };
    const first = await runAgent(options);
    expect(first).toMatchObject({ status: 'failed', error: { code: 'persistence_failed' } });
    expect(effectLines(effects)).toEqual(['note milk']);
    expect((await inner.load('crash'))!.receipts['0:c1']).toMatchObject({ status: 'executing' });
    failing = false;
    const again = await resumeAgent(options);
    expect(again).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required' });
    expect(again.status === 'stopped' && again.unknownEffects?.map((u) => [u.toolCallId, u.status])).toEqual([['c1', 'executing']]);
    expect(effectLines(effects)).toEqual(['note milk']);
  });
});

describe("Cairn's MCP projection is total", () => {
  it('reads any stored JSON without throwing: odd blocks are named in brackets, a value that is not a call result is itself', async () => {
    const { mcpProjection } = await import('../../src/mcp/projection.js');
    expect(mcpProjection({ content: [null, 3, 'x', [], { type: 'text' }, { type: null }, { type: { nested: true } }, { type: 'resource', resource: null }] }))
      .toBe('[content]\n[content]\n[content]\n[content]\n[text]\n[content]\n[{"nested":true}]\n[resource ]');
    expect(mcpProjection({ content: [{ type: 'image', mimeType: { odd: 1 } }] })).toBe('[image {"odd":1}]');
    // An outcome an operator reconciled may be any JSON.
    expect(mcpProjection({ sent: true })).toEqual({ sent: true });
    expect(mcpProjection(null)).toBeNull();
    expect(mcpProjection({ content: [], structuredContent: { n: 1 } })).toEqual({ n: 1 });
  });
});

/**
 * Servers that misbehave: garbage on the wire, silence at every stage, a
 * server that exits, tools whose schemas are not JSON Schema, names that
 * collide, and malformed options. Each ends with a typed error before any
 * model call, with nothing written; a call that hangs is an unknown effect.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, McpError, resumeAgent, runAgent, type AgentOptions, type AgentResult } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import type { McpServerConfig } from '../../src/mcp/types.js';
import { brokenServer, cleanDirs, rawServer } from './helpers.js';

afterAll(cleanDirs);

const error = (result: AgentResult<string>) => (result.status === 'failed' ? result.error : undefined);

/** A run with `servers` that must fail before its model is called, writing nothing. */
async function refused(servers: McpServerConfig[], extra: Partial<AgentOptions> = {}) {
  const model = createMockModel({ responses: [] });
  const store = createInMemoryAgentRunStore();
  const started = Date.now();
  const result = await runAgent({ model, prompt: 'x', mcp: { servers }, session: { store, runId: 'bad', scope: 't' }, ...extra });
  expect(result.status).toBe('failed');
  expect(model.calls).toHaveLength(0);
  expect(await store.load('bad')).toBeUndefined();
  return { error: error(result)!, ms: Date.now() - started };
}

const objectSchema = { type: 'object', properties: { q: { type: 'string' } } };

describe('a server that breaks the protocol or goes silent', () => {
  it('answers with text that is not JSON-RPC: mcp_protocol_error, at once rather than at the timeout', async () => {
    const { error: e, ms } = await refused([brokenServer('text', { timeouts: { connectMs: 20_000 } })]);
    expect(e).toMatchObject({ name: 'McpError', code: 'mcp_protocol_error' });
    expect(e.message).toContain('MCP server broken answered with something that is not MCP');
    expect(ms).toBeLessThan(20_000);
  });

  it('answers initialize with JSON-RPC that is not an InitializeResult: mcp_protocol_error', async () => {
    const { error: e } = await refused([brokenServer('jsonrpc')]);
    expect(e).toMatchObject({ name: 'McpError', code: 'mcp_protocol_error' });
  });

  it('never answers the handshake: mcp_timeout after connectMs', async () => {
    const { error: e } = await refused([brokenServer('silent', { timeouts: { connectMs: 300 } })]);
    expect(e).toMatchObject({ name: 'McpError', code: 'mcp_timeout' });
    expect(e.message).toContain('did not finish its handshake within 300 ms');
  });

  it('never answers tools/list: mcp_timeout after listMs', async () => {
    const { error: e } = await refused([brokenServer('hang-list')], { mcp: { servers: [brokenServer('hang-list')], timeouts: { listMs: 300 } } });
    expect(e).toMatchObject({ name: 'McpError', code: 'mcp_timeout' });
    expect(e.message).toContain('did not list its tools within 300 ms');
  });

  it('exits before the handshake: mcp_connect_failed with the end of its stderr', async () => {
    const { error: e } = await refused([brokenServer('exit')]);
    expect(e).toMatchObject({ name: 'McpError', code: 'mcp_connect_failed' });
    expect(e.message).toContain('broken server: no configuration found');
  });

  it('cannot be started: mcp_connect_failed', async () => {
    const { error: e } = await refused([{ name: 'ghost', transport: { type: 'stdio', command: '/nonexistent/mcp-server' } }]);
    expect(e).toMatchObject({ name: 'McpError', code: 'mcp_connect_failed' });
    expect(e.message).toContain('MCP server ghost could not be reached');
  });

  it('an HTTP endpoint where nothing listens: mcp_connect_failed', async () => {
    const { error: e } = await refused([{ name: 'web', transport: { type: 'http', url: 'http://127.0.0.1:9/mcp' } }]);
    expect(e).toMatchObject({ name: 'McpError', code: 'mcp_connect_failed' });
  });

  it('a failing server among good ones: the first failure in the order given, and every server is closed', async () => {
    const good = rawServer('good', [{ name: 'ping', inputSchema: objectSchema }]);
    const { error: e } = await refused([good, brokenServer('exit')]);
    expect(e.code).toBe('mcp_connect_failed');
  });

  it('never answers a tools/call: past callMs the call is an unknown effect, reconciled and never run again', async () => {
    const store = createInMemoryAgentRunStore();
    const session = { store, runId: 'hang-call', scope: 't' };
    const mcp = { servers: [brokenServer('hang-call')], timeouts: { callMs: 300 } };
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'broken__wait', toolCallId: 'w1' }] }, { text: 'Settled.' }] });
    const first = await runAgent({ model, prompt: 'x', mcp, session });
    expect(first).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required' });
    expect(first.status === 'stopped' && first.unknownEffects?.map((u) => u.toolCallId)).toEqual(['w1']);
    const warning = first.warnings.find((w) => w.setting === 'mcp');
    expect(warning?.message).toContain('no answer came within 300 ms');
    expect(warning?.toolCallId).toBe('w1');
    expect(Object.values((await store.load('hang-call'))!.receipts).map((r) => r.status)).toEqual(['executing']);
    // A resume without settling it stops again; settled, the recorded outcome answers and the server is not asked again.
    const again = await resumeAgent({ model, prompt: 'x', mcp, session });
    expect(again).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required' });
    const settled = await resumeAgent({ model, prompt: 'x', mcp, session, reconciledToolResults: [{ toolCallId: 'w1', output: 'it ran' }] });
    expect(settled.status).toBe('completed');
    expect(settled.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['it ran']);
  });

  it('a call of a tool the server marks idempotent, cut off, runs again by itself on the next resume', async () => {
    const store = createInMemoryAgentRunStore();
    const session = { store, runId: 'hang-idem', scope: 't' };
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'broken__wait', toolCallId: 'w1' }] }, { text: 'Waited.' }] });
    const hanging = brokenServer('hang-call');
    (hanging.transport as { env: Record<string, string> }).env.MCP_IDEMPOTENT = '1';
    const first = await runAgent({ model, prompt: 'x', mcp: { servers: [hanging], timeouts: { callMs: 300 } }, session });
    expect(first.status).toBe('stopped');
    expect(Object.values((await store.load('hang-idem'))!.receipts)).toMatchObject([{ status: 'executing', idempotent: true }]);
    // The same catalog from a server that answers: the call runs again under the same identity, no operator needed.
    const answering = rawServer('broken', [{
      name: 'wait', description: 'Never answers.', inputSchema: { type: 'object', properties: {} }, annotations: { idempotentHint: true },
    }]);
    const resumed = await resumeAgent({ model, prompt: 'x', mcp: { servers: [answering] }, session });
    expect(resumed.status).toBe('completed');
    expect(resumed.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['wait ok']);
  });
});

describe('a catalog that cannot be offered', () => {
  it('a tool whose inputSchema is not valid JSON Schema: mcp_tool_schema_invalid naming server and tool', async () => {
    const { error: e } = await refused([rawServer('crm', [
      { name: 'lookup', inputSchema: objectSchema },
      { name: 'update', inputSchema: { type: 'object', properties: { id: { type: 'strin' } } } },
    ])]);
    expect(e).toMatchObject({ name: 'McpError', code: 'mcp_tool_schema_invalid' });
    expect(e.message).toContain('MCP server crm offers tool update with an inputSchema that is not a valid JSON Schema');
  });

  it('a tool whose outputSchema is not valid JSON Schema: mcp_tool_schema_invalid', async () => {
    const { error: e } = await refused([rawServer('crm', [{ name: 'lookup', inputSchema: objectSchema, outputSchema: { type: 'object', properties: { id: { type: 'strin' } } } }])]);
    expect(e.code).toBe('mcp_tool_schema_invalid');
    expect(e.message).toContain('tool lookup with an outputSchema that is not a valid JSON Schema');
  });

  it('a tool list of the wrong shape (an inputSchema that is no object schema): mcp_protocol_error', async () => {
    const { error: e } = await refused([rawServer('crm', [{ name: 'lookup', inputSchema: { type: 'string' } }])]);
    expect(e.code).toBe('mcp_protocol_error');
  });

  it('two servers offering one name, or an MCP tool named like a local tool: mcp_tool_name_duplicate', async () => {
    const a = rawServer('a', [{ name: 'lookup', inputSchema: objectSchema }], { toolPrefix: '' });
    const b = rawServer('b', [{ name: 'lookup', inputSchema: objectSchema }], { toolPrefix: '' });
    const { error: across } = await refused([a, b]);
    expect(across).toMatchObject({ name: 'McpError', code: 'mcp_tool_name_duplicate' });
    expect(across.message).toContain('MCP server b offers tool lookup as "lookup", the name tool lookup of server a has');
    const local = { lookup: { parameters: { type: 'object' as const }, execute: () => 'local' } };
    const { error: withLocal } = await refused([a], { tools: local });
    expect(withLocal.code).toBe('mcp_tool_name_duplicate');
    expect(withLocal.message).toContain('a tool of the run');
  });

  it('names a provider refuses are made safe, and an over-long one keeps a hash of the whole', async () => {
    const long = `x${'y'.repeat(80)}`;
    const model = createMockModel({ responses: [{ text: 'ok' }] });
    const result = await runAgent({
      model, prompt: 'x', mcp: { servers: [rawServer('crm', [{ name: 'get.user', inputSchema: objectSchema }, { name: long, inputSchema: objectSchema }])] },
    });
    expect(result.status).toBe('completed');
    const names = model.calls[0]!.tools.map((t) => t.name);
    expect(names[0]).toBe('crm__get_user');
    expect(names[1]).toMatch(/^crm__xy{49}_[0-9a-f]{8}$/);
  });
});

describe('options refused before any server is started', () => {
  const model = createMockModel({ responses: [] });
  const cases: Array<[string, unknown]> = [
    ['no servers', { servers: [] }],
    ['a server without a name', { servers: [{ transport: { type: 'stdio', command: 'x' } }] }],
    ['a name with __', { servers: [{ name: 'a__b', transport: { type: 'stdio', command: 'x' } }] }],
    ['two servers of one name', { servers: [{ name: 'a', transport: { type: 'stdio', command: 'x' } }, { name: 'a', transport: { type: 'stdio', command: 'y' } }] }],
    ['an unknown transport', { servers: [{ name: 'a', transport: { type: 'ws', url: 'ws://x' } }] }],
    ['an http URL that is not http', { servers: [{ name: 'a', transport: { type: 'http', url: 'file:///etc/passwd' } }] }],
    ['a zero timeout', { servers: [{ name: 'a', transport: { type: 'stdio', command: 'x' } }], timeouts: { callMs: 0 } }],
    ['an unknown onCatalogChange', { servers: [{ name: 'a', transport: { type: 'stdio', command: 'x' } }], onCatalogChange: 'ignore' }],
    ['sampling without a model', { servers: [{ name: 'a', transport: { type: 'stdio', command: 'x' } }], sampling: {} }],
  ];
  it.each(cases)('%s: invalid_options', async (_label, mcp) => {
    const result = await runAgent({ model, prompt: 'x', mcp: mcp as never });
    expect(error(result)).toMatchObject({ code: 'invalid_options' });
    expect(error(result)!.message).toMatch(/^mcp: |mcp\.sampling\.model/);
  });

  it('McpError is a Cairn error with the server it is about', () => {
    const e = new McpError('mcp_timeout', 'crm', 'slow');
    expect(e).toMatchObject({ name: 'McpError', code: 'mcp_timeout', server: 'crm', fault: 'dependency', isRetryable: true });
    expect(McpError.isInstance(e)).toBe(true);
  });
});

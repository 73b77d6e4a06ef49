import { createElement } from 'react';
import { renderToString } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { ChatController, RunPanel, type CursorStorage } from '../../src/react/index.js';
import type { AgentRunView } from '../../src/agent/run-view.js';

interface Frame { seq: number; type: string; [key: string]: unknown }
interface State { seq: number; text: string; terminal: unknown }
const initialState: State = { seq: 0, text: '', terminal: null };
// A stand-in for agentStateFromParts: applies a frame only above the state's seq.
const reduce = (state: State, frames: readonly unknown[]): State => {
  let next = state;
  for (const raw of frames) {
    const f = raw as Frame;
    if (f.seq <= next.seq) continue;
    next = { ...next, seq: f.seq };
    if (f.type === 'text-delta') next.text += f.delta as string;
    if (f.type === 'data-agent') next.terminal = (f.data as { terminal?: unknown }).terminal ?? next.terminal;
  }
  return next;
};

const sse = (frames: Frame[]) => frames.map((f) => `id: ${f.seq}\ndata: ${JSON.stringify(f)}\n\n`).join('');
const body = (text: string) => new Response(new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode(text)); c.close(); } }), { headers: { 'content-type': 'text/event-stream' } });

function memoryStorage(): CursorStorage & { map: Map<string, string> } {
  const map = new Map<string, string>();
  return { map, getItem: (k) => map.get(k) ?? null, setItem: (k, v) => void map.set(k, v), removeItem: (k) => void map.delete(k) };
}

const words = ['Drafting', ' the', ' notes.'];
const all: Frame[] = [
  { seq: 1, type: 'data-agent', data: { runId: 'r-1' } },
  ...words.map((delta, i) => ({ seq: i + 2, type: 'text-delta', delta })),
  { seq: 5, type: 'data-agent', data: { runId: 'r-1', terminal: { status: 'suspended' } } },
];

describe('ChatController', () => {
  it('sends the prompt, reconnects from its cursor after a dropped connection, and folds every frame once', async () => {
    const requests: { url: string; method: string; body?: string; lastEventId?: string }[] = [];
    const fetchStub = (async (url: string, init: RequestInit) => {
      const headers = init.headers as Record<string, string>;
      requests.push({ url, method: init.method!, body: init.body as string | undefined, lastEventId: headers['last-event-id'] });
      // The first response breaks off after the second word; the replay overlaps by one frame.
      if (requests.length === 1) return body(sse(all.slice(0, 3)));
      return body(sse(all.slice(2)));
    }) as typeof fetch;
    const storage = memoryStorage();
    const chat = new ChatController({ api: '/api/agent', initialState, reduce, fetch: fetchStub, storage, reconnectDelayMs: 1 });
    await chat.send('Publish the notes.');
    expect(requests[0]).toMatchObject({ method: 'POST', body: JSON.stringify({ prompt: 'Publish the notes.' }) });
    expect(requests[1]).toMatchObject({ method: 'GET', url: '/api/agent?runId=r-1&cursor=3', lastEventId: '3' });
    expect(chat.snapshot).toMatchObject({ runId: 'r-1', cursor: '5', status: 'idle', state: { text: 'Drafting the notes.', terminal: { status: 'suspended' } } });
    expect(JSON.parse(storage.map.get('cairn-chat')!)).toEqual({ runId: 'r-1', cursor: '5' });
  });

  it('resumes with every verdict and client result and the run id in one request', async () => {
    const sent: unknown[] = [];
    const fetchStub = (async (_url: string, init: RequestInit) => {
      sent.push(init.body ? JSON.parse(init.body as string) : null);
      return body(sse(sent.length === 1 ? all : [{ seq: 6, type: 'text-delta', delta: ' Done.' }, { seq: 7, type: 'data-agent', data: { runId: 'r-1', terminal: { status: 'completed' } } }]));
    }) as typeof fetch;
    const chat = new ChatController({ api: '/api/agent', initialState, reduce, fetch: fetchStub, storage: null });
    await chat.send('go');
    await chat.resume({
      approvalResponses: [{ approvalId: 'a', token: 't', approved: true }],
      clientToolResults: [{ toolCallId: 'c', output: 'blue' }],
    });
    expect(sent[1]).toEqual({
      runId: 'r-1', approvalResponses: [{ approvalId: 'a', token: 't', approved: true }], clientToolResults: [{ toolCallId: 'c', output: 'blue' }],
    });
    expect(chat.snapshot.state).toMatchObject({ text: 'Drafting the notes. Done.', terminal: { status: 'completed' } });
  });

  it('after a reload, replays the run it saved from the start and reads on', async () => {
    const storage = memoryStorage();
    storage.setItem('cairn-chat', JSON.stringify({ runId: 'r-1', cursor: '3' }));
    const urls: string[] = [];
    const fetchStub = (async (url: string) => {
      urls.push(url);
      return body(sse(all));
    }) as typeof fetch;
    const chat = new ChatController({ api: '/api/agent', initialState, reduce, fetch: fetchStub, storage });
    expect(chat.hasSavedRun).toBe(true);
    await chat.reconnect();
    expect(urls).toEqual(['/api/agent?runId=r-1']);
    expect(chat.snapshot.state.text).toBe('Drafting the notes.');
  });

  it('reports a refused request as an error, without retrying', async () => {
    let calls = 0;
    const fetchStub = (async () => {
      calls += 1;
      return new Response('no such run', { status: 404 });
    }) as typeof fetch;
    const chat = new ChatController({ api: '/x', initialState, reduce, fetch: fetchStub, storage: null });
    await chat.send('go');
    expect(calls).toBe(1);
    expect(chat.snapshot.status).toBe('error');
    expect(chat.snapshot.error).toContain('404');
  });
});

describe('RunPanel', () => {
  it('renders a view: status, steps against the limit, tools and waiting answers', () => {
    const view: AgentRunView = {
      runId: 'r-1', parentRunId: null, status: 'suspended', resumed: false, phase: 'loop', steps: 1,
      usage: { inputTokens: 12, outputTokens: 4, totalTokens: 16 },
      tools: { started: 2, completed: 0, failed: 0, pendingApprovals: 1, pendingClientCalls: 1 },
      limits: { maxSteps: 20, maxOutputAttempts: 3, maxVerifyAttempts: 3, deadline: null },
    };
    const html = renderToString(createElement(RunPanel, { view }));
    expect(html).toContain('data-status="suspended"');
    expect(html).toContain('1 / 20');
    expect(html).toContain('1 approval(s), 1 client call(s)');
    expect(renderToString(createElement(RunPanel, { view: null }))).toBe('');
  });
});

/**
 * The UI wire through its public entry: frames, the journal and replay, one
 * writer per stream, resume in one request, and the reducer over what a
 * client reads.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeStreamAgent, streamAgent } from 'cairn/agent';
import {
  agentStateFromParts, createInMemoryAgentStreamJournal, resumeAgentStreamResponse, toAgentStreamResponse,
  type AgentStreamJournal, type AgentUiState,
} from 'cairn/ui';
import { POST } from './spec-example-route.js';
import { agentOptions, readAll, suspendingModel, type ReadFrame } from './helpers.js';

const fold = (frames: ReadFrame[], state?: AgentUiState) => agentStateFromParts(state, frames.map((f) => f.data));

describe('the spec example', () => {
  it('serializes a run to SSE frames that fold to the completed output', async () => {
    const response = POST();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = await readAll(response);
    // No journal: every frame is numbered, none carries an event id, and the first says it cannot be replayed.
    expect(frames.map((f) => f.data.seq)).toEqual(frames.map((_, i) => i + 1));
    expect(frames.every((f) => f.id === undefined)).toBe(true);
    expect(frames[0]!.data).toMatchObject({ type: 'data-agent', data: { runId: 'demo', phase: 'starting', replayable: false } });
    expect(frames.filter((f) => f.data.type === 'text-delta').map((f) => f.data.delta).join('')).toBe('Hello');
    const last = frames[frames.length - 1]!.data;
    expect(last).toMatchObject({ type: 'data-agent', data: { runId: 'demo', phase: 'ended', terminal: { status: 'completed', output: 'Hello' } } });
    const state = fold(frames);
    expect(state).toMatchObject({ status: 'completed', output: 'Hello', runId: 'demo', replayable: false });
    expect(state.parts).toEqual([{ type: 'text', step: 0, text: 'Hello' }]);
    expect(state.view).toMatchObject({ runId: 'demo', status: 'completed', steps: 1 });
  });
});

function setup(journal: AgentStreamJournal = createInMemoryAgentStreamJournal()) {
  const runs = createInMemoryAgentRunStore();
  const session = (runId: string, scope = 'tenant-a') => ({ store: runs, runId, scope });
  return { runs, journal, session };
}

describe('a run that suspends on an approval and a client call, resumed in one request', () => {
  it('numbers every leg on from the last, with the seq as the event id, and folds to the output', async () => {
    const { journal, session } = setup();
    const model = suspendingModel();
    const first = await readAll(toAgentStreamResponse(
      streamAgent({ ...agentOptions(model), session: session('r1') }),
      { runId: 'r1', store: journal, scope: 'tenant-a' },
    ));
    expect(first.map((f) => Number(f.id))).toEqual(first.map((_, i) => i + 1));
    expect(first.map((f) => f.data.seq)).toEqual(first.map((_, i) => i + 1));
    const suspended = fold(first);
    expect(suspended.status).toBe('suspended');
    expect(suspended.output).toBeUndefined();
    expect(suspended.pendingApprovals).toEqual([
      expect.objectContaining({ toolCallId: 'call-publish', toolName: 'publish', args: { slug: 'notes' } }),
    ]);
    expect(suspended.pendingClientCalls).toEqual([expect.objectContaining({ toolCallId: 'call-color', toolName: 'pickColor' })]);
    expect(suspended.parts.filter((p) => p.type === 'tool').map((p) => (p as { state: string }).state)).toEqual(['awaiting-approval', 'awaiting-client']);
    expect(await journal.head('r1')).toMatchObject({ seq: first.length, ended: true, scope: 'tenant-a' });

    const approval = suspended.pendingApprovals[0]!;
    const second = await readAll(toAgentStreamResponse(
      resumeStreamAgent({
        ...agentOptions(model), session: session('r1'),
        approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }],
        clientToolResults: [{ toolCallId: 'call-color', output: 'teal' }],
      }),
      { runId: 'r1', store: journal, scope: 'tenant-a' },
    ));
    expect(second[0]!.data).toMatchObject({ seq: first.length + 1, type: 'data-agent', data: { phase: 'starting', resumed: true, replayable: true } });
    expect(second.map((f) => Number(f.id))).toEqual(second.map((_, i) => first.length + i + 1));
    const done = fold(second, suspended);
    expect(done).toMatchObject({ status: 'completed', output: 'Published, in teal.', pendingApprovals: [], pendingClientCalls: [] });
    // The same state from the journal alone, read from the start.
    const replay = await readAll(await resumeAgentStreamResponse({ store: journal, streamId: 'r1', scope: 'tenant-a' }));
    expect(replay.map((f) => f.data)).toEqual([...first, ...second].map((f) => f.data));
    expect(fold(replay)).toEqual(done);
  });

  it('serves a client from its cursor, by Last-Event-ID or by ?cursor=, and refuses a cursor that is not a seq', async () => {
    const { journal, session } = setup();
    const all = await readAll(toAgentStreamResponse(
      streamAgent({ ...agentOptions(suspendingModel()), session: session('r2') }),
      { runId: 'r2', store: journal, scope: 'tenant-a' },
    ));
    const byHeader = await readAll(await resumeAgentStreamResponse({
      store: journal, streamId: 'r2', scope: 'tenant-a',
      request: new Request('http://localhost/api/agent?runId=r2', { headers: { 'last-event-id': '3' } }),
    }));
    expect(byHeader.map((f) => f.data)).toEqual(all.slice(3).map((f) => f.data));
    const byQuery = await readAll(await resumeAgentStreamResponse({
      store: journal, streamId: 'r2', scope: 'tenant-a', request: new Request('http://localhost/api/agent?runId=r2&cursor=5'),
    }));
    expect(byQuery.map((f) => Number(f.id))).toEqual(all.slice(5).map((f) => Number(f.id)));
    const atEnd = await readAll(await resumeAgentStreamResponse({ store: journal, streamId: 'r2', scope: 'tenant-a', cursor: all.length }));
    expect(atEnd).toEqual([]);

    for (const cursor of ['-1', 'abc', '1.5', String(all.length + 1)]) {
      const refused = await resumeAgentStreamResponse({ store: journal, streamId: 'r2', scope: 'tenant-a', cursor });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: unknown }).error).toMatchObject({ name: 'AgentStreamReplayError', code: 'journal_cursor_invalid' });
    }
    for (const [streamId, scope] of [['nope', 'tenant-a'], ['r2', 'tenant-b'], ['r2', undefined]] as const) {
      const missing = await resumeAgentStreamResponse({ store: journal, streamId, ...(scope ? { scope } : {}) });
      expect(missing.status).toBe(404);
      expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('journal_stream_not_found');
    }
  });

  it('follows the live leg after the frames a reconnecting client missed', async () => {
    const { journal, session } = setup();
    const model = suspendingModel({ delayMs: 150 });
    const first = await readAll(toAgentStreamResponse(streamAgent({ ...agentOptions(model), session: session('r3') }), { runId: 'r3', store: journal }));
    const approval = fold(first).pendingApprovals[0]!;
    const live = toAgentStreamResponse(resumeStreamAgent({
      ...agentOptions(model), session: session('r3'),
      approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }],
      clientToolResults: [{ toolCallId: 'call-color', output: 'teal' }],
    }), { runId: 'r3', store: journal });
    // The client that made the resume goes away at once; another reconnects from the end of the first leg while the model waits.
    await live.body!.cancel();
    await new Promise((resolve) => setTimeout(resolve, 30));
    const head = await journal.head('r3');
    expect(head!.ended).toBe(false);
    const reconnected = await readAll(await resumeAgentStreamResponse({ store: journal, streamId: 'r3', cursor: first.length }));
    expect(reconnected[0]!.data.seq).toBe(first.length + 1);
    expect(reconnected.map((f) => Number(f.id))).toEqual(reconnected.map((_, i) => first.length + i + 1));
    expect(fold(reconnected, fold(first))).toMatchObject({ status: 'completed', output: 'Published, in teal.' });
    // The leg went on after its client left, and the journal holds all of it.
    expect(await journal.head('r3')).toMatchObject({ seq: first.length + reconnected.length, ended: true });
  });
});

describe('a leg written by another process', () => {
  it('is followed by reading the journal again until the leg ends', async () => {
    const shared = createInMemoryAgentStreamJournal();
    // Two objects over one journal: what two servers on one database see. Neither knows the other's live legs.
    const writerSide: AgentStreamJournal = { ...shared };
    const readerSide: AgentStreamJournal = { ...shared };
    const { session } = setup(writerSide);
    const model = suspendingModel({ delayMs: 200 });
    const first = await readAll(toAgentStreamResponse(streamAgent({ ...agentOptions(model), session: session('p1') }), { runId: 'p1', store: writerSide }));
    const approval = fold(first).pendingApprovals[0]!;
    const live = toAgentStreamResponse(resumeStreamAgent({
      ...agentOptions(model), session: session('p1'),
      approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }],
      clientToolResults: [{ toolCallId: 'call-color', output: 'teal' }],
    }), { runId: 'p1', store: writerSide });
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect((await readerSide.head('p1'))!.ended).toBe(false);
    const followed = await readAll(await resumeAgentStreamResponse({ store: readerSide, streamId: 'p1', cursor: first.length, pollIntervalMs: 20 }));
    const direct = await readAll(live);
    expect(followed.map((f) => f.data)).toEqual(direct.map((f) => f.data));
    expect(followed.at(-1)!.data.data.terminal.status).toBe('completed');
  });

  it('that never ends (its process died) is followed until followTimeoutMs, then the response ends', async () => {
    const journal = createInMemoryAgentStreamJournal();
    await journal.append('dead', 0, [{ seq: 1, body: JSON.stringify({ seq: 1, type: 'data-agent', data: { runId: 'dead', seq: 1, phase: 'starting', step: null, resumed: false, replayable: true } }), end: false }]);
    const started = Date.now();
    const frames = await readAll(await resumeAgentStreamResponse({ store: journal, streamId: 'dead', pollIntervalMs: 10, followTimeoutMs: 80 }));
    expect(frames.map((f) => f.data.seq)).toEqual([1]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(70);
  });
});

describe('one writer per stream', () => {
  async function refusedLeg(journal: AgentStreamJournal, response: Response) {
    const frames = await readAll(response);
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.every((f) => f.id === undefined && f.data.seq === undefined)).toBe(true);
    return frames;
  }

  it('sends a refused leg on its own response, without ids, and leaves the journal as it was', async () => {
    const { journal, session, runs } = setup();
    const model = suspendingModel();
    const first = await readAll(toAgentStreamResponse(streamAgent({ ...agentOptions(model), session: session('r4') }), { runId: 'r4', store: journal, scope: 'tenant-a' }));
    const suspended = fold(first);
    const headBefore = await journal.head('r4');
    const framesBefore = await journal.read('r4', 0);

    // An unknown run, another scope's run, and a resume that leaves the client call unanswered.
    const unknown = await refusedLeg(journal, toAgentStreamResponse(
      resumeStreamAgent({ ...agentOptions(model), session: session('nope') }), { runId: 'nope', store: journal, scope: 'tenant-a' }));
    expect(unknown.at(-1)!.data.data.terminal.error.code).toBe('run_not_found');
    expect(await journal.head('nope')).toBeUndefined();
    const otherScope = await refusedLeg(journal, toAgentStreamResponse(
      resumeStreamAgent({ ...agentOptions(model), session: session('r4', 'tenant-b') }), { runId: 'r4', store: journal, scope: 'tenant-a' }));
    expect(otherScope.at(-1)!.data.data.terminal.error.code).toBe('scope_mismatch');
    const approval = suspended.pendingApprovals[0]!;
    const partial = await refusedLeg(journal, toAgentStreamResponse(resumeStreamAgent({
      ...agentOptions(model), session: session('r4'),
      approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }],
    }), { runId: 'r4', store: journal, scope: 'tenant-a' }));
    // The run does not go on with half the answers: it stays suspended, and says so on this response only.
    expect(partial.at(-1)!.data.data.terminal).toMatchObject({ status: 'suspended', pendingClientCalls: [expect.objectContaining({ toolCallId: 'call-color' })] });

    expect(await journal.head('r4')).toEqual(headBefore);
    expect(await journal.read('r4', 0)).toEqual(framesBefore);
    // The reducer shows a refusal and keeps the run as it was.
    const after = fold(otherScope, suspended);
    expect(after.refusal).toMatchObject({ code: 'scope_mismatch' });
    expect({ ...after, refusal: null }).toEqual(suspended);
    expect(fold(partial, suspended)).toEqual(suspended);
    expect((await runs.load('r4'))!.status).toBe('suspended');
  });

  it('refuses a second resume while the first executes, and only the first writes the journal', async () => {
    const { journal, session } = setup();
    const model = suspendingModel({ delayMs: 200 });
    const first = await readAll(toAgentStreamResponse(streamAgent({ ...agentOptions(model), session: session('r5') }), { runId: 'r5', store: journal }));
    const approval = fold(first).pendingApprovals[0]!;
    const resume = () => toAgentStreamResponse(resumeStreamAgent({
      ...agentOptions(model), session: session('r5'),
      approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }],
      clientToolResults: [{ toolCallId: 'call-color', output: 'teal' }],
    }), { runId: 'r5', store: journal });
    const one = resume();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const two = await readAll(resume());
    expect(two.every((f) => f.id === undefined)).toBe(true);
    expect(two.at(-1)!.data.data.terminal.status).toBe('failed');
    const winner = await readAll(one);
    expect(fold(winner, fold(first))).toMatchObject({ status: 'completed' });
    const journaled = await journal.read('r5', 0);
    expect(journaled.map((f) => JSON.parse(f.body))).toEqual([...first, ...winner].map((f) => f.data));
  });

  it('sends nothing the journal does not hold: a failed append ends the response with an error, the run goes on', async () => {
    const inner = createInMemoryAgentStreamJournal();
    let appends = 0;
    const failing: AgentStreamJournal = {
      ...inner,
      async append(...args) {
        appends += 1;
        if (appends === 2) throw new Error('disk full');
        return inner.append(...args);
      },
    };
    const { session, runs } = setup(failing);
    const stream = streamAgent({ ...agentOptions(suspendingModel()), session: session('r6') });
    const frames = await readAll(toAgentStreamResponse(stream, { runId: 'r6', store: failing }));
    const journaled = await inner.read('r6', 0);
    const numbered = frames.filter((f) => f.id !== undefined);
    expect(numbered.map((f) => f.data)).toEqual(journaled.map((f) => JSON.parse(f.body)));
    expect(frames.at(-1)!.data).toMatchObject({ type: 'error', error: { code: 'internal' } });
    expect(frames.at(-1)!.id).toBeUndefined();
    expect((await stream.result).status).toBe('suspended');
    expect((await runs.load('r6'))!.status).toBe('suspended');
  });
});

describe('bad options', () => {
  it('refuses them with invalid_options before reading the stream', () => {
    const stream = streamAgent({ ...agentOptions(suspendingModel()) });
    expect(() => toAgentStreamResponse(stream, {} as never)).toThrow(expect.objectContaining({ code: 'invalid_options' }));
    expect(() => toAgentStreamResponse(stream, { runId: 'x', store: {} as never })).toThrow(expect.objectContaining({ code: 'invalid_options' }));
  });
});

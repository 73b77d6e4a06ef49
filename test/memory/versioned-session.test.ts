/**
 * The versioned memory session over the in-memory store: its option checks,
 * operation ids, explicit writes and their replay, the extraction (asked once,
 * replayed from its receipt, refused whole on a bad answer), forget and its
 * listener, and resolveSource with and without a chat store. Every refused
 * call is checked against the store: nothing written.
 */
import { describe, expect, it } from 'vitest';
import { createInMemoryChatStore } from 'cairn/chat';
import { InvalidOptionsError } from 'cairn';
import {
  createInMemoryVersionedMemoryStore, createMemorySession, EXTRACTION_PROMPT, MemoryError,
  type MemoryLlm, type MemorySessionOptions, type VersionedMemoryForgetEvent, type VersionedMemoryStore,
} from 'cairn/memory/versioned';

const ADA = { userId: 'ada' };
const TEA_ANSWER = '{"facts":[{"text":"Ada prefers tea.","sources":["s0"]}]}';
const teaRequest = (operationId = 'tea-1:memory:extract') => ({
  operationId,
  runId: 'tea-1',
  messages: [
    { id: 'tea-1:0', role: 'user' as const, text: 'I prefer tea.' },
    { id: 'tea-1:1', role: 'assistant' as const, text: 'Noted: tea.' },
  ],
});

function setup(options: Partial<MemorySessionOptions> & { answer?: string | (() => Promise<string>) } = {}) {
  const store = options.store ?? createInMemoryVersionedMemoryStore();
  const asked: Parameters<MemoryLlm>[0][] = [];
  const answer = options.answer ?? TEA_ANSWER;
  const llm: MemoryLlm = async (input) => {
    asked.push(input);
    return typeof answer === 'string' ? answer : answer();
  };
  let n = 0;
  const session = createMemorySession({ llm, generateId: () => `m${++n}`, clock: { now: () => 1000 + n }, ...options, store, scope: options.scope ?? ADA });
  return { store, session, asked };
}

/** The store holds nothing for the scope: no revision, no record, no receipt. */
async function expectNothingWritten(store: VersionedMemoryStore, operationId?: string) {
  expect(await store.scopeRevision({ scope: ADA })).toBe(0);
  expect(await store.list({ scope: ADA, includeRetracted: true, includeForgotten: true })).toEqual([]);
  if (operationId) expect(await store.receipt({ scope: ADA, operationId })).toBeUndefined();
}

async function codeOf(promise: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (error) {
    return (error as { code?: string }).code ?? `no code: ${String(error)}`;
  }
  return 'did not throw';
}

describe('createMemorySession options', () => {
  const store = createInMemoryVersionedMemoryStore();
  it.each([
    ['no options', null],
    ['a store that is not a versioned store', { store: { commit: () => {} }, scope: ADA }],
    ['llm not a function', { store, scope: ADA, llm: 'gpt' }],
    ['onForget not a function', { store, scope: ADA, onForget: {} }],
    ['generateId not a function', { store, scope: ADA, generateId: 7 }],
    ['a clock without now', { store, scope: ADA, clock: {} }],
    ['chats without loadChat', { store, scope: ADA, chats: { saveChat() {} } }],
  ])('refuses %s with InvalidOptionsError', (_, options) => {
    expect(() => createMemorySession(options as never)).toThrow(InvalidOptionsError);
  });

  it.each([[{}], [{ userId: '' }], [{ tenant: 'x' }], [undefined]])('refuses scope %j with memory_scope_invalid', async (scope) => {
    expect(await codeOf(() => createMemorySession({ store, scope: scope as never }))).toBe('memory_scope_invalid');
  });

  it('keeps a copy of its scope', () => {
    const scope = { userId: 'ada' };
    const session = createMemorySession({ store, scope });
    scope.userId = 'bob';
    expect(session.scope).toEqual({ userId: 'ada' });
    expect(session.store).toBe(store);
  });
});

describe('operationId', () => {
  const { session } = setup();
  it('is deterministic, in the documented format', () => {
    expect(session.operationId({ runId: 'tea-1', kind: 'extract' })).toBe('tea-1:memory:extract');
    expect(session.operationId({ kind: 'tool', runId: 'tea-1', modelStep: 2, toolCallId: 'call_9' })).toBe('tea-1:memory:2:call_9');
    expect(session.operationId({ kind: 'tool', runId: 'tea-1', modelStep: 2, toolCallId: 'call_9' }))
      .not.toBe(session.operationId({ kind: 'tool', runId: 'tea-1', modelStep: 3, toolCallId: 'call_9' }));
  });
  it.each([
    [{ runId: '', kind: 'extract' }],
    [{ runId: 'r', kind: 'other' }],
    [{ runId: 'r', kind: 'tool', modelStep: -1, toolCallId: 'c' }],
    [{ runId: 'r', kind: 'tool', modelStep: 1.5, toolCallId: 'c' }],
    [{ runId: 'r', kind: 'tool', modelStep: 0, toolCallId: '' }],
  ])('refuses %j', (of) => {
    expect(() => session.operationId(of as never)).toThrow(InvalidOptionsError);
  });
});

describe('remember, revise, retract', () => {
  it('each is one commit with an explicit record, answered again under its operation id', async () => {
    const { store, session } = setup();
    const first = await session.remember({ text: 'Ada likes jazz.', sources: [{ messageId: 'chat-7' }], operationId: 'op-1' });
    expect(first.replayed).toBe(false);
    expect(first.receipt).toMatchObject({ operationId: 'op-1', planned: 1, scopeRevision: 1, records: [{ id: 'm1', revision: 1, op: 'add' }] });
    expect(first.receipt.requestDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(await store.get({ scope: ADA, id: 'm1' })).toMatchObject({ text: 'Ada likes jazz.', origin: 'explicit', status: 'active', sources: [{ messageId: 'chat-7' }], operationId: 'op-1' });

    const again = await session.remember({ text: 'Ada likes jazz.', sources: [{ messageId: 'chat-7' }], operationId: 'op-1' });
    expect(again).toEqual({ receipt: first.receipt, replayed: true });
    expect(await store.scopeRevision({ scope: ADA })).toBe(1);
    expect(await store.list({ scope: ADA })).toHaveLength(1);

    // The same operation id for another request: refused, nothing applied.
    expect(await codeOf(session.remember({ text: 'Ada likes opera.', operationId: 'op-1' }))).toBe('memory_receipt_mismatch');
    expect(await store.list({ scope: ADA })).toHaveLength(1);

    const revised = await session.revise({ id: 'm1', text: 'Ada likes jazz and blues.', operationId: 'op-2' });
    expect(revised.receipt).toMatchObject({ scopeRevision: 2, records: [{ id: 'm1', revision: 2, op: 'revise' }] });
    expect((await session.revise({ id: 'm1', text: 'Ada likes jazz and blues.', operationId: 'op-2' })).replayed).toBe(true);
    expect(await store.history({ scope: ADA, id: 'm1' })).toHaveLength(2);

    const retracted = await session.retract({ id: 'm1' });
    expect(retracted.receipt).toMatchObject({ scopeRevision: 3, records: [{ id: 'm1', revision: 3, op: 'retract' }] });
    expect(retracted.receipt.operationId).toMatch(/^retract:/);
    expect(await session.recall({ text: 'jazz' })).toEqual([]);
    // A retracted record is not revised: refused, the revision stays.
    expect(await codeOf(session.revise({ id: 'm1', text: 'Ada likes jazz again.' }))).toBe('memory_record_retracted');
    expect(await store.scopeRevision({ scope: ADA })).toBe(3);
  });

  it('generates a fresh operation id for each write without one', async () => {
    const { session } = setup();
    const a = await session.remember({ text: 'Ada lives in Oslo.' });
    const b = await session.remember({ text: 'Ada lives in Oslo.' });
    expect(a.receipt.operationId).toMatch(/^remember:/);
    expect(b.receipt.operationId).not.toBe(a.receipt.operationId);
    expect(b.replayed).toBe(false);
  });

  it.each([
    ['remember without text', (s: ReturnType<typeof setup>['session']) => s.remember({ text: '  ' })],
    ['remember with a bad source', (s: ReturnType<typeof setup>['session']) => s.remember({ text: 'x', sources: [{ messageId: '' }] })],
    ['remember with an empty operation id', (s: ReturnType<typeof setup>['session']) => s.remember({ text: 'x', operationId: '' })],
    ['revise of an unknown id', (s: ReturnType<typeof setup>['session']) => s.revise({ id: 'nope', text: 'x' })],
    ['retract of an unknown id', (s: ReturnType<typeof setup>['session']) => s.retract({ id: 'nope' })],
    ['revise without text', (s: ReturnType<typeof setup>['session']) => s.revise({ id: 'nope', text: '' })],
  ])('%s throws and writes nothing', async (_, call) => {
    const { store, session } = setup();
    expect(await codeOf(() => call(session))).not.toBe('did not throw');
    await expectNothingWritten(store);
  });
});

describe('extract', () => {
  it('the spec example: the LLM\'s fact is stored inferred, citing the user\'s message', async () => {
    const { session, asked } = setup();
    const result = await session.extract(teaRequest());
    expect(result.replayed).toBe(false);
    expect(result.receipt).toMatchObject({ operationId: 'tea-1:memory:extract', planned: 1, requestDigest: session.requestDigest(teaRequest()) });
    const [hit] = await session.recall({ text: 'tea' });
    expect(`${hit?.record.origin} ${hit?.record.sources[0]?.messageId}`).toBe('inferred tea-1:0');
    expect(asked).toHaveLength(1);
    expect(asked[0]!.prompt).toBe(EXTRACTION_PROMPT);
    expect(asked[0]!.messages).toEqual([
      { id: 'tea-1:0', role: 'user', text: 'I prefer tea.', label: 's0' },
      { id: 'tea-1:1', role: 'assistant', text: 'Noted: tea.', label: 's1' },
    ]);
  });

  it('a request that committed is answered from its receipt; the LLM is asked once', async () => {
    const { store, session, asked } = setup();
    const first = await session.extract(teaRequest());
    const again = await session.extract(teaRequest());
    expect(again).toEqual({ receipt: first.receipt, replayed: true });
    expect(asked).toHaveLength(1);
    expect(await store.list({ scope: ADA })).toHaveLength(1);
    expect(await session.receipt('tea-1:memory:extract')).toEqual(first.receipt);
  });

  it('another request under a committed operation id is memory_receipt_mismatch, the LLM not asked', async () => {
    const { store, session, asked } = setup();
    await session.extract(teaRequest());
    const other = { ...teaRequest(), messages: [{ id: 'tea-1:0', role: 'user' as const, text: 'I prefer coffee.' }] };
    expect(await codeOf(session.extract(other))).toBe('memory_receipt_mismatch');
    expect(asked).toHaveLength(1);
    expect(await store.scopeRevision({ scope: ADA })).toBe(1);
  });

  it('the request digest is the canonical one: the same request, the same digest, whatever the key order', () => {
    const { session } = setup();
    const request = teaRequest();
    const reordered = { messages: request.messages.map((m) => ({ text: m.text, role: m.role, id: m.id })), runId: 'tea-1', operationId: request.operationId };
    expect(session.requestDigest(reordered)).toBe(session.requestDigest(request));
    expect(session.requestDigest(teaRequest('other'))).not.toBe(session.requestDigest(request));
  });

  it.each([
    ['text that is not JSON', 'Ada prefers tea.'],
    ['JSON that is not an object', '[1,2]'],
    ['no facts list', '{"memory":[]}'],
    ['a fact that is a string', '{"facts":["Ada prefers tea."]}'],
    ['a fact without text', '{"facts":[{"text":"  ","sources":["s0"]}]}'],
    ['a fact without sources', '{"facts":[{"text":"Ada prefers tea."}]}'],
    ['a fact with no source', '{"facts":[{"text":"Ada prefers tea.","sources":[]}]}'],
    ['a source that is not a label', '{"facts":[{"text":"Ada prefers tea.","sources":[0]}]}'],
  ])('an answer with %s is memory_llm_invalid and writes nothing', async (_, answer) => {
    const { store, session } = setup({ answer });
    const error = await session.extract(teaRequest()).catch((e: unknown) => e);
    expect(MemoryError.isInstance(error)).toBe(true);
    expect((error as MemoryError).code).toBe('memory_llm_invalid');
    expect((error as MemoryError).fault).toBe('model');
    await expectNothingWritten(store, 'tea-1:memory:extract');
  });

  it('a fact citing a label the request does not have is memory_source_unknown and writes nothing', async () => {
    const { store, session } = setup({ answer: '{"facts":[{"text":"Ada prefers tea.","sources":["s0"]},{"text":"Ada is tired.","sources":["s5"]}]}' });
    expect(await codeOf(session.extract(teaRequest()))).toBe('memory_source_unknown');
    await expectNothingWritten(store, 'tea-1:memory:extract');
  });

  it('an LLM that throws: its error comes back, nothing is written, and a later call asks again', async () => {
    let calls = 0;
    const boom = new Error('provider down');
    const { store, session } = setup({ answer: async () => { if (++calls === 1) throw boom; return TEA_ANSWER; } });
    await expect(session.extract(teaRequest())).rejects.toBe(boom);
    await expectNothingWritten(store, 'tea-1:memory:extract');
    expect((await session.extract(teaRequest())).receipt.planned).toBe(1);
    expect(calls).toBe(2);
  });

  it('an answer with no facts still commits its receipt (planned 0), so a replay does not ask again', async () => {
    const { store, session, asked } = setup({ answer: '```json\n{"facts":[]}\n```' });
    const first = await session.extract(teaRequest());
    expect(first.receipt).toMatchObject({ planned: 0, records: [] });
    expect(await store.receipt({ scope: ADA, operationId: 'tea-1:memory:extract' })).toEqual(first.receipt);
    expect((await session.extract(teaRequest())).replayed).toBe(true);
    expect(asked).toHaveLength(1);
    expect(await store.list({ scope: ADA })).toEqual([]);
  });

  it('skips a fact an active record already holds (and a repeated fact), cites every label of a fact', async () => {
    const { store, session } = setup({
      answer: '{"facts":[{"text":"ada prefers  TEA.","sources":["s0"]},{"text":"Ada lives in Oslo.","sources":["s0","s1","s0"]},{"text":"Ada lives in Oslo.","sources":["s1"]}]}',
    });
    await session.remember({ text: 'Ada prefers tea.' });
    const result = await session.extract(teaRequest());
    expect(result.receipt.planned).toBe(1);
    const oslo = await store.get({ scope: ADA, id: result.receipt.records[0]!.id });
    expect(oslo).toMatchObject({ text: 'Ada lives in Oslo.', origin: 'inferred', sources: [{ messageId: 'tea-1:0' }, { messageId: 'tea-1:1' }] });
    expect(await store.list({ scope: ADA })).toHaveLength(2);
  });

  it('a retracted record does not hold its fact: the extraction adds it again', async () => {
    const { session } = setup();
    const { receipt } = await session.remember({ text: 'Ada prefers tea.' });
    await session.retract({ id: receipt.records[0]!.id });
    expect((await session.extract(teaRequest())).receipt.planned).toBe(1);
  });

  it.each([
    ['no operation id', { ...teaRequest(), operationId: '' }],
    ['no run id', { ...teaRequest(), runId: 3 }],
    ['messages not a list', { ...teaRequest(), messages: 'hi' }],
    ['a message of another role', { ...teaRequest(), messages: [{ id: 'a', role: 'tool', text: 'x' }] }],
    ['two messages of one id', { ...teaRequest(), messages: [{ id: 'a', role: 'user', text: 'x' }, { id: 'a', role: 'user', text: 'y' }] }],
  ])('a request with %s is InvalidOptionsError: the LLM not asked, nothing written', async (_, request) => {
    const { store, session, asked } = setup();
    await expect(session.extract(request as never)).rejects.toThrow(InvalidOptionsError);
    expect(asked).toHaveLength(0);
    await expectNothingWritten(store);
  });

  it('needs an llm to ask, not to replay', async () => {
    const store = createInMemoryVersionedMemoryStore();
    await setup({ store }).session.extract(teaRequest());
    const withoutLlm = createMemorySession({ store, scope: ADA });
    expect((await withoutLlm.extract(teaRequest())).replayed).toBe(true);
    await expect(withoutLlm.extract(teaRequest('tea-2:memory:extract'))).rejects.toThrow(InvalidOptionsError);
  });
});

describe('forget', () => {
  it('forgets every revision, then calls onForget with ids and revisions only', async () => {
    const events: VersionedMemoryForgetEvent[] = [];
    const { store, session } = setup({ onForget: async (event) => { events.push(event); } });
    const { receipt } = await session.remember({ text: 'Ada prefers tea.' });
    const id = receipt.records[0]!.id;
    await session.revise({ id, text: 'Ada prefers green tea.' });
    const event = await session.forget({ id });
    expect(event).toMatchObject({ scope: ADA, records: [{ recordId: id, revision: 1 }, { recordId: id, revision: 2 }] });
    expect(events).toEqual([event]);
    expect(Object.keys(events[0]!).sort()).toEqual(['forgottenAt', 'records', 'scope']);
    expect(events[0]!.records.every((r) => Object.keys(r).sort().join() === 'recordId,revision')).toBe(true);
    expect(JSON.stringify(events)).not.toMatch(/tea/);
    expect(await store.get({ scope: ADA, id })).toMatchObject({ text: null, status: 'forgotten' });
    expect(await session.recall({ text: 'tea' })).toEqual([]);
  });

  it('a listener that throws: the forget stays done, a memory_forget_listener_failed error carries the event and the cause', async () => {
    const boom = new Error('run store offline');
    const { store, session } = setup({ onForget: () => { throw boom; } });
    const { receipt } = await session.remember({ text: 'Ada prefers tea.' });
    const id = receipt.records[0]!.id;
    const error = await session.forget({ id }).catch((e: unknown) => e) as MemoryError & { event: VersionedMemoryForgetEvent; cause: unknown };
    expect(MemoryError.isInstance(error)).toBe(true);
    expect(error.code).toBe('memory_forget_listener_failed');
    expect(error.fault).toBe('dependency');
    expect(error.cause).toBe(boom);
    expect(error.message).toContain('run store offline');
    expect(error.event.records).toEqual([{ recordId: id, revision: 1 }]);
    expect(await store.get({ scope: ADA, id })).toMatchObject({ status: 'forgotten', text: null });
  });

  it('a second forget answers the same revisions and calls the listener again; one revision alone can go', async () => {
    const events: VersionedMemoryForgetEvent[] = [];
    const { store, session } = setup({ onForget: (event) => { events.push(event); } });
    const { receipt } = await session.remember({ text: 'Ada prefers tea.' });
    const id = receipt.records[0]!.id;
    await session.revise({ id, text: 'Ada prefers green tea.' });
    const one = await session.forget({ id, revision: 1 });
    expect(one.records).toEqual([{ recordId: id, revision: 1 }]);
    expect((await store.history({ scope: ADA, id })).map((r) => r.text)).toEqual([null, 'Ada prefers green tea.']);
    const all = await session.forget({ id });
    const again = await session.forget({ id });
    expect(again.records).toEqual(all.records);
    expect(events.map((e) => e.records.length)).toEqual([1, 2, 2]);
  });

  it('an unknown id or revision is refused before the listener', async () => {
    let called = 0;
    const { session } = setup({ onForget: () => { called++; } });
    const { receipt } = await session.remember({ text: 'Ada prefers tea.' });
    expect(await codeOf(session.forget({ id: 'nope' }))).toBe('memory_record_not_found');
    expect(await codeOf(session.forget({ id: receipt.records[0]!.id, revision: 9 }))).toBe('memory_revision_unknown');
    expect(await codeOf(session.forget({ id: receipt.records[0]!.id, revision: 0 }))).toBe('invalid_options');
    expect(called).toBe(0);
    expect((await session.recall({ text: 'tea' }))[0]?.record.text).toBe('Ada prefers tea.');
  });
});

describe('resolveSource', () => {
  it('without a chat store, reads <runId>:<index>', async () => {
    const { session } = setup();
    expect(await session.resolveSource({ messageId: 'tea-1:0' })).toEqual({ status: 'found', messageId: 'tea-1:0', runId: 'tea-1', index: 0 });
    expect(await session.resolveSource({ messageId: 'job:7:12' })).toEqual({ status: 'found', messageId: 'job:7:12', runId: 'job:7', index: 12 });
    for (const messageId of ['chat-msg', 'tea-1:', ':3', 'tea-1:01', 'tea-1:x']) {
      expect(await session.resolveSource({ messageId })).toEqual({ status: 'missing', messageId });
    }
  });

  it('with a chat store, finds the message in the chat (the call\'s chatId, else the scope\'s)', async () => {
    const chats = createInMemoryChatStore();
    await chats.saveChat('chat-1', {
      chatId: 'chat-1', scope: { userId: 'ada', chatId: 'chat-1' },
      messages: [{ role: 'user', content: 'Hello.' }, { role: 'user', content: 'I prefer tea.' }, { role: 'assistant', content: 'Noted: tea.' }],
      messageIds: ['in-1', 'tea-1:1', 'tea-1:2'],
    });
    const { session } = setup({ chats });
    expect(await session.resolveSource({ messageId: 'tea-1:1' }, { chatId: 'chat-1' })).toEqual({
      status: 'found', messageId: 'tea-1:1', chatId: 'chat-1', index: 1, runId: 'tea-1', message: { role: 'user', content: 'I prefer tea.' },
    });
    expect(await session.resolveSource({ messageId: 'in-1' }, { chatId: 'chat-1' })).toEqual({
      status: 'found', messageId: 'in-1', chatId: 'chat-1', index: 0, message: { role: 'user', content: 'Hello.' },
    });
    expect(await session.resolveSource({ messageId: 'tea-1:9' }, { chatId: 'chat-1' })).toEqual({ status: 'missing', messageId: 'tea-1:9' });
    expect(await session.resolveSource({ messageId: 'tea-1:1' }, { chatId: 'chat-2' })).toEqual({ status: 'missing', messageId: 'tea-1:1' });

    const inChat = setup({ chats, scope: { userId: 'ada', chatId: 'chat-1' } }).session;
    expect(await inChat.resolveSource({ messageId: 'tea-1:2' })).toMatchObject({ status: 'found', chatId: 'chat-1', index: 2 });

    // Another user's session does not see Ada's chat.
    const bob = setup({ chats, scope: { userId: 'bob' } }).session;
    expect(await bob.resolveSource({ messageId: 'tea-1:1' }, { chatId: 'chat-1' })).toEqual({ status: 'missing', messageId: 'tea-1:1' });
  });
});

describe('request digests', () => {
  it('are sha256 of the canonical JSON of the request', async () => {
    const { createHash } = await import('node:crypto');
    const sha = (text: string) => `sha256:${createHash('sha256').update(text).digest('hex')}`;
    const { session } = setup();
    expect(session.requestDigest(teaRequest())).toBe(sha(
      '{"messages":[{"id":"tea-1:0","role":"user","text":"I prefer tea."},{"id":"tea-1:1","role":"assistant","text":"Noted: tea."}],"operationId":"tea-1:memory:extract","runId":"tea-1"}',
    ));
    const { receipt } = await session.remember({ text: 'Ada likes jazz.', operationId: 'op-1' });
    expect(receipt.requestDigest).toBe(sha('{"op":"remember","sources":[],"text":"Ada likes jazz."}'));
  });
});

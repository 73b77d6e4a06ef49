/**
 * The session on the durable stores (SQLite, PostgreSQL), across a restart:
 * a session made again on the same file or schema (a new store object, a new
 * session, as a new process would) answers an extraction and a tool call of
 * the first one from their receipts, without asking the LLM and without
 * applying anything again; a forget made after the restart reaches the
 * records written before it; two sessions extracting one request at the same
 * time apply it once. PostgreSQL fails on CI when it is unreachable.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSqliteOpsStore, type SqliteOpsStore } from 'cairn/ops/sqlite';
import { createSqliteVersionedMemoryStore } from 'cairn/memory/versioned/sqlite';
import { createPostgresVersionedMemoryStore, type PostgresVersionedMemoryStore } from 'cairn/memory/versioned/postgres';
import { createMemorySession, type MemorySession, type VersionedMemoryForgetEvent, type VersionedMemoryStore } from 'cairn/memory/versioned';
import { describePostgres } from '../stores/pg-env.js';

const ADA = { userId: 'ada' };
const request = {
  operationId: 'tea-1:memory:extract',
  runId: 'tea-1',
  messages: [{ id: 'tea-1:0', role: 'user' as const, text: 'I prefer tea.' }, { id: 'tea-1:1', role: 'assistant' as const, text: 'Noted: tea.' }],
};
const call = (toolCallId: string) => ({ modelStep: 0, toolCallId, messages: [], signal: new AbortController().signal, context: undefined });

/** A backend: `open()` makes a store object on the test's file or schema (a new one each call), `restart()` closes those made so far. */
interface Backend {
  open(): Promise<VersionedMemoryStore>;
  restart(): Promise<void>;
}

/** A session as a process that just started would make it; `asked` counts the LLM's calls. */
async function sessionOn(backend: Backend, onForget?: (event: VersionedMemoryForgetEvent) => void): Promise<{ session: MemorySession; asked: () => number }> {
  let asked = 0;
  const session = createMemorySession({
    store: await backend.open(), scope: ADA,
    llm: async () => {
      asked++;
      await new Promise((resolve) => setTimeout(resolve, 5));
      return '{"facts":[{"text":"Ada prefers tea.","sources":["s0"]}]}';
    },
    ...(onForget ? { onForget } : {}),
  });
  return { session, asked: () => asked };
}

function scenarios(backend: () => Backend) {
  it('answers the first process\'s extraction and tool call from their receipts', async () => {
    const b = backend();
    const first = await sessionOn(b);
    const extracted = await first.session.extract(request);
    const wrote = await first.session.tools({ runId: 'tea-1' }).memory_remember!.execute!({ text: 'Ada lives in Oslo.' }, call('c1'));
    await b.restart();

    const second = await sessionOn(b);
    expect(await second.session.extract(request)).toEqual({ receipt: extracted.receipt, replayed: true });
    expect(second.asked()).toBe(0);
    expect(await second.session.tools({ runId: 'tea-1' }).memory_remember!.execute!({ text: 'Ada lives in Oslo.' }, call('c1')))
      .toEqual({ ...wrote, replayed: true });
    expect(await second.session.store.scopeRevision({ scope: ADA })).toBe(2);
    const [hit] = await second.session.recall({ text: 'tea' });
    expect(`${hit?.record.origin} ${hit?.record.sources[0]?.messageId}`).toBe('inferred tea-1:0');
    // Another request under the first process's operation id is refused there too.
    await expect(second.session.extract({ ...request, messages: request.messages.slice(1) })).rejects.toMatchObject({ code: 'memory_receipt_mismatch' });
    expect(await second.session.store.scopeRevision({ scope: ADA })).toBe(2);
  });

  it('forgets, after a restart, a record written before it', async () => {
    const b = backend();
    const first = await sessionOn(b);
    const { receipt } = await first.session.extract(request);
    const id = receipt.records[0]!.id;
    await first.session.revise({ id, text: 'Ada prefers green tea.' });
    await b.restart();

    const events: VersionedMemoryForgetEvent[] = [];
    const second = await sessionOn(b, (event) => { events.push(event); });
    await second.session.forget({ id });
    expect(events.map((e) => e.records)).toEqual([[{ recordId: id, revision: 1 }, { recordId: id, revision: 2 }]]);
    expect((await second.session.store.history({ scope: ADA, id })).map((r) => r.text)).toEqual([null, null]);
    expect(await second.session.recall({ text: 'tea' })).toEqual([]);
  });

  it('two sessions extracting one request at the same time apply it once', async () => {
    const b = backend();
    const [one, two] = [await sessionOn(b), await sessionOn(b)];
    const results = await Promise.all([one.session.extract(request), two.session.extract(request)]);
    expect(results.map((r) => r.replayed).sort()).toEqual([false, true]);
    expect(results[0]!.receipt).toEqual(results[1]!.receipt);
    expect(await one.session.store.list({ scope: ADA })).toHaveLength(1);
    expect(await one.session.store.scopeRevision({ scope: ADA })).toBe(1);
  });
}

describe('a memory session on SQLite', () => {
  let dir = '';
  let opened: SqliteOpsStore[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-vmem-session-'));
    opened = [];
  });
  afterEach(() => {
    for (const ops of opened) ops.close();
    rmSync(dir, { recursive: true, force: true });
  });
  scenarios(() => ({
    open: async () => {
      const ops = createSqliteOpsStore({ path: join(dir, 'memory.sqlite') });
      opened.push(ops);
      return createSqliteVersionedMemoryStore(ops);
    },
    restart: async () => {
      for (const ops of opened) ops.close();
      opened = [];
    },
  }));
});

describePostgres('a memory session on PostgreSQL', (env) => {
  let opened: PostgresVersionedMemoryStore[] = [];
  afterEach(async () => {
    for (const store of opened) await store.close();
    opened = [];
  });
  scenarios(() => {
    const schema = env.newSchema();
    return {
      open: async () => {
        const store = createPostgresVersionedMemoryStore({ connectionString: env.url, poolOptions: { max: 2 } }, { schema });
        opened.push(store);
        await store.setup();
        return store;
      },
      restart: async () => {
        for (const store of opened) await store.close();
        opened = [];
      },
    };
  });
});

/**
 * The session on a durable store, across a restart: a session made again on
 * the same SQLite file (a new ops store, a new session, as a new process
 * would) answers an extraction and a tool call of the first one from their
 * receipts, without asking the LLM and without applying anything again; a
 * forget made after the restart reaches the records written before it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSqliteOpsStore, type SqliteOpsStore } from 'cairn/ops/sqlite';
import { createSqliteVersionedMemoryStore } from 'cairn/memory/versioned/sqlite';
import { createMemorySession, type MemorySession, type VersionedMemoryForgetEvent } from 'cairn/memory/versioned';

const ADA = { userId: 'ada' };
const request = {
  operationId: 'tea-1:memory:extract',
  runId: 'tea-1',
  messages: [{ id: 'tea-1:0', role: 'user' as const, text: 'I prefer tea.' }, { id: 'tea-1:1', role: 'assistant' as const, text: 'Noted: tea.' }],
};
const call = (toolCallId: string) => ({ modelStep: 0, toolCallId, messages: [], signal: new AbortController().signal, context: undefined });

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

/** A session on the file, as a process that just started would make it; `asked` counts the LLM's calls. */
function sessionOnFile(onForget?: (event: VersionedMemoryForgetEvent) => void): { session: MemorySession; asked: () => number } {
  const ops = createSqliteOpsStore({ path: join(dir, 'memory.sqlite') });
  opened.push(ops);
  let asked = 0;
  const session = createMemorySession({
    store: createSqliteVersionedMemoryStore(ops), scope: ADA,
    llm: async () => {
      asked++;
      return '{"facts":[{"text":"Ada prefers tea.","sources":["s0"]}]}';
    },
    ...(onForget ? { onForget } : {}),
  });
  return { session, asked: () => asked };
}

describe('a memory session on SQLite, across a restart', () => {
  it('answers the first process\'s extraction and tool call from their receipts', async () => {
    const first = sessionOnFile();
    const extracted = await first.session.extract(request);
    const wrote = await first.session.tools({ runId: 'tea-1' }).memory_remember!.execute!({ text: 'Ada lives in Oslo.' }, call('c1'));
    opened[0]!.close();
    opened = [];

    const second = sessionOnFile();
    expect(await second.session.extract(request)).toEqual({ receipt: extracted.receipt, replayed: true });
    expect(second.asked()).toBe(0);
    expect(await second.session.tools({ runId: 'tea-1' }).memory_remember!.execute!({ text: 'Ada lives in Oslo.' }, call('c1')))
      .toEqual({ ...wrote, replayed: true });
    expect(await second.session.store.scopeRevision({ scope: ADA })).toBe(2);
    const [hit] = await second.session.recall({ text: 'tea' });
    expect(`${hit?.record.origin} ${hit?.record.sources[0]?.messageId}`).toBe('inferred tea-1:0');
    // Another request under the first process's operation id is refused, on the file too.
    await expect(second.session.extract({ ...request, messages: request.messages.slice(1) })).rejects.toMatchObject({ code: 'memory_receipt_mismatch' });
  });

  it('forgets, after a restart, a record written before it', async () => {
    const first = sessionOnFile();
    const { receipt } = await first.session.extract(request);
    const id = receipt.records[0]!.id;
    await first.session.revise({ id, text: 'Ada prefers green tea.' });
    opened[0]!.close();
    opened = [];

    const events: VersionedMemoryForgetEvent[] = [];
    const second = sessionOnFile((event) => { events.push(event); });
    await second.session.forget({ id });
    expect(events.map((e) => e.records)).toEqual([[{ recordId: id, revision: 1 }, { recordId: id, revision: 2 }]]);
    expect((await second.session.store.history({ scope: ADA, id })).map((r) => r.text)).toEqual([null, null]);
    expect(await second.session.recall({ text: 'tea' })).toEqual([]);
  });
});

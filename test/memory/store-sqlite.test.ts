/**
 * The SQLite memory and chat stores as parts of the ops store: in the same
 * file as the runs (a run and a memory written through one ops store, read
 * through another), a read-only store that reads and refuses writes with
 * nothing written, driver failures as PersistenceError, and a stored row that
 * cannot be read back as StoredRecordError record_corrupt.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel } from 'cairn/testing';

let dir = '';
let path = '';
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-memory-sqlite-'));
  path = join(dir, 'ops.sqlite');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const chat = { chatId: 'chat-1', scope: { userId: 'ada' }, messages: [{ role: 'user' as const, content: 'Hi!' }], messageIds: ['in-0'] };

describe('the SQLite memory and chat stores', () => {
  it('live in the ops file beside the runs: another ops store on the file reads runs, memories and chats', async () => {
    const ops = createSqliteOpsStore({ path });
    await runAgent({ model: createMockModel({ responses: [{ text: 'ok' }] }), prompt: 'x', session: { store: ops.agentRuns, runId: 'r-1', scope: 't' } });
    await ops.memories.add({ id: 'm-1', scope: { userId: 'ada' }, text: 'prefers tea', embedding: { vector: [0.1, -0, 1e-300, 123456.789], model: 'e' }, at: 1 });
    await ops.chats.writeChat('chat-1', chat, { expectedRevision: 0 });
    ops.close();
    const again = createSqliteOpsStore({ path, create: false });
    expect((await again.agentRuns.load('r-1'))?.runId).toBe('r-1');
    expect(await again.memories.get({ id: 'm-1', scope: { userId: 'ada' } })).toMatchObject({
      text: 'prefers tea', embedding: { vector: [0.1, -0, 1e-300, 123456.789], model: 'e' },
    });
    expect(Object.is((await again.memories.get({ id: 'm-1', scope: { userId: 'ada' } }))!.embedding!.vector[1], -0)).toBe(true);
    expect(await again.chats.readChat('chat-1')).toEqual({ state: 'stored', record: { ...chat, revision: 1 }, revision: 1 });
    again.close();
  });

  it('opened read-only, read what is stored and refuse every write, writing nothing', async () => {
    const ops = createSqliteOpsStore({ path });
    await ops.memories.add({ id: 'm-1', scope: { userId: 'ada' }, text: 'prefers tea', at: 1, expiresAt: 2 });
    await ops.chats.saveChat('chat-1', chat);
    ops.close();
    const ro = createSqliteOpsStore({ path, readonly: true });
    const refused = { code: 'invalid_options' };
    await expect(ro.memories.add({ id: 'm-2', scope: { userId: 'ada' }, text: 'x', at: 1 })).rejects.toMatchObject(refused);
    await expect(ro.memories.update({ id: 'm-1', scope: { userId: 'ada' }, text: 'x', at: 1 })).rejects.toMatchObject(refused);
    await expect(ro.memories.delete({ id: 'm-1', scope: { userId: 'ada' } })).rejects.toMatchObject(refused);
    await expect(ro.memories.sweep({ scope: { userId: 'ada' }, now: 5 })).rejects.toMatchObject(refused);
    await expect(ro.chats.saveChat('chat-1', chat)).rejects.toMatchObject(refused);
    await expect(ro.chats.writeChat('chat-1', chat, { expectedRevision: 1 })).rejects.toMatchObject(refused);
    await expect(ro.chats.deleteChat('chat-1')).rejects.toMatchObject(refused);
    expect((await ro.memories.list({ scope: { userId: 'ada' } })).map((r) => r.id)).toEqual(['m-1']);
    expect((await ro.memories.search({ scope: { userId: 'ada' }, query: 'tea' })).hits).toHaveLength(1);
    expect(await ro.chats.readChat('chat-1')).toMatchObject({ state: 'stored', revision: 1 });
    ro.close();
  });

  it('turn a driver failure into a PersistenceError with the cause, and refuse bad input before touching the driver', async () => {
    const ops = createSqliteOpsStore({ path });
    ops.close();
    await expect(ops.memories.list({ scope: { userId: 'ada' } })).rejects.toMatchObject({ name: 'PersistenceError', code: 'persistence_failed' });
    await expect(ops.chats.loadChat('chat-1')).rejects.toMatchObject({ name: 'PersistenceError', cause: expect.any(Error) });
    await expect(ops.memories.list({ scope: { tenant: 'x' } as never })).rejects.toMatchObject({ code: 'memory_scope_invalid' });
    await expect(ops.chats.loadChat('' as string)).rejects.toMatchObject({ code: 'chat_record_invalid' });
  });

  it('report a stored row that cannot be read back as record_corrupt, naming it', async () => {
    const ops = createSqliteOpsStore({ path });
    await ops.memories.add({ id: 'm-1', scope: { userId: 'ada' }, text: 'prefers tea', embedding: { vector: [1, 2] }, at: 1 });
    await ops.chats.saveChat('chat-1', chat);
    const raw = new Database(path);
    raw.prepare("UPDATE cairn_memories SET embedding = x'0102030405' WHERE id = 'm-1'").run();
    raw.prepare("UPDATE cairn_chats SET record = '{not json' WHERE chat_id = 'chat-1'").run();
    raw.close();
    await expect(ops.memories.get({ id: 'm-1', scope: { userId: 'ada' } })).rejects.toMatchObject({ name: 'StoredRecordError', code: 'record_corrupt', runId: 'm-1' });
    await expect(ops.chats.loadChat('chat-1')).rejects.toMatchObject({ name: 'StoredRecordError', code: 'record_corrupt', runId: 'chat-1' });
    await expect(ops.chats.readChat('chat-1')).rejects.toMatchObject({ code: 'record_corrupt' });
    ops.close();
  });
});

/**
 * The PostgreSQL memory and chat stores as parts of the ops store: in the
 * schema of the runs, a schema without setup() reported as such, concurrent
 * updates and adds that meet on one record (no deadlock, one record a text),
 * and corrupt rows as record_corrupt. Fails on CI when PostgreSQL is unreachable.
 */
import { describe, expect, it } from 'vitest';
import { runAgent } from 'cairn/agent';
import { createPostgresOpsStore, type PostgresOpsStore } from 'cairn/ops/postgres';
import { createMockModel } from 'cairn/testing';
import { describePostgres } from '../stores/pg-env.js';

const chat = { chatId: 'chat-1', scope: { userId: 'ada' }, messages: [{ role: 'user' as const, content: 'Hi!' }], messageIds: ['in-0'] };

describePostgres('the PostgreSQL memory and chat stores', (env) => {
  const open = async (setup = true): Promise<{ ops: PostgresOpsStore; schema: string }> => {
    const schema = env.newSchema();
    const ops = createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 6 } }, { schema });
    if (setup) await ops.setup();
    return { ops, schema };
  };

  it('live in the schema of the runs, on its pool', async () => {
    const { ops, schema } = await open();
    try {
      await runAgent({ model: createMockModel({ responses: [{ text: 'ok' }] }), prompt: 'x', session: { store: ops.agentRuns, runId: 'r-1', scope: 't' } });
      await ops.memories.add({ id: 'm-1', scope: { userId: 'ada' }, text: 'prefers tea', embedding: { vector: [0.1, -0, 1e-300] }, at: 1 });
      await ops.chats.writeChat('chat-1', chat, { expectedRevision: 0 });
      const tables = await env.sql<{ table_name: string }>(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name IN ('cairn_runs', 'cairn_memories', 'cairn_chats') ORDER BY 1", [schema]);
      expect(tables.map((t) => t.table_name)).toEqual(['cairn_chats', 'cairn_memories', 'cairn_runs']);
      const [row] = await env.sql<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".cairn_memories WHERE operation_id IS NULL AND octet_length(embedding) = 24`);
      expect(row?.n).toBe('1');
      expect((await ops.memories.get({ id: 'm-1', scope: { userId: 'ada' } }))?.embedding?.vector).toEqual([0.1, -0, 1e-300]);
    } finally {
      await ops.close();
    }
  });

  it('say that setup() was not run on a schema without the tables', async () => {
    const { ops } = await open(false);
    try {
      await expect(ops.memories.list({ scope: { userId: 'ada' } })).rejects.toMatchObject({ name: 'PersistenceError', message: expect.stringContaining('Call setup() first') });
      await expect(ops.chats.readChat('chat-1')).rejects.toMatchObject({ name: 'PersistenceError', message: expect.stringContaining('Call setup() first') });
    } finally {
      await ops.close();
    }
  });

  it('let updates and adds that meet on one record run concurrently: no deadlock, one record a text', async () => {
    const { ops } = await open();
    try {
      const scope = { userId: 'ada', agentId: 'support' };
      for (let round = 0; round < 15; round++) {
        await ops.memories.add({ id: `a-${round}`, scope, text: `old ${round}`, at: round });
        // One update moves the record to a new text while adds of that text and of the old one race it, through a
        // narrower and the exact scope.
        await Promise.all([
          ops.memories.update({ id: `a-${round}`, scope: { userId: 'ada' }, text: `new ${round}`, at: 100 + round }),
          ops.memories.add({ id: `b-${round}`, scope, text: `new ${round}`, at: 100 + round }),
          ops.memories.add({ id: `c-${round}`, scope, text: `old ${round}`, at: 100 + round }),
          ops.memories.update({ id: `a-${round}`, scope, text: `new  ${round}`, at: 101 + round }),
        ]);
      }
      const records = await ops.memories.list({ scope });
      const texts = records.map((r) => r.text.replace(/\s+/g, ' '));
      expect(new Set(texts).size).toBe(texts.length);
      for (let round = 0; round < 15; round++) expect(texts).toContain(`new ${round}`);
    } finally {
      await ops.close();
    }
  });

  it('report a stored row that cannot be read back as record_corrupt', async () => {
    const { ops, schema } = await open();
    try {
      await ops.memories.add({ id: 'm-1', scope: { userId: 'ada' }, text: 'prefers tea', embedding: { vector: [1, 2] }, at: 1 });
      await ops.chats.saveChat('chat-1', chat);
      await env.sql(`UPDATE "${schema}".cairn_memories SET embedding = '\\x0102'::bytea`);
      await env.sql(`UPDATE "${schema}".cairn_chats SET record = '{not json'`);
      await expect(ops.memories.list({ scope: { userId: 'ada' } })).rejects.toMatchObject({ name: 'StoredRecordError', code: 'record_corrupt' });
      await expect(ops.chats.loadChat('chat-1')).rejects.toMatchObject({ name: 'StoredRecordError', code: 'record_corrupt' });
    } finally {
      await ops.close();
    }
  });
});

describe('the PostgreSQL stores without a database', () => {
  it('refuse bad input before connecting', async () => {
    const ops = createPostgresOpsStore({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
    await expect(ops.memories.add({ id: 'm', scope: { userId: 'ada', constructor: 'x' } as never, text: 't', at: 1 })).rejects.toMatchObject({ code: 'memory_scope_invalid' });
    await expect(ops.chats.writeChat('chat-1', { ...chat, messageIds: [] }, { expectedRevision: 0 })).rejects.toMatchObject({ code: 'chat_record_invalid' });
    await ops.close();
  });
});

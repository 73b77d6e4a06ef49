/**
 * The chat store conformance suite against the three conditional chat stores:
 * the in-memory one, and `ops.chats` of the SQLite and PostgreSQL ops stores
 * (durable: every reopen() is another ops store on the same file or schema,
 * as a second process opens it); and the plain-ChatStore half against a
 * store that offers only loadChat and saveChat.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { createInMemoryChatStore, type ChatStore, type ConditionalChatStore } from 'cairn/chat';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { defineChatStoreConformance, type ChatStoreFixture } from 'cairn/testing';
import { describePostgres, type PostgresTestEnv } from '../stores/pg-env.js';

interface Ops {
  chats: ConditionalChatStore;
  close(): void | Promise<void>;
}

const opened = new WeakMap<ChatStoreFixture, { stores: Ops[]; cleanup?: () => void }>();

function opsFixture(open: () => Ops, cleanup?: () => void): ChatStoreFixture {
  const stores: Ops[] = [];
  const next = () => {
    const ops = open();
    stores.push(ops);
    return ops.chats;
  };
  const fixture: ChatStoreFixture = { store: next(), reopen: async () => next() };
  opened.set(fixture, { stores, ...(cleanup ? { cleanup } : {}) });
  return fixture;
}

async function destroyOps(fixture: ChatStoreFixture): Promise<void> {
  const state = opened.get(fixture);
  for (const ops of state?.stores.splice(0) ?? []) await ops.close();
  state?.cleanup?.();
}

defineChatStoreConformance({ name: 'in-memory', create: async () => ({ store: createInMemoryChatStore() }) }, { describe, it });

// A store of your own with no conditional writes: only loadChat and saveChat, over the in-memory one.
defineChatStoreConformance({
  name: 'plain ChatStore',
  conditional: false,
  async create() {
    const inner = createInMemoryChatStore();
    const plain: ChatStore = {
      loadChat: async (chatId) => {
        const record = await inner.loadChat(chatId);
        if (record) delete record.revision;
        return record;
      },
      saveChat: (chatId, record) => inner.saveChat(chatId, record),
    };
    return { store: plain };
  },
}, { describe, it });

defineChatStoreConformance({
  name: 'sqlite',
  durable: true,
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-chat-conformance-'));
    return opsFixture(() => createSqliteOpsStore({ path: join(dir, 'ops.sqlite'), synchronous: 'normal' }), () => rmSync(dir, { recursive: true, force: true }));
  },
  destroy: destroyOps,
}, { describe, it });

describePostgres('postgres chat conformance', (env: PostgresTestEnv) => {
  defineChatStoreConformance({
    name: 'postgres',
    durable: true,
    async create() {
      const schema = env.newSchema();
      const setup = createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 1 } }, { schema });
      await setup.setup();
      await setup.close();
      return opsFixture(() => createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 4 } }, { schema }));
    },
    destroy: destroyOps,
  }, { describe, it: (name, fn) => it(name, fn, 60_000) });
});

/**
 * The proof that nothing forgotten survives a forget where the forget is
 * documented to reach (docs/forget.md): a V3 run whose context holds a
 * versioned memory record runs to completion, the record is forgotten
 * through the memory session (onForget -> redactForgotten), and then every
 * byte the stores hold is searched for the record's text: on SQLite the
 * whole file (free pages included) and its -wal and -shm, which hold the ops
 * store, the V3 run store and the versioned memory store; on PostgreSQL every
 * row of every table of the test schema, cast to text (bytea as hex).
 *
 * The boundary is shown too: a second forgotten record that the model wrote
 * into its answer stays in the assistant's turn and result.text (text the
 * model wrote from a block is not reached), and only there.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runAgent, type AgentRunEnvelopeV3, type AgentRunStoreV3, type Message } from 'cairn/agent';
import { createMemorySession, createInMemoryVersionedMemoryStore, type VersionedMemoryStore } from 'cairn/memory/versioned';
import { createSqliteVersionedMemoryStore } from 'cairn/memory/versioned/sqlite';
import { createPostgresVersionedMemoryStore } from 'cairn/memory/versioned/postgres';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore } from 'cairn/ops/sqlite';
import { connectionOf } from '../../src/stores/sqlite/index.js';
import { createPostgresAgentRunStoreV3 } from 'cairn/ops/postgres';
import { createMockModel } from 'cairn/testing';
import { describePostgres, type PostgresTestEnv } from '../stores/pg-env.js';

/** Never written by the model: after the forget, no byte holds it. */
const HIDDEN = 'zebra-quartz-1147';
/** Written by the model into its answer: after the forget it stays there (and only there). */
const ECHOED = 'okapi-flint-2290';

interface Stores {
  runs: AgentRunStoreV3;
  memory: VersionedMemoryStore;
  /** Where each text is found in the bytes the stores hold. */
  places(text: string): Promise<string[]>;
}

/** Runs a V3 run that recalls both records, forgets both through the session, and checks the bytes before and after. */
async function proveForget(stores: Stores, runId: string): Promise<void> {
  const { runs } = stores;
  const session = createMemorySession({
    store: stores.memory, scope: { userId: 'ada' }, clock: { now: () => 1_000 },
    onForget: async (event) => {
      await runs.redactForgotten(event);
    },
  });
  const hidden = await session.remember({ text: `Ada's locker code is ${HIDDEN}.` });
  const echoed = await session.remember({ text: `Ada's badge is ${ECHOED}.` });
  const result = await runAgent({
    checkpointVersion: 3, session: { store: runs, runId, scope: 'acme' },
    prompt: "What are Ada's locker code and badge?",
    model: createMockModel({ responses: [{ text: `Your badge is ${ECHOED}; the code I keep to myself.` }] }),
    context: { sources: [session.contextSource({ name: 'mem' })] },
  });
  expect(result.status).toBe('completed');
  const before = (await runs.load(runId))!;
  const history = (before.snapshot as { context: { messages: Message[] } }).context.messages;
  expect(history.some((m) => m.role === 'user' && typeof m.content === 'string' && m.content.includes(HIDDEN))).toBe(true);
  // The search sees the text while it is stored (else finding it nowhere would prove nothing).
  expect(await stores.places(HIDDEN)).not.toEqual([]);

  for (const committed of [hidden, echoed]) {
    const id = committed.receipt.records[0]!.id;
    await session.forget({ id });
  }
  expect(await stores.places(HIDDEN)).toEqual([]);

  const after = (await runs.load(runId))!;
  expect(after.revision).toBe(before.revision);
  expect(after.updatedAt).toBe(before.updatedAt);
  const json = JSON.stringify(after);
  expect(json).not.toContain(HIDDEN);
  // The echoed text stays where a forget does not reach: the model's turn and result.text; no user message holds it.
  const messages = (after.snapshot as { context: { messages: Message[] } }).context.messages;
  const holding = messages.filter((m) => typeof m.content === 'string' && m.content.includes(ECHOED));
  expect(holding.map((m) => m.role)).toEqual(['assistant']);
  expect(after.status === 'completed' && after.result?.text).toContain(ECHOED);
  expect(await stores.places(ECHOED)).not.toEqual([]);
  expect(messages.find((m) => m.role === 'user' && typeof m.content === 'string' && m.content.startsWith('<cairn_context'))?.content)
    .toBe('<cairn_context pass="0" step="0">\n[forgotten]\n</cairn_context>');
}

/** Finds `text` (as UTF-8 bytes) in each file that exists. */
function filePlaces(files: string[], text: string): string[] {
  const needle = Buffer.from(text, 'utf8');
  return files.filter((f) => existsSync(f) && readFileSync(f).includes(needle)).map((f) => f.slice(f.lastIndexOf('/') + 1));
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('nothing forgotten survives in the bytes of the stores', () => {
  it.each([
    ['one file holding the ops store, the V3 run store and the versioned memory store', true],
    ['a file holding the ops store and the V3 run store (the memory store elsewhere)', false],
  ])('SQLite: %s, with its WAL and free pages', async (_name, memoryInFile) => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-forget-bytes-'));
    dirs.push(dir);
    const path = join(dir, 'cairn.sqlite');
    const ops = createSqliteOpsStore({ path });
    try {
      const runs = createSqliteAgentRunStoreV3(ops);
      // The V3 store turns secure_delete on for the connection it shares with the ops store.
      expect(connectionOf(ops).pragma('secure_delete', { simple: true })).toBe(1);
      const memory = memoryInFile ? createSqliteVersionedMemoryStore(ops) : createInMemoryVersionedMemoryStore();
      const files = [path, `${path}-wal`, `${path}-shm`];
      await proveForget({ runs, memory, places: async (text) => filePlaces(files, text) }, 'bytes-sqlite');
      // After the redaction's checkpoint the WAL was truncated (what the search read is the file itself).
      expect(existsSync(`${path}-wal`) ? readFileSync(`${path}-wal`).length : 0).toBe(0);
    } finally {
      ops.close();
    }
    // Closed (the last connection checkpoints and removes the WAL): the file alone still holds nothing.
    expect(filePlaces([path, `${path}-wal`], HIDDEN)).toEqual([]);
  });
});

/** Every row of every table of the schema as text; bytea columns come out as hex, so the text is looked for both ways. */
async function schemaPlaces(env: PostgresTestEnv, schema: string, text: string): Promise<string[]> {
  const tables = await env.sql<{ table_name: string }>(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name", [schema]);
  const hex = Buffer.from(text, 'utf8').toString('hex');
  const found: string[] = [];
  for (const { table_name } of tables) {
    const rows = await env.sql<{ row: string }>(`SELECT t::text AS row FROM "${schema}"."${table_name}" t`);
    if (rows.some((r) => r.row.includes(text) || r.row.includes(hex))) found.push(table_name);
  }
  return found;
}

describePostgres('nothing forgotten survives in the rows of the PostgreSQL schema (run store and memory store)', (env) => {
  const opened: { close(): Promise<void> }[] = [];
  afterAll(async () => {
    for (const store of opened) await store.close();
  });
  it('every row of every table of the schema, cast to text', async () => {
    const schema = env.newSchema();
    const runs = createPostgresAgentRunStoreV3({ connectionString: env.url }, { schema });
    opened.push(runs);
    await runs.setup();
    // The versioned memory store in the same schema: its rows are searched too.
    const memory = createPostgresVersionedMemoryStore({ connectionString: env.url }, { schema });
    opened.push(memory);
    await memory.setup();
    await proveForget({ runs, memory, places: (text) => schemaPlaces(env, schema, text) }, 'bytes-pg');
    const tables = await schemaPlaces(env, schema, ECHOED);
    // The model's answer is in the transcript rows and the head, nowhere else.
    expect(tables.every((t) => t === 'cairn_runs_v3' || t === 'cairn_runs_v3_messages')).toBe(true);
  });
});

export type { AgentRunEnvelopeV3 };

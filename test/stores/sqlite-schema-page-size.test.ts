/**
 * cairn/ops/sqlite page size: a file the store creates has 1,024 B pages (its
 * WAL frames are a quarter of SQLite's default, see NEW_FILE_PAGE_SIZE), and a
 * file created before with 4,096 B pages, at the current schema or an older
 * one, keeps them and keeps working: runs saved in it load and resume, new
 * runs are saved, and the schema is brought up to date. Rows larger than a page
 * (overflow pages) round-trip on the new files.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, type AgentRunStore, type AgentTool } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { MIGRATIONS, SCHEMA_VERSION, createSqliteOpsStore, type SqliteOpsStore } from 'cairn/ops/sqlite';
import { NEW_FILE_PAGE_SIZE } from '../../src/stores/sqlite/schema.js';

let dir = '';
let file = '';
const cleanups: (() => void)[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-sqlite-page-'));
  file = join(dir, 'ops.sqlite');
});

afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
  rmSync(dir, { recursive: true, force: true });
});

function open(options: { readonly?: boolean; create?: boolean } = {}): SqliteOpsStore {
  const ops = createSqliteOpsStore({ path: file, ...options });
  cleanups.push(() => ops.close());
  return ops;
}

/** A plain connection: what the file says about itself. */
function inspect(): { pageSize: number; journal: string; versions: number[] } {
  const db = new Database(file, { readonly: true });
  try {
    return {
      pageSize: db.pragma('page_size', { simple: true }) as number,
      journal: db.pragma('journal_mode', { simple: true }) as string,
      versions: db.prepare<[], number>('SELECT version FROM cairn_ops_schema ORDER BY version').pluck().all(),
    };
  } finally {
    db.close();
  }
}

const allVersions = Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1);

/** A file as an earlier Cairn left it: `pageSize` pages, WAL, the first `version` migrations. */
function madeBefore(pageSize: number, version: number): void {
  const db = new Database(file);
  db.pragma(`page_size = ${pageSize}`);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE cairn_ops_schema (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
  for (let v = 1; v <= version; v++) {
    for (const statement of MIGRATIONS[v - 1]!) db.exec(statement);
    db.prepare('INSERT INTO cairn_ops_schema (version, applied_at) VALUES (?, ?)').run(v, 0);
  }
  db.close();
}

const big = 'z'.repeat(5_000);
const lookup: AgentTool = { parameters: { type: 'object' }, execute: (args: { n: number }) => ({ n: args.n, text: big }) };
const publish: AgentTool = { parameters: { type: 'object', properties: {} }, needsApproval: true, execute: () => 'published' };

/** Three lookups whose results are five pages long, then a call that waits for an approval. */
async function suspendedRun(store: AgentRunStore, runId: string) {
  const result = await runAgent({
    model: createMockModel({
      responses: [
        { toolCalls: [{ toolName: 'lookup', args: { n: 0 } }] },
        { toolCalls: [{ toolName: 'lookup', args: { n: 1 } }] },
        { toolCalls: [{ toolName: 'lookup', args: { n: 2 } }] },
        { toolCalls: [{ toolName: 'publish', args: {} }] },
        { text: 'Done.' },
      ],
    }),
    prompt: `Look up, then publish. ${big}`,
    tools: { lookup, publish },
    session: { store, runId, scope: 'tenant-a' },
  });
  expect(result.status).toBe('suspended');
  return result;
}

async function approveAndFinish(store: AgentRunStore, runId: string) {
  const stored = await store.load(runId);
  const approval = stored!.pendingApprovals![0]!;
  const result = await resumeAgent({
    model: createMockModel({ responses: [{ text: 'Done.' }] }),
    tools: { lookup, publish },
    session: { store, runId, scope: 'tenant-a' },
    approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }],
  });
  expect(result.status).toBe('completed');
  expect(result.text).toBe('Done.');
}

describe('page size', () => {
  it('a new file has the small pages, in WAL mode, and rows several pages long round-trip and resume', async () => {
    const ops = open();
    expect(NEW_FILE_PAGE_SIZE).toBe(1024);
    expect(inspect()).toEqual({ pageSize: NEW_FILE_PAGE_SIZE, journal: 'wal', versions: allVersions });
    await suspendedRun(ops.agentRuns, 'r-1');
    ops.close();
    const again = open();
    const stored = await again.agentRuns.load('r-1');
    const tools = (stored!.snapshot as { context: { messages: { role: string; content: unknown }[] } }).context.messages
      .filter((m) => m.role === 'tool');
    expect(tools.map((m) => (m.content as { text: string }).text)).toEqual([big, big, big]);
    await approveAndFinish(again.agentRuns, 'r-1');
    expect(inspect().pageSize).toBe(NEW_FILE_PAGE_SIZE);
  });

  it('a file made with 4,096 B pages keeps them: its runs load and resume, new runs are saved, list and prune work', async () => {
    madeBefore(4096, SCHEMA_VERSION);
    const first = open();
    await suspendedRun(first.agentRuns, 'r-old');
    first.close();
    const ops = open();
    expect(inspect()).toEqual({ pageSize: 4096, journal: 'wal', versions: allVersions });
    await approveAndFinish(ops.agentRuns, 'r-old');
    await suspendedRun(ops.agentRuns, 'r-new');
    expect((await ops.agentRuns.list()).runs.map((r) => [r.runId, r.status])).toEqual([['r-new', 'suspended'], ['r-old', 'completed']]);
    expect(await ops.agentRuns.prune({ terminalBefore: Infinity })).toBe(1);
    expect(inspect().pageSize).toBe(4096);
  });

  it('a file of an older schema with 4,096 B pages is migrated in place and keeps its page size', async () => {
    madeBefore(4096, 4);
    const ops = open({ create: false });
    expect(inspect()).toEqual({ pageSize: 4096, journal: 'wal', versions: allVersions });
    await suspendedRun(ops.agentRuns, 'r-1');
    await approveAndFinish(ops.agentRuns, 'r-1');
  });

  it('a file another store created is not changed by a second one opening it, and reads back read-only', async () => {
    const first = open();
    const second = open();
    await suspendedRun(second.agentRuns, 'r-1');
    first.close();
    second.close();
    const reader = open({ readonly: true });
    expect((await reader.agentRuns.load('r-1'))?.status).toBe('suspended');
    expect(inspect().pageSize).toBe(NEW_FILE_PAGE_SIZE);
  });
});

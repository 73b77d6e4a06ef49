/**
 * A load hands the store what the rows it checked hold (readRecord,
 * SaveMemory#loaded), so a resume's first save plans from it: on SQLite it
 * reads neither the head nor the open receipts back, on PostgreSQL it is the
 * one-statement save. A write by another store object in between is still
 * seen: the save goes the checked way, or is refused, and the stored record
 * stays exactly what was saved.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { RevisionConflictError, resumeAgent, runAgent, type AgentRunStore } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createPostgresOpsStore, type PostgresOpsStore } from 'cairn/ops/postgres';
import { SaveMemory, type StoredState } from 'cairn/stores';
import { createMockModel } from 'cairn/testing';
import { describePostgres } from './pg-env.js';
import { recordingStore as recording } from '../support/recording-store.js';

const echo = { parameters: { type: 'object' }, execute: (args: unknown) => ({ echoed: args }) };
const options = (store: AgentRunStore, runId: string) => ({
  prompt: 'Look up, then pay.',
  tools: { echo, pay: { ...echo, needsApproval: true } },
  session: { store, runId, scope: 's' },
});

/** A run suspended on an approval, after one completed call; and the response that approves it. */
async function suspended(store: AgentRunStore, runId: string) {
  const first = await runAgent({
    ...options(store, runId),
    model: createMockModel({
      responses: [
        { toolCalls: [{ toolCallId: 'a', toolName: 'echo', args: { n: 1 } }] },
        { toolCalls: [{ toolCallId: 'p', toolName: 'pay', args: { cents: 5 } }] },
      ],
    }),
  });
  if (first.status !== 'suspended') throw new Error(`expected a suspended run, got ${first.status}`);
  const [pending] = first.pendingApprovals;
  return [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }];
}

/** The statements (SQLite) or queries (PostgreSQL) sent while `body` runs. */
type Counter = <T>(body: () => Promise<T>) => Promise<{ value: T; sent: string[] }>;

function cases(open: () => Promise<AgentRunStore>, count: Counter, firstSaveSends: (sent: string[]) => void) {
  it("a resume's first save plans from what the load checked", async () => {
    const store = await open();
    const approvals = await suspended(store, 'r1');
    const fresh = recording(await open());
    let firstSave: string[] | null = null;
    const watched: AgentRunStore = {
      load: fresh.store.load,
      save: async (envelope, o) => {
        if (firstSave) return fresh.store.save(envelope, o);
        firstSave = (await count(() => fresh.store.save(envelope, o))).sent;
      },
    };
    const done = await resumeAgent({ ...options(watched, 'r1'), model: createMockModel({ responses: [{ text: 'Paid.' }] }), approvalResponses: approvals });
    expect(done.status).toBe('completed');
    firstSaveSends(firstSave!);
    // What the saves left is exactly the last envelope, read by a store object that saw none of it.
    expect(await (await open()).load('r1')).toEqual(fresh.saved.at(-1));
  });

  it('a save by another store object after the load is seen: the save goes the checked way, or is refused', async () => {
    const store = await open();
    await suspended(store, 'r2');
    const a = await open();
    const b = await open();
    const loaded = (await a.load('r2'))!;
    const other = (await b.load('r2'))!;
    // b writes the next revision behind a's back.
    await b.save({ ...other, revision: other.revision + 1, updatedAt: other.updatedAt + 1 });
    // a saving that same revision is refused, and writes nothing.
    const refused = await a.save({ ...loaded, revision: loaded.revision + 1, updatedAt: loaded.updatedAt + 2 }).then(() => null, (e: unknown) => e);
    expect(RevisionConflictError.isInstance(refused)).toBe(true);
    expect((await (await open()).load('r2'))!.updatedAt).toBe(other.updatedAt + 1);
    // a saving the revision after it plans from the rows (its remembered state is stale) and stores it exactly.
    const next = { ...loaded, revision: loaded.revision + 2, updatedAt: loaded.updatedAt + 3 };
    await a.save(next);
    expect(await (await open()).load('r2')).toEqual(next);
  });
}

describe('SaveMemory#loaded', () => {
  const state = (revision: number): StoredState => ({
    revision, index: null, unsettled: new Map(), transcriptDigest: Buffer.alloc(32), receiptsDigest: Buffer.alloc(32),
  });
  const row = (revision: number) => ({ revision, transcriptDigest: Buffer.alloc(32), receiptsDigest: Buffer.alloc(32) });

  it('remembers the last SaveMemory.LOADED loaded runs, and a save of one takes it out of that count', () => {
    const memory = new SaveMemory();
    memory.loaded('kept', state(1));
    memory.keep('kept', 'running', state(2));
    for (let i = 0; i < SaveMemory.LOADED + 10; i++) memory.loaded(`r${i}`, state(1));
    // The oldest ten loads are forgotten; the run saved since is not counted as a load.
    expect(memory.recall('r0', row(1))).toBeUndefined();
    expect(memory.recall('r9', row(1))).toBeUndefined();
    expect(memory.recall('r10', row(1))).toBeDefined();
    expect(memory.recall(`r${SaveMemory.LOADED + 9}`, row(1))).toBeDefined();
    expect(memory.recall('kept', row(2))).toBeDefined();
    // A remembered state is recalled only for the row it describes.
    expect(memory.recall('r10', row(2))).toBeUndefined();
  });
});

describe('sqlite', () => {
  const dirs: string[] = [];
  const handles: { close(): void }[] = [];
  afterEach(() => {
    for (const ops of handles.splice(0)) ops.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  let file = '';
  const count: Counter = async (body) => {
    const probe = new Database(':memory:');
    const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, (...args: unknown[]) => unknown>;
    probe.close();
    const sent: string[] = [];
    const originals = new Map<string, (...args: unknown[]) => unknown>();
    for (const method of ['run', 'get', 'all', 'iterate']) {
      const original = proto[method]!;
      originals.set(method, original);
      proto[method] = function (this: { source: string }, ...args: unknown[]) {
        sent.push(this.source);
        return original.apply(this, args);
      };
    }
    try {
      return { value: await body(), sent };
    } finally {
      for (const [method, original] of originals) proto[method] = original;
    }
  };
  cases(async () => {
    if (!file) {
      const dir = mkdtempSync(join(tmpdir(), 'cairn-load-memory-'));
      dirs.push(dir);
      file = join(dir, 'ops.sqlite');
    }
    const ops = createSqliteOpsStore({ path: file });
    handles.push(ops);
    return ops.agentRuns;
  }, count, (sent) => {
    expect(sent.length).toBeGreaterThan(0);
    // Neither the head's bytes nor the open receipt rows are read back.
    expect(sent.filter((s) => /SELECT head FROM|model_step >=/.test(s))).toEqual([]);
  });
  afterEach(() => {
    file = '';
  });
});

describePostgres('postgres', (env) => {
  const opened: PostgresOpsStore[] = [];
  afterEach(async () => {
    for (const ops of opened.splice(0)) await ops.close();
  });
  let schema = '';
  const count: Counter = async (body) => {
    const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const original = proto.query;
    const sent: string[] = [];
    proto.query = function (this: unknown, ...args: unknown[]) {
      const first = args[0] as string | { text?: string };
      sent.push(typeof first === 'string' ? first : first?.text ?? '?');
      return original.apply(this, args);
    };
    try {
      return { value: await body(), sent };
    } finally {
      proto.query = original;
    }
  };
  cases(async () => {
    if (!schema) {
      schema = env.newSchema();
      const ops = createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 2 } }, { schema });
      opened.push(ops);
      await ops.setup();
      return ops.agentRuns;
    }
    const ops = createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 2 } }, { schema });
    opened.push(ops);
    return ops.agentRuns;
  }, count, (sent) => {
    // The one-statement save: no transaction, no row lock, no read of the open receipts.
    expect(sent).toHaveLength(1);
  });
  afterEach(() => {
    schema = '';
  });
});

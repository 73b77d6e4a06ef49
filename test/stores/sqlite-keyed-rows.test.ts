/**
 * SQLite ops schema 8: a run's transcript and receipt rows keyed by one
 * integer (its run number's range), so each table is a single b-tree. A file
 * of schema 7 (rows keyed by run id and index or receipt key) is migrated
 * when a writer opens it, and read as it is by a read-only open; runs of both
 * go on loading and saving exactly.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, type AgentRunEnvelope, type AgentRunStore, type AgentTool } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { MIGRATIONS, SCHEMA_VERSION, createSqliteOpsStore, type SqliteOpsStore } from 'cairn/ops/sqlite';
import { json, recording, waitingRun as sharedWaitingRun } from './recording-store.js';

let dir = '';
const cleanups: (() => void)[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-sqlite-keyed-'));
});

afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
  rmSync(dir, { recursive: true, force: true });
});

function open(path: string, options: { readonly?: boolean } = {}): SqliteOpsStore {
  const ops = createSqliteOpsStore({ path, ...options });
  cleanups.push(() => ops.close());
  return ops;
}

function raw(path: string): Database.Database {
  const db = new Database(path);
  cleanups.push(() => db.close());
  return db;
}



const step: AgentTool = { parameters: { type: 'object' }, execute: (args: { n: number }) => ({ ok: true, n: args.n }) };

/** A run of `steps` tool steps (two parallel calls a step), then a call that waits for an approval. */
const waitingRun = (store: AgentRunStore, runId: string, steps: number) => sharedWaitingRun(store, runId, steps, step);

/** Makes a file of schema 7 (as Cairn left it before migration 8) holding the rows of the runs in `from`, a schema-8 file. */
function schema7(path: string, from: string): void {
  const db = raw(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE cairn_ops_schema (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
  for (const [i, migration] of MIGRATIONS.slice(0, 7).entries()) {
    for (const statement of migration) db.exec(statement);
    db.prepare('INSERT INTO cairn_ops_schema (version, applied_at) VALUES (?, 0)').run(i + 1);
  }
  db.exec(`ATTACH DATABASE '${from.replaceAll("'", "''")}' AS src`);
  const runColumns = 'run_id, scope, status, revision, binding_id, created_at, updated_at, pending_approvals, pending_client_calls, transcript_length, transcript_digest, receipts_digest, head';
  db.exec(`INSERT INTO cairn_runs (${runColumns}) SELECT ${runColumns} FROM src.cairn_runs ORDER BY run_no DESC`);
  db.exec('INSERT INTO cairn_run_messages (run_id, idx, body, revision) SELECT run_id, idx, body, revision FROM src.cairn_run_messages');
  db.exec('INSERT INTO cairn_run_receipts (run_id, receipt_key, model_step, body, revision) SELECT run_id, receipt_key, model_step, body, revision FROM src.cairn_run_receipts');
  db.exec('DETACH DATABASE src');
  db.close();
}

/** The directory's names with each file's hash and mtime: what "nothing was written" is checked against. */
function state(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    out[name] = `${createHash('sha256').update(readFileSync(path)).digest('hex')} ${statSync(path).mtimeMs}`;
  }
  return out;
}

describe('schema 8: integer-keyed transcript and receipt rows', () => {
  it('keeps each run table as one b-tree: no index beside the transcript or the receipts', () => {
    const db = raw(join(dir, 'new.sqlite'));
    db.close();
    open(join(dir, 'new.sqlite')).close();
    const check = raw(join(dir, 'new.sqlite'));
    const indexes = check.prepare<[], string>(
      "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('cairn_run_messages', 'cairn_run_receipts')").pluck().all();
    expect(indexes).toEqual([]);
    expect(check.prepare('SELECT MAX(version) FROM cairn_ops_schema').pluck().get()).toBe(SCHEMA_VERSION);
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(8);
  });

  it('interleaved runs each load exactly, their rows in their own run number\'s range', async () => {
    const path = join(dir, 'ops.sqlite');
    const ops = open(path);
    const a = recording(ops.agentRuns);
    const b = recording(ops.agentRuns);
    const [ra, rb] = await Promise.all([runAgent(waitingRun(a, 'run-a', 4)), runAgent(waitingRun(b, 'run-b', 3))]);
    expect([ra.status, rb.status]).toEqual(['suspended', 'suspended']);
    const reader = open(path);
    expect(json(await reader.agentRuns.load('run-a'))).toEqual(a.saved.at(-1));
    expect(json(await reader.agentRuns.load('run-b'))).toEqual(b.saved.at(-1));
    const db = raw(path);
    const runs = db.prepare<[], { run_id: string; run_no: number }>('SELECT run_id, run_no FROM cairn_runs').all();
    for (const table of ['cairn_run_messages', 'cairn_run_receipts']) {
      for (const { run_id: runId, run_no: runNo } of runs) {
        // Every row of the run sits in its range, and no other run's row does.
        const outside = db.prepare(`SELECT COUNT(*) FROM ${table} WHERE run_id = ? AND (row_key >> 32) <> ?`).pluck().get(runId, runNo);
        expect(outside).toBe(0);
      }
    }
    // Two receipts a step: each at its own place among its step's keys.
    const places = db.prepare<[], { step: number; place: number }>(
      "SELECT (row_key >> 12) & 1048575 AS step, row_key & 4095 AS place FROM cairn_run_receipts WHERE run_id = 'run-a' ORDER BY row_key").all();
    expect(places.slice(0, 4)).toEqual([{ step: 0, place: 0 }, { step: 0, place: 1 }, { step: 1, place: 0 }, { step: 1, place: 1 }]);
    // A row in run-a's range filed under another run id (bytes, index and digests untouched) is not run-a's row.
    for (const table of ['cairn_run_messages', 'cairn_run_receipts']) {
      const key = db.prepare(`SELECT max(row_key) FROM ${table} WHERE run_id = 'run-a'`).safeIntegers().pluck().get() as bigint;
      db.prepare(`UPDATE ${table} SET run_id = 'run-z' WHERE row_key = ?`).run(key);
      await expect(open(path).agentRuns.load('run-a')).rejects.toMatchObject({ code: 'record_corrupt' });
      db.prepare(`UPDATE ${table} SET run_id = 'run-a' WHERE row_key = ?`).run(key);
      expect(json(await open(path).agentRuns.load('run-a'))).toEqual(a.saved.at(-1));
    }
  });

  it('a pruned run id starts again under a new run number, and none of the old rows come back', async () => {
    const path = join(dir, 'ops.sqlite');
    const ops = open(path);
    const first = await runAgent({ ...waitingRun(ops.agentRuns, 'r', 2), model: createMockModel({ responses: [{ text: 'done' }] }) });
    expect(first.status).toBe('completed');
    const db = raw(path);
    const before = db.prepare('SELECT run_no FROM cairn_runs').pluck().get() as number;
    expect(await ops.agentRuns.prune({ terminalBefore: Number.POSITIVE_INFINITY })).toBe(1);
    expect(db.prepare('SELECT COUNT(*) FROM cairn_run_messages').pluck().get()).toBe(0);
    const again = recording(ops.agentRuns);
    expect((await runAgent(waitingRun(again, 'r', 1))).status).toBe('suspended');
    expect(db.prepare('SELECT run_no FROM cairn_runs').pluck().get()).toBeGreaterThan(before);
    expect(json(await open(path).agentRuns.load('r'))).toEqual(again.saved.at(-1));
    expect(again.saved[0]!.revision).toBe(1);
  });
});

describe('receipts a model step holds', () => {
  const envelopeWith = (revision: number, count: number): AgentRunEnvelope => {
    const receipts: Record<string, unknown> = {};
    for (let i = 0; i < count; i++) receipts[`0:c${i}`] = { key: `0:c${i}`, modelStep: 0, toolCallId: `c${i}`, toolName: 'step', status: 'completed' };
    return {
      kind: 'cairn-agent-run', version: 1, runId: 'wide', scope: 'tenant-a', revision, bindingId: null,
      machine: { id: 'run', version: 1 }, snapshot: { status: 'active', value: 'loop', context: { messages: [{ role: 'user', content: 'go' }], step: 1 } },
      receipts, approvalRequestCounts: {}, approvals: {}, status: 'running', pendingApprovals: [], pendingClientCalls: [],
      createdAt: 1, updatedAt: revision,
    } as unknown as AgentRunEnvelope;
  };

  it('are at most 4,096: a save with more is refused whole, and so is one that adds to a full step', async () => {
    const path = join(dir, 'ops.sqlite');
    const ops = open(path);
    const refused = await ops.agentRuns.save(envelopeWith(1, 4097)).then(() => undefined, (error: unknown) => error);
    expect(refused).toMatchObject({ code: 'invalid_envelope' });
    expect(await ops.agentRuns.load('wide')).toBeUndefined();
    await ops.agentRuns.save(envelopeWith(1, 4096));
    expect(Object.keys((await ops.agentRuns.load('wide'))!.receipts)).toHaveLength(4096);
    // Still in step 0: the stored receipts are kept as they are, and the one more has no place left.
    const more = await ops.agentRuns.save(envelopeWith(2, 4097)).then(() => undefined, (error: unknown) => error);
    expect(more).toMatchObject({ code: 'invalid_envelope' });
    expect((await ops.agentRuns.load('wide'))!.revision).toBe(1);
  });
});

describe('a running run\'s head row', () => {
  it('keeps one size from save to save (padded), so its saves free no page and take none from the free list', async () => {
    const path = join(dir, 'ops.sqlite');
    const ops = open(path);
    const db = raw(path);
    const sizes: number[] = [];
    const free: number[] = [];
    const store: AgentRunStore = {
      load: (runId, options) => ops.agentRuns.load(runId, options),
      async save(envelope, options) {
        await ops.agentRuns.save(envelope, options);
        if (envelope.status !== 'running') return;
        // The row's payload size as far as it moves: the head, the pad, and the pad's serial type (1 or 2 bytes).
        sizes.push(db.prepare<[string], number>(`SELECT length(head) + length(pad) + (CASE WHEN length(pad) <= 57 THEN 1 ELSE 2 END)
          FROM cairn_runs WHERE run_id = ?`).pluck().get(envelope.runId)!);
        free.push(db.pragma('freelist_count', { simple: true }) as number);
      },
    };
    const steps = 20;
    const turns = Array.from({ length: steps }, (_, n) => ({ toolCalls: [{ toolName: 'step', args: { n }, toolCallId: `c${n}` }] }));
    const result = await runAgent({
      model: createMockModel({ responses: [...turns, { text: 'done' }] }), prompt: 'Work.', tools: { step }, maxSteps: steps + 2,
      session: { store, runId: 'padded', scope: 'tenant-a' },
    });
    expect(result.status).toBe('completed');
    // The heads themselves alternate between two sizes (a call's executing save holds its snapshot, a checkpoint
    // not); the row changes size at most once (when the larger head outgrows its class, it keeps the next one).
    const changes = sizes.filter((size, i) => i > 0 && size !== sizes[i - 1]).length;
    expect(sizes.length).toBeGreaterThan(2 * steps);
    expect(changes).toBeLessThanOrEqual(1);
    // Rewritten where it is, the row gives no page back to the free list (a size change may).
    const freed = free.filter((n, i) => i > 0 && n > free[i - 1]!).length;
    expect(freed).toBeLessThanOrEqual(changes);
  });
});

describe('a file of schema 7', () => {
  async function seededFile() {
    const current = join(dir, 'current.sqlite');
    const writer = open(current);
    const store = recording(writer.agentRuns);
    const options = waitingRun(store, 'old-1', 3);
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    const other = recording(writer.agentRuns);
    expect((await runAgent(waitingRun(other, 'old-2', 2))).status).toBe('suspended');
    writer.close();
    const old = join(dir, 'old.sqlite');
    schema7(old, current);
    rmSync(current, { force: true });
    return { old, store, other, options, first };
  }

  it('opened read-only, loads its runs as an older Cairn wrote them and writes nothing', async () => {
    const { old, store, other } = await seededFile();
    const before = state();
    const ro = open(old, { readonly: true });
    expect(json(await ro.agentRuns.load('old-1', { scope: 'tenant-a' }))).toEqual(store.saved.at(-1));
    expect(json(await ro.agentRuns.load('old-2'))).toEqual(other.saved.at(-1));
    const withSaves = await ro.agentRuns.load('old-1', { saves: true });
    expect(withSaves?.saves?.messages.every((revision) => typeof revision === 'number')).toBe(true);
    expect((await ro.agentRuns.list()).runs.map((r) => r.runId).sort()).toEqual(['old-1', 'old-2']);
    ro.close();
    expect(state()).toEqual(before);
  });

  it('is migrated by a writer: every run loads exactly, resumes and saves on, and the rows move into their ranges', async () => {
    const { old, store, other, options, first } = await seededFile();
    const ops = open(old);
    const db = raw(old);
    expect(db.prepare('SELECT version FROM cairn_ops_schema ORDER BY version').pluck().all())
      .toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));
    expect(db.prepare("SELECT COUNT(*) FROM pragma_table_info('cairn_run_receipts') WHERE name = 'row_key'").pluck().get()).toBe(1);
    expect(json(await ops.agentRuns.load('old-1', { scope: 'tenant-a' }))).toEqual(store.saved.at(-1));
    expect(json(await ops.agentRuns.load('old-2'))).toEqual(other.saved.at(-1));
    const saves = await ops.agentRuns.load('old-1', { saves: true });
    expect(saves?.saves?.receipts).toEqual(Object.fromEntries(Object.keys(saves!.receipts).map((key) => [key, expect.any(Number)])));
    if (first.status !== 'suspended') throw new Error('expected a suspended run');
    const resumed = recording(ops.agentRuns);
    const done = await resumeAgent({
      ...options, model: createMockModel({ responses: [{ text: 'Published.' }] }), session: { ...options.session, store: resumed },
      approvalResponses: first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true })),
    });
    expect(done.status).toBe('completed');
    expect(json(await open(old).agentRuns.load('old-1'))).toEqual(resumed.saved.at(-1));
    // The migrated rows and the new ones: the run's transcript in index order in its range, each receipt once.
    const runNo = db.prepare("SELECT run_no FROM cairn_runs WHERE run_id = 'old-1'").pluck().get() as number;
    const idx = db.prepare<[number], number>('SELECT idx FROM cairn_run_messages WHERE (row_key >> 32) = ? ORDER BY row_key').pluck().all(runNo);
    expect(idx).toEqual(idx.map((_, i) => i));
    const keys = db.prepare<[number], string>('SELECT receipt_key FROM cairn_run_receipts WHERE (row_key >> 32) = ?').pluck().all(runNo);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.sort()).toEqual(Object.keys(resumed.saved.at(-1)!.receipts).sort());
  });
});

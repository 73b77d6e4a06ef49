/**
 * cairn/ops/sqlite: real runs round-trip through the file (and resume from a
 * new store on it), every kind of bad stored byte is refused with a typed
 * error before a model call, the schema sets itself up idempotently and
 * refuses a newer one, a save writes what its step added, and leases fence
 * saves on an injected clock. Each case gets its own temporary directory.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AgentRunLeaseError, InvalidOptionsError, RevisionConflictError, RunIdentityError, StoredRecordError,
  resumeAgent, runAgent,
  type AgentRunEnvelope, type AgentRunStore, type AgentTool, type JsonValue,
} from 'cairn/agent';
import { createMockModel, type MockResponse } from 'cairn/testing';
import {
  MIGRATIONS, SCHEMA_VERSION, StoreSchemaVersionError, createSqliteOpsStore,
  type SqliteOpsStore, type SqliteOpsStoreOptions,
} from 'cairn/ops/sqlite';
import { encodePart, RECORD_FORMAT, sha256 } from '../../src/stores/codec.js';
import { receiptPartAs } from './old-parts.js';
import { digestOf } from '../../src/stores/digest.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

let dir = '';
let file = '';
const cleanups: (() => void)[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-sqlite-'));
  file = join(dir, 'ops.sqlite');
});

afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
  rmSync(dir, { recursive: true, force: true });
});

function open(options: Partial<SqliteOpsStoreOptions> = {}): SqliteOpsStore {
  const ops = createSqliteOpsStore({ path: file, ...options });
  cleanups.push(() => ops.close());
  return ops;
}

/** A second, plain connection to the file: what an operator (or a disk) does to it behind the store's back. */
function raw(path = file): Database.Database {
  const db = new Database(path);
  cleanups.push(() => db.close());
  return db;
}

function manualClock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

const json = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

/** Wraps a store: after each save, the store must give back exactly what it was handed. */
function checked(store: AgentRunStore, saved: AgentRunEnvelope[] = []): AgentRunStore & { saved: AgentRunEnvelope[] } {
  return {
    saved,
    load: (runId, options) => store.load(runId, options),
    async save(envelope, options) {
      await store.save(envelope, options);
      saved.push(structuredClone(envelope));
      expect(json(await store.load(envelope.runId, { scope: envelope.scope }))).toEqual(json(envelope));
    },
  };
}

const params = { type: 'object' as const, properties: {}, additionalProperties: true };

function counting(extra: Partial<AgentTool> = {}): AgentTool & { runs: JsonValue[] } {
  const runs: JsonValue[] = [];
  return { parameters: params, ...extra, runs, execute: (args: JsonValue) => (runs.push(args), { ok: true, seen: runs.length }) };
}

/**
 * A run that looks something up (a receipt, transcript rows), then asks to
 * publish, which waits for a verdict: suspended, with something in every table.
 */
function approvalRun(store: AgentRunStore, responses: MockResponse[] = [
  { toolCalls: [{ toolName: 'lookup', args: { q: 'notes' } }] },
  { toolCalls: [{ toolName: 'publish', args: { slug: 'notes' } }] },
  { text: 'Published.' },
], runId = 'publish-1') {
  const lookup = counting();
  const publish = counting({ needsApproval: true });
  const model = createMockModel({ responses });
  const options = {
    model,
    prompt: 'Publish the notes.',
    bindingId: 'sqlite-test-v1',
    session: { store, runId, scope: 'tenant-a' },
    tools: { lookup, publish },
  };
  return { model, lookup, publish, options };
}

/** A tool loop of `steps` model turns that each call one tool, then a final answer. */
function toolLoop(store: AgentRunStore, steps: number, runId = 'loop-1') {
  let turn = 0;
  const model = createMockModel({
    strict: false,
    responses: [() => (++turn <= steps ? { toolCalls: [{ toolName: 'count', args: { turn } }] } : { text: `Counted ${steps}.` })],
  });
  const count = counting();
  return {
    model,
    count,
    run: () => runAgent({
      model, prompt: 'Count.', maxSteps: steps + 5, bindingId: 'loop-v1', tools: { count },
      session: { store, runId, scope: 'tenant-a' },
    }),
  };
}

/** A small valid envelope, for the list, prune and fence cases. */
function envelope(runId: string, fields: Partial<AgentRunEnvelope> & { messages?: JsonValue[] } = {}): AgentRunEnvelope {
  const { messages = [{ role: 'user', content: `hello ${runId}` }], ...rest } = fields;
  return {
    kind: 'cairn-agent-run',
    version: 1,
    runId,
    scope: 'tenant-a',
    revision: 1,
    bindingId: 'synthetic-v1',
    binding: { bindingId: 'synthetic-v1', model: 'm', tools: 't', output: null, limits: 'l' },
    machine: { id: 'run', version: 1 },
    snapshot: { status: 'active', value: 'loop', context: { messages, step: 1 } },
    receipts: {},
    approvalRequestCounts: {},
    approvals: {},
    status: 'running',
    pendingApprovals: [],
    pendingClientCalls: [],
    createdAt: 1000,
    updatedAt: 1000,
    ...rest,
  };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('round trips of real runs', () => {
  it('stores every save of a tool loop exactly, and a new store on the file resumes it', async () => {
    const ops = open();
    const store = checked(ops.agentRuns);
    const { options, model, lookup, publish } = approvalRun(store);
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    if (first.status !== 'suspended') return;
    expect(store.saved.length).toBeGreaterThan(3);
    expect(lookup.runs).toEqual([{ q: 'notes' }]);
    expect(model.calls).toHaveLength(2);
    ops.close();

    // Another process, later: a new store object on the same file.
    const reopened = open();
    const stored = await reopened.agentRuns.load('publish-1', { scope: 'tenant-a' });
    expect(json(stored)).toEqual(json(store.saved.at(-1)));
    const resumeModel = createMockModel({ responses: [{ text: 'Published.' }] });
    const approvalResponses = first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));
    const done = await resumeAgent({
      ...options, model: resumeModel, session: { ...options.session, store: checked(reopened.agentRuns) }, approvalResponses,
    });
    expect(done.status).toBe('completed');
    expect(done.text).toBe('Published.');
    expect(publish.runs).toEqual([{ slug: 'notes' }]);
    expect(lookup.runs).toHaveLength(1);
    resumeModel.assertAllUsed();

    // The ended run answers from the file, without a model call.
    const again = createMockModel({ responses: [] });
    const ended = await resumeAgent({ ...options, model: again, session: { ...options.session, store: open().agentRuns } });
    expect(ended.status).toBe('completed');
    expect(json(ended)).toEqual(json(done));
    expect(again.calls).toHaveLength(0);
  });

  it('resumes a run an earlier version wrote (record format 2), and its next save writes every row in this format', async () => {
    const ops = open();
    const store = checked(ops.agentRuns);
    const { options, publish } = approvalRun(store);
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    if (first.status !== 'suspended') return;
    ops.close();
    // What format 2 left: the same parts with format byte 2, and digests made the older way.
    const db = raw();
    const downgrade = (body: Buffer) => {
      const copy = Buffer.from(body);
      copy[3] = 2;
      return copy;
    };
    db.transaction(() => {
      for (const r of db.prepare('SELECT run_id, head FROM cairn_runs').all() as { run_id: string; head: Buffer }[]) {
        db.prepare('UPDATE cairn_runs SET head = ? WHERE run_id = ?').run(downgrade(r.head), r.run_id);
      }
      for (const r of db.prepare('SELECT run_id, idx, body FROM cairn_run_messages').all() as { run_id: string; idx: number; body: Buffer }[]) {
        db.prepare('UPDATE cairn_run_messages SET body = ? WHERE run_id = ? AND idx = ?').run(downgrade(r.body), r.run_id, r.idx);
      }
      for (const r of db.prepare('SELECT run_id, receipt_key, body FROM cairn_run_receipts').all() as { run_id: string; receipt_key: string; body: Buffer }[]) {
        db.prepare('UPDATE cairn_run_receipts SET body = ? WHERE run_id = ? AND receipt_key = ?').run(receiptPartAs(r.body, 2), r.run_id, r.receipt_key);
      }
      const messages = db.prepare('SELECT idx, body FROM cairn_run_messages WHERE run_id = ?').all('publish-1') as { idx: number; body: Buffer }[];
      const receipts = db.prepare('SELECT receipt_key, body FROM cairn_run_receipts WHERE run_id = ?').all('publish-1') as { receipt_key: string; body: Buffer }[];
      db.prepare('UPDATE cairn_runs SET transcript_digest = ?, receipts_digest = ? WHERE run_id = ?').run(
        digestOf(messages.map((m) => [m.idx, sha256(m.body)] as const), 2),
        digestOf(receipts.map((r) => [r.receipt_key, sha256(r.body)] as const), 2), 'publish-1');
    })();
    const formats = () => [
      ...db.prepare('SELECT head FROM cairn_runs').pluck().all() as Buffer[],
      ...db.prepare('SELECT body FROM cairn_run_messages').pluck().all() as Buffer[],
      ...db.prepare('SELECT body FROM cairn_run_receipts').pluck().all() as Buffer[],
    ].map((b) => b[3]);
    expect(new Set(formats())).toEqual(new Set([2]));

    const reopened = open();
    expect(json(await reopened.agentRuns.load('publish-1', { scope: 'tenant-a' }))).toEqual(json(store.saved.at(-1)));
    const resumeModel = createMockModel({ responses: [{ text: 'Published.' }] });
    const done = await resumeAgent({
      ...options, model: resumeModel, session: { ...options.session, store: checked(reopened.agentRuns) },
      approvalResponses: first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true })),
    });
    expect(done.status).toBe('completed');
    expect(publish.runs).toEqual([{ slug: 'notes' }]);
    expect(new Set(formats())).toEqual(new Set([RECORD_FORMAT]));
    expect((await open().agentRuns.load('publish-1'))?.status).toBe('completed');
  });

  it('returns a fresh object from each load', async () => {
    const ops = open();
    await ops.agentRuns.save(envelope('r-1'));
    const a = (await ops.agentRuns.load('r-1'))!;
    (a.snapshot as { context: { messages: unknown[] } }).context.messages.push({ role: 'user', content: 'changed' });
    a.status = 'failed';
    const b = (await ops.agentRuns.load('r-1'))!;
    expect(b).not.toBe(a);
    expect(json(b)).toEqual(json(envelope('r-1')));
    expect(await ops.agentRuns.load('nobody')).toBeUndefined();
  });

  it('drops stored transcript rows past a shorter transcript (defensive: the engine only appends)', async () => {
    const ops = open();
    const long = [1, 2, 3, 4].map((n) => ({ role: 'user', content: `m${n}` }));
    await ops.agentRuns.save(envelope('r-1', { messages: long }));
    await ops.agentRuns.save(envelope('r-1', { revision: 2, messages: long.slice(0, 2) }));
    expect(json(await ops.agentRuns.load('r-1'))).toEqual(json(envelope('r-1', { revision: 2, messages: long.slice(0, 2) })));
    expect(raw().prepare('SELECT COUNT(*) FROM cairn_run_messages').pluck().get()).toBe(2);
  });

  it('backs the database up while it is in use, and refuses to overwrite a file', async () => {
    const ops = open();
    const { options } = approvalRun(ops.agentRuns);
    await runAgent(options);
    const copy = join(dir, 'backup.sqlite');
    await ops.backup(copy);
    const restored = createSqliteOpsStore({ path: copy });
    cleanups.push(() => restored.close());
    expect(json(await restored.agentRuns.load('publish-1'))).toEqual(json(await ops.agentRuns.load('publish-1')));
    expect(await rejection(ops.backup(copy))).toBeInstanceOf(Error);
  });

  it('rejects calls after close, and close is idempotent', async () => {
    const ops = open();
    ops.close();
    ops.close();
    expect(await rejection(ops.agentRuns.load('r-1'))).toBeInstanceOf(Error);
    expect(await rejection(ops.leases.inspect('k'))).toBeInstanceOf(Error);
  });
});

describe('save', () => {
  it('requires the stored revision plus one, and says what it found', async () => {
    const ops = open();
    await ops.agentRuns.save(envelope('r-1'));
    const twice = await rejection(ops.agentRuns.save(envelope('r-1')));
    expect(RevisionConflictError.isInstance(twice)).toBe(true);
    expect(twice).toMatchObject({ code: 'revision_conflict', subsystem: 'run', runId: 'r-1', expectedRevision: 0, storedRevision: 1 });
    const skipped = await rejection(ops.agentRuns.save(envelope('r-1', { revision: 3 })));
    expect(skipped).toMatchObject({ expectedRevision: 2, storedRevision: 1 });
    const none = await rejection(ops.agentRuns.save(envelope('r-2', { revision: 2 })));
    expect(none).toMatchObject({ expectedRevision: 1, storedRevision: null });
    expect((await ops.agentRuns.load('r-1'))!.revision).toBe(1);
  });

  it('fences two stores on the same file: the one that saved second loses', async () => {
    const a = open().agentRuns;
    const b = open().agentRuns;
    await a.save(envelope('r-1'));
    await a.save(envelope('r-1', { revision: 2 }));
    // b read revision 1 earlier and now saves revision 2 too.
    const lost = await rejection(b.save(envelope('r-1', { revision: 2, status: 'failed' })));
    expect(RevisionConflictError.isInstance(lost)).toBe(true);
    expect((await b.load('r-1'))!.status).toBe('running');
  });

  it('refuses to write a run id stored under another scope', async () => {
    const ops = open();
    await ops.agentRuns.save(envelope('r-1'));
    const error = await rejection(ops.agentRuns.save(envelope('r-1', { revision: 2, scope: 'tenant-b' })));
    expect(RunIdentityError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'scope_mismatch' });
  });

  it('refuses an envelope without an identity or an integer revision', async () => {
    const ops = open();
    for (const bad of [{ ...envelope('r-1'), runId: '' }, { ...envelope('r-1'), revision: 1.5 }, null]) {
      const error = await rejection(ops.agentRuns.save(bad as AgentRunEnvelope));
      expect(InvalidOptionsError.isInstance(error)).toBe(true);
    }
  });

  it('stores exactly what it is given when a save does not extend the stored record: it rewrites what changed', async () => {
    const ops = open();
    const db = raw();
    const receipt = (modelStep: number, rawResult: JsonValue) => ({
      key: `${modelStep}:c`, toolCallId: 'c', toolName: 't', modelStep, status: 'completed' as const, idempotent: false, rawResult,
    });
    const messages = [1, 2, 3].map((n) => ({ role: 'user', content: `m${n}` }));
    const one = envelope('r-1', { messages, receipts: { '0:c': receipt(0, 'a'), '1:c': receipt(1, 'b') } });
    (one.snapshot as { context: { step: number } }).context.step = 2;
    await ops.agentRuns.save(one);
    // Another first message, the current step's receipt dropped: the transcript and the receipts are written again.
    const two = envelope('r-1', {
      revision: 2,
      messages: [{ role: 'user', content: 'other' }, ...messages.slice(1), { role: 'user', content: 'm4' }],
      receipts: { '0:c': receipt(0, 'a') },
    });
    (two.snapshot as { context: { step: number } }).context.step = 2;
    await ops.agentRuns.save(two);
    expect(json(await ops.agentRuns.load('r-1'))).toEqual(json(two));
    expect(db.prepare('SELECT COUNT(*) FROM cairn_run_receipts').pluck().get()).toBe(1);
    // A settled receipt changed in place comes with a migrated machine version (a new lineage): every row is written again.
    const three = structuredClone(two);
    three.revision = 3;
    three.machine = { ...three.machine, version: three.machine.version + 1 };
    three.receipts['0:c'] = receipt(0, 'migrated');
    await ops.agentRuns.save(three);
    expect(json(await ops.agentRuns.load('r-1'))).toEqual(json(three));
    // And the common case again: appended messages, the current step's receipt.
    const four = structuredClone(three);
    four.revision = 4;
    (four.snapshot as { context: { messages: JsonValue[] } }).context.messages.push({ role: 'user', content: 'm5' });
    four.receipts['1:c'] = receipt(1, 'new');
    await ops.agentRuns.save(four);
    expect(json(await ops.agentRuns.load('r-1'))).toEqual(json(four));
    expect(db.prepare('SELECT COUNT(*) FROM cairn_run_messages').pluck().get()).toBe(5);
  });

  it('counts what it wrote in lastSaveBytes: the head plus the new rows', async () => {
    const ops = open();
    expect(ops.agentRuns.lastSaveBytes).toBe(0);
    const messages = [{ role: 'user', content: 'a'.repeat(5000) }];
    await ops.agentRuns.save(envelope('r-1', { messages }));
    const first = ops.agentRuns.lastSaveBytes;
    expect(first).toBeGreaterThan(5000);
    await ops.agentRuns.save(envelope('r-1', { revision: 2, messages: [...messages, { role: 'user', content: 'b' }] }));
    expect(ops.agentRuns.lastSaveBytes).toBeLessThan(1000);
  });
});

describe('bytes written per save', () => {
  it('do not grow with the history: step 200 of a 200-step tool loop writes what step 10 does', async () => {
    const ops = open({ synchronous: 'normal' });
    const perStep = new Map<number, { store: number; whole: number }>();
    const store: AgentRunStore = {
      load: (runId, options) => ops.agentRuns.load(runId, options),
      async save(env, options) {
        await ops.agentRuns.save(env, options);
        const step = (env.snapshot as { context: { step: number } }).context.step;
        const entry = perStep.get(step) ?? { store: 0, whole: 0 };
        entry.store += ops.agentRuns.lastSaveBytes;
        // What a store that rewrites the whole record would write.
        entry.whole += encodePart(env).length;
        perStep.set(step, entry);
      },
    };
    const loop = toolLoop(store, 200);
    const result = await loop.run();
    expect(result.status).toBe('completed');
    expect(loop.count.runs).toHaveLength(200);

    const at10 = perStep.get(10)!;
    const at200 = perStep.get(200)!;
    const ratio = at200.store / at10.store;
    const wholeRatio = at200.whole / at10.whole;
    console.log(`bytes written at step 10: ${at10.store}, at step 200: ${at200.store}, ratio ${ratio.toFixed(3)}`
      + ` (whole-record rewrite: ${at10.whole} vs ${at200.whole}, ratio ${wholeRatio.toFixed(1)})`);
    expect(ratio).toBeLessThanOrEqual(1.5);
    // The measure can tell: rewriting the whole record would have grown many times over.
    expect(wholeRatio).toBeGreaterThan(5);
    // And the file holds the whole run.
    const stored = (await ops.agentRuns.load('loop-1'))!;
    expect(stored.status).toBe('completed');
    expect(Object.keys(stored.receipts)).toHaveLength(200);
    expect((stored.snapshot as { context: { messages: unknown[] } }).context.messages.length).toBe(result.messages.length);
  });
});

describe('what load refuses', () => {
  /** A suspended run with head, transcript and receipt rows; the resume would call the model if the record were read. */
  async function storedRun() {
    const ops = open();
    const run = approvalRun(ops.agentRuns);
    const first = await runAgent(run.options);
    expect(first.status).toBe('suspended');
    ops.close();
    return { ...run, first };
  }

  async function refusedResume(run: Awaited<ReturnType<typeof storedRun>>) {
    if (run.first.status !== 'suspended') throw new Error('expected suspended');
    const model = createMockModel({ responses: [{ text: 'should not be asked' }] });
    const ops = open();
    const result = await resumeAgent({
      ...run.options,
      model,
      session: { ...run.options.session, store: ops.agentRuns },
      approvalResponses: run.first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true })),
    });
    expect(model.calls).toHaveLength(0);
    expect(run.publish.runs).toHaveLength(0);
    expect(run.lookup.runs).toHaveLength(1);
    return { result, ops };
  }

  const flip = (bytes: Buffer, at: number) => {
    const copy = Buffer.from(bytes);
    copy[at] = copy[at]! ^ 0xff;
    return copy;
  };

  const cases: [string, 'record_corrupt' | 'record_version_unsupported', (db: Database.Database) => void][] = [
    ['a flipped byte in the head', 'record_corrupt', (db) => {
      const head = db.prepare('SELECT head FROM cairn_runs').pluck().get() as Buffer;
      db.prepare('UPDATE cairn_runs SET head = ?').run(flip(head, head.length - 3));
    }],
    ['a truncated head', 'record_corrupt', (db) => {
      const head = db.prepare('SELECT head FROM cairn_runs').pluck().get() as Buffer;
      db.prepare('UPDATE cairn_runs SET head = ?').run(head.subarray(0, head.length - 20));
    }],
    ['a head cut inside its frame header', 'record_corrupt', (db) => {
      const head = db.prepare('SELECT head FROM cairn_runs').pluck().get() as Buffer;
      db.prepare('UPDATE cairn_runs SET head = ?').run(head.subarray(0, 12));
    }],
    ['a head of a future format', 'record_version_unsupported', (db) => {
      const head = Buffer.from(db.prepare('SELECT head FROM cairn_runs').pluck().get() as Buffer);
      head[3] = 9;
      db.prepare('UPDATE cairn_runs SET head = ?').run(head);
    }],
    ['foreign bytes in the head (JSON text)', 'record_corrupt', (db) => {
      db.prepare('UPDATE cairn_runs SET head = ?').run(JSON.stringify({ kind: 'cairn-agent-run', revision: 9 }));
    }],
    ['foreign bytes in the head (a blob of another program)', 'record_corrupt', (db) => {
      db.prepare('UPDATE cairn_runs SET head = ?').run(Buffer.from('SQLite format 3\u0000 and so on', 'utf8'));
    }],
    ['an empty head', 'record_corrupt', (db) => {
      db.prepare("UPDATE cairn_runs SET head = x''").run();
    }],
    ['another run\'s head under this run id', 'record_corrupt', (db) => {
      const other = encodePart({ ...envelope('someone-else'), scope: 'tenant-a' });
      db.prepare('UPDATE cairn_runs SET head = ?').run(other);
    }],
    ['a flipped byte in a transcript row', 'record_corrupt', (db) => {
      const body = db.prepare('SELECT body FROM cairn_run_messages WHERE idx = 1').pluck().get() as Buffer;
      db.prepare('UPDATE cairn_run_messages SET body = ? WHERE idx = 1').run(flip(body, body.length - 1));
    }],
    ['a missing transcript row', 'record_corrupt', (db) => {
      db.prepare('DELETE FROM cairn_run_messages WHERE idx = 1').run();
    }],
    ['a transcript row out of place', 'record_corrupt', (db) => {
      db.prepare('UPDATE cairn_run_messages SET idx = 99 WHERE idx = 1').run();
    }],
    ['a transcript row of a future format', 'record_version_unsupported', (db) => {
      const body = Buffer.from(db.prepare('SELECT body FROM cairn_run_messages WHERE idx = 0').pluck().get() as Buffer);
      body[3] = 7;
      db.prepare('UPDATE cairn_run_messages SET body = ? WHERE idx = 0').run(body);
    }],
    ['a deleted receipt row', 'record_corrupt', (db) => {
      db.prepare('DELETE FROM cairn_run_receipts').run();
    }],
    ['a receipt row copied in from elsewhere', 'record_corrupt', (db) => {
      db.prepare(`INSERT INTO cairn_run_receipts (run_id, receipt_key, model_step, body)
        SELECT run_id, '9:copied', 9, body FROM cairn_run_receipts LIMIT 1`).run();
    }],
    ['two transcript rows swapped', 'record_corrupt', (db) => {
      const rows = db.prepare('SELECT idx, body FROM cairn_run_messages WHERE idx IN (0, 1) ORDER BY idx').all() as { body: Buffer }[];
      db.prepare('UPDATE cairn_run_messages SET body = ? WHERE idx = 0').run(rows[1]!.body);
      db.prepare('UPDATE cairn_run_messages SET body = ? WHERE idx = 1').run(rows[0]!.body);
    }],
    ['a truncated receipt row', 'record_corrupt', (db) => {
      const body = db.prepare('SELECT body FROM cairn_run_receipts').pluck().get() as Buffer;
      db.prepare('UPDATE cairn_run_receipts SET body = ?').run(body.subarray(0, body.length - 1));
    }],
  ];

  it.each(cases)('%s: a typed error, and no model call', async (_label, code, damage) => {
    const run = await storedRun();
    const db = raw();
    expect(db.prepare('SELECT COUNT(*) FROM cairn_run_receipts').pluck().get()).toBeGreaterThan(0);
    damage(db);
    const { result, ops } = await refusedResume(run);
    expect(result.status).toBe('failed');
    if (result.status !== 'failed') return;
    expect(result.error).toMatchObject({ name: 'StoredRecordError', code });
    const error = await rejection(ops.agentRuns.load('publish-1', { scope: 'tenant-a' }));
    expect(StoredRecordError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code, runId: 'publish-1' });
  });

  it('refuses another scope without decoding the run (its bytes may even be broken)', async () => {
    const run = await storedRun();
    const db = raw();
    db.prepare('UPDATE cairn_runs SET head = ?').run(Buffer.from('not a record'));
    const ops = open();
    const error = await rejection(ops.agentRuns.load('publish-1', { scope: 'tenant-b' }));
    expect(RunIdentityError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'scope_mismatch' });
    expect((error as Error).message).not.toContain('tenant-a');
    const model = createMockModel({ responses: [{ text: 'no' }] });
    const result = await resumeAgent({ ...run.options, model, session: { store: ops.agentRuns, runId: 'publish-1', scope: 'tenant-b' } });
    expect(result.status).toBe('failed');
    if (result.status === 'failed') expect(result.error.code).toBe('scope_mismatch');
    expect(model.calls).toHaveLength(0);
  });
});

describe('schema', () => {
  const tables = (db: Database.Database) =>
    db.prepare("SELECT type, name, sql FROM sqlite_master WHERE name LIKE 'cairn%' ORDER BY name").all();
  const versions = (db: Database.Database) => db.prepare('SELECT version FROM cairn_ops_schema ORDER BY version').pluck().all();

  it('sets itself up on a new file: WAL, the tables, one version row per migration', () => {
    open();
    const db = raw();
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect((tables(db) as { name: string }[]).map((t) => t.name)).toEqual(expect.arrayContaining([
      'cairn_breakers', 'cairn_leases', 'cairn_ops_schema', 'cairn_run_messages', 'cairn_run_receipts', 'cairn_runs',
    ]));
    expect(versions(db)).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));
    expect(SCHEMA_VERSION).toBe(MIGRATIONS.length);
  });

  it('is idempotent: reopening (also while another store has it open) changes nothing and keeps the data', async () => {
    const first = open();
    await first.agentRuns.save(envelope('r-1'));
    const before = tables(raw());
    const second = open();
    first.close();
    open({ synchronous: 'normal', busyTimeoutMs: 100 }).close();
    const db = raw();
    expect(tables(db)).toEqual(before);
    expect(versions(db)).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));
    expect(json(await second.agentRuns.load('r-1'))).toEqual(json(envelope('r-1')));
  });

  it('refuses a database whose schema is newer than this code, and leaves it alone', () => {
    open().close();
    const db = raw();
    db.prepare('INSERT INTO cairn_ops_schema (version, applied_at) VALUES (?, ?)').run(SCHEMA_VERSION + 1, 0);
    const before = tables(db);
    let error: unknown;
    try {
      createSqliteOpsStore({ path: file });
    } catch (thrown) {
      error = thrown;
    }
    expect(StoreSchemaVersionError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'record_version_unsupported', found: SCHEMA_VERSION + 1, supported: SCHEMA_VERSION });
    expect(tables(db)).toEqual(before);
    expect(versions(db)).toEqual(Array.from({ length: SCHEMA_VERSION + 1 }, (_, i) => i + 1));
  });

  it('refuses bad options', () => {
    for (const options of [{ path: '' }, { path: file, synchronous: 'off' }, { path: file, busyTimeoutMs: -1 }, { path: file, clock: {} }]) {
      expect(() => createSqliteOpsStore(options as SqliteOpsStoreOptions)).toThrow(InvalidOptionsError);
    }
  });

  it('is shown in docs/stores.md exactly as MIGRATIONS has it', () => {
    const page = readFileSync(join(root, 'docs', 'stores.md'), 'utf8');
    const block = /<!-- schema: sqlite -->\n```sql\n([\s\S]*?)```/.exec(page);
    expect(block, 'docs/stores.md has a sql block after <!-- schema: sqlite -->').not.toBeNull();
    expect(block![1]).toBe(`${MIGRATIONS.flat().map((statement) => `${statement};`).join('\n')}\n`);
  });
});

describe('list and prune', () => {
  async function seed(ops: SqliteOpsStore) {
    const runs: [string, Partial<AgentRunEnvelope>][] = [
      ['a', { updatedAt: 100, status: 'completed' }],
      ['b', { updatedAt: 200, status: 'failed' }],
      ['c', { updatedAt: 300, status: 'stopped', scope: 'tenant-b' }],
      ['d', { updatedAt: 300, status: 'suspended', pendingApprovals: [
        { approvalId: 'x@1', token: 't', toolCallId: 'x', toolName: 'publish', args: {}, modelStep: 0 },
      ] }],
      ['e', { updatedAt: 300, status: 'running' }],
      ['f', { updatedAt: 500, status: 'completed' }],
      ['g', { updatedAt: 50, status: 'running' }],
    ];
    for (const [runId, fields] of runs) await ops.agentRuns.save(envelope(runId, { createdAt: 10, ...fields }));
  }

  it('pages newest update first (ties by run id), with an opaque cursor, and filters', async () => {
    const ops = open();
    await seed(ops);
    const all = await ops.agentRuns.list();
    expect(all.runs.map((r) => r.runId)).toEqual(['f', 'e', 'd', 'c', 'b', 'a', 'g']);
    expect(all.nextCursor).toBeUndefined();
    expect(all.runs.find((r) => r.runId === 'd')).toEqual({
      runId: 'd', scope: 'tenant-a', status: 'suspended', revision: 1, bindingId: 'synthetic-v1',
      createdAt: 10, updatedAt: 300, pendingApprovals: 1, pendingClientCalls: 0,
    });

    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await ops.agentRuns.list({ limit: 2, ...(cursor ? { cursor } : {}) });
      expect(page.runs.length).toBeLessThanOrEqual(2);
      seen.push(...page.runs.map((r) => r.runId));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(['f', 'e', 'd', 'c', 'b', 'a', 'g']);

    const ids = async (query: Parameters<typeof ops.agentRuns.list>[0]) => (await ops.agentRuns.list(query)).runs.map((r) => r.runId);
    expect(await ids({ status: 'completed' })).toEqual(['f', 'a']);
    expect(await ids({ status: ['running', 'suspended'] })).toEqual(['e', 'd', 'g']);
    expect(await ids({ scope: 'tenant-b' })).toEqual(['c']);
    expect(await ids({ updatedBefore: 300 })).toEqual(['b', 'a', 'g']);
    expect(await ids({ updatedAfter: 300 })).toEqual(['f', 'e', 'd', 'c']);
    expect(await ids({ updatedAfter: 100, updatedBefore: 301, status: ['completed', 'failed', 'stopped'], scope: 'tenant-a' })).toEqual(['b', 'a']);
    expect(await ids({ status: [] })).toEqual([]);
  });

  it('a cursor goes on after its run even when runs change between pages', async () => {
    const ops = open();
    await seed(ops);
    const page = await ops.agentRuns.list({ limit: 3 });
    expect(page.runs.map((r) => r.runId)).toEqual(['f', 'e', 'd']);
    await ops.agentRuns.save(envelope('h', { updatedAt: 1000 }));
    const next = await ops.agentRuns.list({ limit: 3, cursor: page.nextCursor! });
    expect(next.runs.map((r) => r.runId)).toEqual(['c', 'b', 'a']);
  });

  it('refuses a cursor it did not issue, a bad limit, an unknown status', async () => {
    const ops = open();
    for (const query of [{ cursor: 'nonsense' }, { cursor: 'c1.bm9wZQ' }, { limit: 0 }, { limit: 2.5 }, { status: 'done' }, { updatedBefore: Number.NaN }]) {
      const error = await rejection(ops.agentRuns.list(query as never));
      expect(InvalidOptionsError.isInstance(error)).toBe(true);
    }
  });

  it('caps a page at 1000 runs', async () => {
    const ops = open({ synchronous: 'normal' });
    for (let i = 0; i < 1001; i++) await ops.agentRuns.save(envelope(`r-${String(i).padStart(4, '0')}`, { updatedAt: i }));
    const page = await ops.agentRuns.list({ limit: 5000 });
    expect(page.runs).toHaveLength(1000);
    expect(page.nextCursor).toBeDefined();
    expect((await ops.agentRuns.list({ limit: 5000, cursor: page.nextCursor! })).runs.map((r) => r.runId)).toEqual(['r-0000']);
  });

  it('prune deletes ended runs saved before the time, with their transcript and receipts, and counts them', async () => {
    const ops = open();
    await seed(ops);
    // A real ended run with receipts and transcript rows, saved at the envelope's own time.
    const loop = toolLoop(ops.agentRuns, 3, 'loop-old');
    expect((await loop.run()).status).toBe('completed');
    const db = raw();
    const rows = (table: string, runId: string) => db.prepare(`SELECT COUNT(*) FROM ${table} WHERE run_id = ?`).pluck().get(runId);
    expect(rows('cairn_run_receipts', 'loop-old')).toBe(3);
    const loopUpdated = (await ops.agentRuns.load('loop-old'))!.updatedAt;

    expect(await ops.agentRuns.prune({ terminalBefore: 300 })).toBe(2); // a, b
    expect((await ops.agentRuns.list()).runs.map((r) => r.runId)).toEqual(['loop-old', 'f', 'e', 'd', 'c', 'g']);
    expect(await ops.agentRuns.prune({ terminalBefore: loopUpdated + 1 })).toBe(3); // c, f, loop-old
    expect((await ops.agentRuns.list()).runs.map((r) => r.runId)).toEqual(['e', 'd', 'g']);
    for (const table of ['cairn_run_messages', 'cairn_run_receipts']) {
      expect(db.prepare(`SELECT COUNT(*) FROM ${table} WHERE run_id NOT IN ('d', 'e', 'g')`).pluck().get()).toBe(0);
    }
    expect(rows('cairn_run_messages', 'g')).toBe(1);
    expect(await ops.agentRuns.load('loop-old')).toBeUndefined();
    expect(await ops.agentRuns.prune({ terminalBefore: Number.POSITIVE_INFINITY })).toBe(0);
    expect(InvalidOptionsError.isInstance(await rejection(ops.agentRuns.prune({ terminalBefore: Number.NaN })))).toBe(true);
  });

  it('prunes more runs than one batch', async () => {
    const ops = open({ synchronous: 'normal' });
    for (let i = 0; i < 1203; i++) await ops.agentRuns.save(envelope(`r-${i}`, { status: 'completed', updatedAt: i }));
    await ops.agentRuns.save(envelope('live', { status: 'suspended', updatedAt: 0 }));
    expect(await ops.agentRuns.prune({ terminalBefore: Number.POSITIVE_INFINITY })).toBe(1203);
    expect((await ops.agentRuns.list()).runs.map((r) => r.runId)).toEqual(['live']);
  });
});

describe('leases', () => {
  it('acquire, hold, renew, expire, release, drain, on the store clock', async () => {
    const clock = manualClock();
    const { leases } = open({ clock });
    const a = (await leases.acquire('run/1', 'worker-a', 1000))!;
    expect(a).toEqual({ key: 'run/1', owner: 'worker-a', token: 1, expiresAt: clock.now() + 1000 });
    expect(await leases.acquire('run/1', 'worker-b', 1000)).toBeNull();
    expect(await leases.inspect('run/1')).toEqual(a);
    expect(await leases.inspect('run/2')).toBeNull();

    // The holder asking again gets it renewed, same token.
    clock.advance(400);
    const again = (await leases.acquire('run/1', 'worker-a', 1000))!;
    expect(again).toEqual({ ...a, expiresAt: clock.now() + 1000 });

    clock.advance(500);
    await leases.requestDrain('run/1');
    const renewed = (await leases.renew(again, 2000))!;
    expect(renewed).toEqual({ lease: { ...a, expiresAt: clock.now() + 2000 }, drain: true });

    // Expired: another owner takes it with the next token; the old holder has lost it.
    clock.advance(2000);
    expect(await leases.renew(renewed.lease, 1000)).toBeNull();
    const b = (await leases.acquire('run/1', 'worker-b', 1000))!;
    expect(b).toMatchObject({ owner: 'worker-b', token: 2 });
    expect((await leases.renew(b, 1000))!.drain).toBe(false);
    await leases.release(renewed.lease); // lost: ignored
    expect(await leases.inspect('run/1')).toMatchObject({ owner: 'worker-b', token: 2 });

    // Released: free at once, and the token still grows.
    await leases.release(b);
    expect(await leases.inspect('run/1')).toBeNull();
    expect(await leases.renew(b, 1000)).toBeNull();
    expect(await leases.acquire('run/1', 'worker-a', 1000)).toMatchObject({ owner: 'worker-a', token: 3 });
  });

  it('refuses bad arguments', async () => {
    const { leases } = open();
    for (const call of [
      () => leases.acquire('', 'o', 1000), () => leases.acquire('k', '', 1000), () => leases.acquire('k', 'o', 0),
      () => leases.acquire('k', 'o', Number.NaN), () => leases.renew({ key: 'k', owner: 'o', token: 1, expiresAt: 0 }, -1),
    ]) {
      expect(InvalidOptionsError.isInstance(await rejection(call()))).toBe(true);
    }
  });

  it('a save carrying a lease checks it in the same transaction: lost after expiry or a new holder', async () => {
    const clock = manualClock();
    const ops = open({ clock });
    const lease = (await ops.leases.acquire('run/r-1', 'worker-a', 1000))!;
    await ops.agentRuns.save(envelope('r-1'), { lease });
    clock.advance(1000);
    const expired = await rejection(ops.agentRuns.save(envelope('r-1', { revision: 2 }), { lease }));
    expect(AgentRunLeaseError.isInstance(expired)).toBe(true);
    expect(expired).toMatchObject({ code: 'lease_lost', key: 'run/r-1' });
    const taken = (await ops.leases.acquire('run/r-1', 'worker-b', 1000))!;
    expect(await rejection(ops.agentRuns.save(envelope('r-1', { revision: 2 }), { lease }))).toMatchObject({ code: 'lease_lost' });
    await ops.agentRuns.save(envelope('r-1', { revision: 2 }), { lease: taken });
    // A lease from another store object on the same file is the same row.
    const other = open({ clock });
    expect(await rejection(other.agentRuns.save(envelope('r-1', { revision: 3 }), { lease }))).toMatchObject({ code: 'lease_lost' });
    await other.agentRuns.save(envelope('r-1', { revision: 3 }), { lease: taken });
    await other.leases.release(taken);
    expect(await rejection(ops.agentRuns.save(envelope('r-1', { revision: 4 }), { lease: taken }))).toMatchObject({ code: 'lease_lost' });
    expect((await ops.agentRuns.load('r-1'))!.revision).toBe(3);
  });

  it('a run with lease: { provider: ops.leases } completes, and a second executor is refused meanwhile', async () => {
    const ops = open();
    const { options, first } = await (async () => {
      const run = approvalRun(ops.agentRuns);
      const withLease = { ...run.options, lease: { provider: ops.leases, owner: 'worker-a', ttlMs: 30_000 } };
      return { options: withLease, first: await runAgent(withLease) };
    })();
    expect(first.status).toBe('suspended');
    if (first.status !== 'suspended') return;
    // The leg released its lease at the end.
    expect(await ops.leases.inspect(`cairn/agent-run/tenant-a/publish-1`)).toBeNull();
    const held = (await ops.leases.acquire('cairn/agent-run/tenant-a/publish-1', 'someone-else', 30_000))!;
    const model = createMockModel({ responses: [{ text: 'no' }] });
    const refused = await resumeAgent({ ...options, model, approvalResponses: [] });
    expect(refused.status).toBe('failed');
    if (refused.status === 'failed') expect(refused.error.code).toBe('lease_held');
    expect(model.calls).toHaveLength(0);
    await ops.leases.release(held);
    const done = await resumeAgent({
      ...options,
      model: createMockModel({ responses: [{ text: 'Published.' }] }),
      approvalResponses: first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true })),
    });
    expect(done.status).toBe('completed');
  });
});

describe('several processes on one file', () => {
  it('set the schema up together, take a lease once, and never lose or double a save', async () => {
    const workers = 4;
    const savesEach = 15;
    const script = join(dir, 'worker.mts');
    const entry = pathToFileURL(join(root, 'src', 'ops', 'sqlite', 'index.ts')).href;
    writeFileSync(script, `
import { createSqliteOpsStore } from ${JSON.stringify(entry)};
const [path, id, saves, startAt] = process.argv.slice(2);
while (Date.now() < Number(startAt)) await new Promise((r) => setTimeout(r, 1));
const ops = createSqliteOpsStore({ path, busyTimeoutMs: 20000 });
const lease = await ops.leases.acquire('the-lease', id, 60000);
let conflicts = 0;
for (let done = 0; done < Number(saves);) {
  const stored = await ops.agentRuns.load('counter');
  const messages = stored ? [...stored.snapshot.context.messages] : [];
  messages.push({ role: 'user', content: id + ':' + done });
  const envelope = stored
    ? { ...stored, revision: stored.revision + 1, snapshot: { ...stored.snapshot, context: { ...stored.snapshot.context, messages } } }
    : ${JSON.stringify(envelope('counter', { messages: [] }))};
  if (!stored) envelope.snapshot.context.messages = messages;
  try {
    await ops.agentRuns.save(envelope);
    done += 1;
  } catch (error) {
    if (error.code !== 'revision_conflict') throw error;
    conflicts += 1;
  }
}
ops.close();
console.log(JSON.stringify({ id, lease: lease !== null, conflicts }));
`);
    const tsx = join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs');
    const startAt = Date.now() + 1500;
    const outputs = await Promise.all(Array.from({ length: workers }, (_, i) => new Promise<string>((resolve, reject) => {
      execFile(process.execPath, [tsx, '--conditions=source', script, file, `w${i}`, String(savesEach), String(startAt)],
        { cwd: root, timeout: 60_000 }, (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)));
    })));
    const reports = outputs.map((out) => JSON.parse(out.trim()) as { id: string; lease: boolean; conflicts: number });
    expect(reports.filter((r) => r.lease)).toHaveLength(1);

    const ops = open();
    const stored = (await ops.agentRuns.load('counter'))!;
    expect(stored.revision).toBe(workers * savesEach);
    const contents = (stored.snapshot as { context: { messages: { content: string }[] } }).context.messages.map((m) => m.content);
    expect(contents).toHaveLength(workers * savesEach);
    expect(new Set(contents).size).toBe(workers * savesEach);
    for (let i = 0; i < workers; i++) expect(contents.filter((c) => c.startsWith(`w${i}:`))).toHaveLength(savesEach);
    expect(raw().prepare('SELECT version FROM cairn_ops_schema ORDER BY version').pluck().all())
      .toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));
  });
});

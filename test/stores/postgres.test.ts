/**
 * cairn/ops/postgres against a real PostgreSQL (see pg-env.ts): real envelopes
 * from runs of the engine, the revision compare-and-swap under concurrency,
 * scope refusal, corrupt rows, setup and migrations, a connection killed in
 * the middle of a save, leases on the database clock, list and prune, and the
 * bytes a save writes as the run grows.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  AgentRunLeaseError, PersistenceError, agentRunLeaseKey, RevisionConflictError, RunIdentityError, StoredRecordError,
  createInMemoryAgentRunStore, resumeAgent, runAgent,
  type AgentRunEnvelope, type AgentRunStore, type AgentTool, type AgentToolReceipt, type ResumeOptions,
} from 'cairn/agent';
import {
  createPostgresOpsStore, MIGRATIONS, SCHEMA_VERSION, StoreSchemaVersionError,
  type PostgresOpsStore,
} from 'cairn/ops/postgres';
import { createMockModel, type MockResponse } from 'cairn/testing';
import { describePostgres, type PostgresTestEnv } from './pg-env.js';
import { copyRunRows } from '../support/old-schemas.js';
import { RECORD_FORMAT, sha256 } from '../../src/stores/codec.js';
import { receiptPartAs } from './old-parts.js';
import { digestOf } from '../../src/stores/digest.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const clone = <T>(value: T): T => structuredClone(value);
const stepOf = (e: AgentRunEnvelope) => (e.snapshot as { context: { step: number } }).context.step;
const lengthOf = (e: AgentRunEnvelope) => (e.snapshot as { context: { messages: unknown[] } }).context.messages.length;

function echoTool(extra: Partial<AgentTool> = {}): AgentTool & { runs: unknown[] } {
  const runs: unknown[] = [];
  return {
    description: 'Echoes its input.',
    parameters: { type: 'object' as const, properties: { n: { type: 'number' } } },
    execute: (args: { n?: number }) => {
      runs.push(args);
      return { echoed: args.n ?? null };
    },
    runs,
    ...extra,
  };
}

/** A store that hands every envelope on, and keeps a copy of each one it accepted. */
function recording(store: AgentRunStore): AgentRunStore & { saved: AgentRunEnvelope[] } {
  const saved: AgentRunEnvelope[] = [];
  return {
    saved,
    load: (runId, options) => store.load(runId, options),
    async save(envelope, options) {
      await store.save(envelope, options);
      saved.push(clone(envelope));
    },
  };
}

/** The envelopes a real run saves: a tool loop of `steps` calls, then text. */
async function envelopesOfRun(runId: string, steps = 3): Promise<AgentRunEnvelope[]> {
  const store = recording(createInMemoryAgentRunStore());
  const responses: MockResponse[] = Array.from({ length: steps }, (_, n) => ({ toolCalls: [{ toolName: 'echo', args: { n } }] }));
  const result = await runAgent({
    model: createMockModel({ responses: [...responses, { text: 'done' }] }),
    prompt: 'Echo a few numbers.',
    tools: { echo: echoTool() },
    session: { store, runId, scope: 'tenant-a' },
    maxSteps: steps + 5,
  });
  expect(result.status).toBe('completed');
  return store.saved;
}

/**
 * The envelopes themselves (not copies) that a run of `steps` echo steps saves:
 * consecutive ones share the engine's frozen copies of old messages, the case
 * of the one-statement save. Each has its receipts record built (read once), as
 * a caller's own envelope has it: the cases below plan saves from that record,
 * not from the engine's unbuilt lists (whose open receipts stay in the head).
 */
async function engineEnvelopes(runId: string, steps = 3): Promise<AgentRunEnvelope[]> {
  const envelopes: AgentRunEnvelope[] = [];
  const inner = createInMemoryAgentRunStore();
  await runAgent({
    model: createMockModel({ responses: Array.from({ length: steps }, (_, n) => ({ toolCalls: [{ toolName: 'echo', args: { n } }] })) }),
    prompt: 'Echo.',
    tools: { echo: echoTool() },
    session: { store: { load: (id) => inner.load(id), save: async (e) => { void e.receipts; envelopes.push(e); await inner.save(e); } }, runId, scope: 'tenant-a' },
    maxSteps: steps,
  });
  return envelopes;
}

/** What the store passes to client.query: the text, or a config with the text (and a name, for a prepared statement). */
type Query = string | { text: string; values?: unknown[]; name?: string };
const textOf = (q: Query) => (typeof q === 'string' ? q : q.text);
const valuesOf = (q: Query, values?: unknown[]) => (typeof q === 'string' ? values : q.values ?? values) ?? [];

/**
 * A pool whose clients pass every query through `intercept` first (it may run
 * queries of its own with `query`, such as killing the client's backend).
 */
function interceptingPool(url: string, intercept: (q: Query, values: unknown[] | undefined, query: (q: Query, values?: unknown[]) => Promise<unknown>) => void | Promise<void>): pg.Pool {
  const pool = new pg.Pool({ connectionString: url });
  pool.on('error', () => undefined);
  const patched = new WeakSet<object>();
  const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>;
  (pool as { connect: unknown }).connect = async () => {
    const client = await connect();
    if (!patched.has(client)) {
      patched.add(client);
      const query = client.query.bind(client) as (query: Query, values?: unknown[]) => Promise<unknown>;
      (client as { query: unknown }).query = async (q: Query, values?: unknown[]) => {
        await intercept(q, values, query);
        return query(q, values);
      };
    }
    return client;
  };
  return pool;
}

/** A pool whose clients count the bytea bytes they send (parameters and array parameters). */
function measuringPool(url: string): { pool: pg.Pool; bytes(): number } {
  let bytes = 0;
  const pool = interceptingPool(url, (q, values) => {
    for (const value of valuesOf(q, values)) {
      for (const item of Array.isArray(value) ? value : [value]) if (Buffer.isBuffer(item)) bytes += item.length;
    }
  });
  return { pool, bytes: () => bytes };
}

/** Resumes the run of `options` through `store` with its pending approval granted; the model answers "Published.". */
function approveOn(options: ResumeOptions, store: AgentRunStore, approval: { approvalId: string; token: string }) {
  return resumeAgent({
    ...options,
    model: createMockModel({ responses: [{ text: 'Published.' }] }),
    session: { ...options.session, store },
    approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }],
  });
}

describePostgres('cairn/ops/postgres', (env: PostgresTestEnv) => {
  const opened: PostgresOpsStore[] = [];
  const pools: pg.Pool[] = [];
  let schema = '';
  let ops: PostgresOpsStore;

  /** Another store object over the same schema, on its own pool: another process. */
  function open(name = schema): PostgresOpsStore {
    const store = createPostgresOpsStore(
      { connectionString: env.url, poolOptions: { idleTimeoutMillis: 1_000 } },
      { schema: name },
    );
    opened.push(store);
    return store;
  }

  beforeAll(async () => {
    schema = env.newSchema();
    ops = open();
    await ops.setup();
  });

  afterAll(async () => {
    for (const store of opened) await store.close();
    for (const pool of pools) await pool.end();
  });

  const count = async (table: string, runId: string) =>
    Number((await env.sql<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".${table} WHERE run_id = $1`, [runId]))[0]!.n);

  it('a run driven by the engine round-trips, and a resume through another pool finishes it', async () => {
    const publish = echoTool({ needsApproval: true });
    const lookup = echoTool();
    const store = recording(ops.agentRuns);
    const options = {
      model: createMockModel({
        responses: [
          { toolCalls: [{ toolName: 'lookup', args: { n: 1 } }] },
          { toolCalls: [{ toolName: 'lookup', args: { n: 2 } }, { toolName: 'publish', args: { n: 3 } }] },
          { text: 'Published.' },
        ],
      }),
      prompt: 'Look up, then publish.',
      bindingId: 'pg-roundtrip-v1',
      tools: { lookup, publish },
      session: { store, runId: 'roundtrip-1', scope: 'tenant-a' },
    } satisfies ResumeOptions;
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    if (first.status !== 'suspended') return;
    expect(lookup.runs).toHaveLength(2);
    expect(publish.runs).toHaveLength(0);

    // Every save reads back as saved, through the same and through another store object.
    const other = open();
    const last = store.saved.at(-1)!;
    expect(await ops.agentRuns.load('roundtrip-1', { scope: 'tenant-a' })).toEqual(last);
    expect(await other.agentRuns.load('roundtrip-1')).toEqual(last);
    expect(await count('cairn_run_messages', 'roundtrip-1')).toBe(lengthOf(last));

    const resumed = await approveOn(options, other.agentRuns, first.pendingApprovals[0]!);
    expect(resumed.status).toBe('completed');
    expect(lookup.runs).toHaveLength(2);
    expect(publish.runs).toHaveLength(1);
    const done = (await ops.agentRuns.load('roundtrip-1'))!;
    expect(done.status).toBe('completed');
    expect(done.result).toEqual(resumed);
    expect(Object.values(done.receipts).map((r) => r.status).sort()).toEqual(['completed', 'completed', 'completed']);

    // A completed run answers from the store, without a model call.
    const again = await resumeAgent({ ...options, model: createMockModel({ responses: [] }), session: { ...options.session, store: open().agentRuns } });
    expect(again).toEqual(resumed);
  });

  it('resumes a run an earlier version wrote (record format 2), and its next save writes every row in this format', async () => {
    const publish = echoTool({ needsApproval: true });
    const options = {
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'lookup', args: { n: 1 } }] }, { toolCalls: [{ toolName: 'publish', args: { n: 2 } }] }] }),
      prompt: 'Look up, then publish.',
      bindingId: 'pg-format2-v1',
      tools: { lookup: echoTool(), publish },
      session: { store: ops.agentRuns, runId: 'format2-1', scope: 'tenant-a' },
    } satisfies ResumeOptions;
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    if (first.status !== 'suspended') return;
    const before = await ops.agentRuns.load('format2-1');
    // What format 2 left: the same parts with format byte 2, and digests made the older way.
    const t = `"${schema}"`;
    await env.sql(`UPDATE ${t}.cairn_runs SET head = set_byte(head, 3, 2) WHERE run_id = 'format2-1'`);
    await env.sql(`UPDATE ${t}.cairn_run_messages SET body = set_byte(body, 3, 2) WHERE run_id = 'format2-1'`);
    // A receipt part as format 2 wrote it: the receipt whole (see old-parts.ts).
    for (const r of await env.sql<{ key: string; body: Buffer }>(`SELECT key, body FROM ${t}.cairn_run_receipts WHERE run_id = 'format2-1'`)) {
      await env.sql(`UPDATE ${t}.cairn_run_receipts SET body = $1 WHERE run_id = 'format2-1' AND key = $2`, [receiptPartAs(r.body, 2), r.key]);
    }
    const messages = await env.sql<{ idx: number; body: Buffer }>(`SELECT idx, body FROM ${t}.cairn_run_messages WHERE run_id = 'format2-1'`);
    const receipts = await env.sql<{ key: string; body: Buffer }>(`SELECT key, body FROM ${t}.cairn_run_receipts WHERE run_id = 'format2-1'`);
    await env.sql(`UPDATE ${t}.cairn_runs SET transcript_digest = $1, receipts_digest = $2 WHERE run_id = 'format2-1'`, [
      digestOf(messages.map((m) => [m.idx, sha256(m.body)] as const), 2), digestOf(receipts.map((r) => [r.key, sha256(r.body)] as const), 2),
    ]);
    const formats = async () => new Set((await env.sql<{ f: number }>(`
      SELECT get_byte(head, 3) AS f FROM ${t}.cairn_runs WHERE run_id = 'format2-1'
      UNION ALL SELECT get_byte(body, 3) FROM ${t}.cairn_run_messages WHERE run_id = 'format2-1'
      UNION ALL SELECT get_byte(body, 3) FROM ${t}.cairn_run_receipts WHERE run_id = 'format2-1'`)).map((r) => r.f));
    expect(await formats()).toEqual(new Set([2]));

    const other = open();
    expect(await other.agentRuns.load('format2-1')).toEqual(before);
    const resumed = await approveOn(options, other.agentRuns, first.pendingApprovals[0]!);
    expect(resumed.status).toBe('completed');
    expect(publish.runs).toHaveLength(1);
    expect(await formats()).toEqual(new Set([RECORD_FORMAT]));
    expect((await open().agentRuns.load('format2-1'))?.result).toEqual(resumed);
  });

  it('replays every envelope of a run in order, each one loading back equal', async () => {
    const envelopes = await envelopesOfRun('replay-1', 4);
    for (const envelope of envelopes) {
      await ops.agentRuns.save(envelope);
      expect(await open().agentRuns.load('replay-1')).toEqual(envelope);
    }
    expect(await ops.agentRuns.load('missing-run')).toBeUndefined();
  });

  it('a save is a compare-and-swap: of 10 concurrent saves of one revision exactly one wins', async () => {
    const envelopes = await envelopesOfRun('cas-1');
    const stores = Array.from({ length: 10 }, () => open().agentRuns);
    // The first save (an insert) and a later one (an update), each raced by ten writers.
    for (const envelope of [envelopes[0]!, envelopes[1]!]) {
      const results = await Promise.allSettled(stores.map((s) => s.save(clone(envelope))));
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(9);
      for (const error of lost) {
        expect(RevisionConflictError.isInstance(error)).toBe(true);
        expect(error).toMatchObject({ code: 'revision_conflict', expectedRevision: envelope.revision - 1, storedRevision: envelope.revision });
      }
    }
    expect(await ops.agentRuns.load('cas-1')).toEqual(envelopes[1]);
    expect(await count('cairn_run_messages', 'cas-1')).toBe(lengthOf(envelopes[1]!));
    // A revision that skips one, or repeats one, is refused too.
    await expect(ops.agentRuns.save({ ...clone(envelopes[2]!), revision: 4 })).rejects.toMatchObject({
      name: 'RevisionConflictError', expectedRevision: 3, storedRevision: 2,
    });
    await expect(ops.agentRuns.save(clone(envelopes[1]!))).rejects.toMatchObject({ name: 'RevisionConflictError', storedRevision: 2 });
  });

  it('refuses a run of another scope without returning its data, on load, on resume and on save', async () => {
    const [envelope] = await envelopesOfRun('scoped-1');
    await ops.agentRuns.save(envelope!);
    const error = await ops.agentRuns.load('scoped-1', { scope: 'tenant-b' }).catch((e: unknown) => e);
    expect(RunIdentityError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'scope_mismatch', message: 'Native checkpoint version, identity, or scope mismatch.' });
    expect(JSON.stringify(error)).not.toContain('tenant-a');
    expect(await ops.agentRuns.load('scoped-1', { scope: 'tenant-a' })).toEqual(envelope);

    const resumed = await resumeAgent({
      model: createMockModel({ responses: [] }),
      tools: { echo: echoTool() },
      session: { store: ops.agentRuns, runId: 'scoped-1', scope: 'tenant-b' },
    });
    expect(resumed).toMatchObject({ status: 'failed', error: { code: 'scope_mismatch' } });

    const foreign = { ...clone(envelope!), scope: 'tenant-b', revision: 2 };
    await expect(ops.agentRuns.save(foreign)).rejects.toMatchObject({ name: 'RunIdentityError', code: 'scope_mismatch' });
    expect((await ops.agentRuns.load('scoped-1'))!.revision).toBe(1);
  });

  it('refuses corrupt, truncated and future-format rows with StoredRecordError', async () => {
    const envelopes = await envelopesOfRun('corrupt-1');
    for (const envelope of envelopes.slice(0, 3)) await ops.agentRuns.save(envelope);
    const t = `"${schema}"`;
    const loadError = () => open().agentRuns.load('corrupt-1').catch((e: unknown) => e);
    const expectRefusal = async (code: string) => {
      const error = await loadError();
      expect(StoredRecordError.isInstance(error), String(error)).toBe(true);
      expect(error).toMatchObject({ code, runId: 'corrupt-1' });
    };
    const backup = (await env.sql<{ head: Buffer }>(`SELECT head FROM ${t}.cairn_runs WHERE run_id = 'corrupt-1'`))[0]!.head;

    await env.sql(`UPDATE ${t}.cairn_runs SET head = '\\x00010203'::bytea WHERE run_id = 'corrupt-1'`);
    await expectRefusal('record_corrupt');
    // One flipped bit in the payload fails the checksum.
    const flipped = Buffer.from(backup);
    flipped[flipped.length - 1] = flipped[flipped.length - 1]! ^ 1;
    await env.sql(`UPDATE ${t}.cairn_runs SET head = $1 WHERE run_id = 'corrupt-1'`, [flipped]);
    await expectRefusal('record_corrupt');
    // A format this reader does not know.
    const future = Buffer.from(backup);
    future[3] = 99;
    await env.sql(`UPDATE ${t}.cairn_runs SET head = $1 WHERE run_id = 'corrupt-1'`, [future]);
    await expectRefusal('record_version_unsupported');
    await env.sql(`UPDATE ${t}.cairn_runs SET head = $1 WHERE run_id = 'corrupt-1'`, [backup]);
    expect(await ops.agentRuns.load('corrupt-1')).toEqual(envelopes[2]);

    // A message row that is garbled, or gone.
    await env.sql(`UPDATE ${t}.cairn_run_messages SET body = 'nonsense'::bytea WHERE run_id = 'corrupt-1' AND idx = 1`);
    await expectRefusal('record_corrupt');
    await env.sql(`DELETE FROM ${t}.cairn_run_messages WHERE run_id = 'corrupt-1' AND idx = 1`);
    await expectRefusal('record_corrupt');
    // A receipt row that is garbled.
    const other = await envelopesOfRun('corrupt-2');
    for (const envelope of other) await ops.agentRuns.save(envelope);
    expect(await open().agentRuns.load('corrupt-2')).toEqual(other.at(-1));
    const garbled = await env.sql(`UPDATE ${t}.cairn_run_receipts SET body = '\\x43524e01'::bytea WHERE run_id = 'corrupt-2' RETURNING key`);
    expect(garbled.length).toBeGreaterThan(0);
    const error = await open().agentRuns.load('corrupt-2').catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'StoredRecordError', code: 'record_corrupt', runId: 'corrupt-2' });
  });

  it('refuses rows swapped or copied behind its back, each valid on its own (the row digests)', async () => {
    const envelopes = await envelopesOfRun('swapped-1');
    for (const envelope of envelopes) await ops.agentRuns.save(envelope);
    const t = `"${schema}"`;
    await env.sql(`UPDATE ${t}.cairn_run_messages m SET body = o.body FROM ${t}.cairn_run_messages o
      WHERE m.run_id = 'swapped-1' AND o.run_id = 'swapped-1' AND ((m.idx = 1 AND o.idx = 2) OR (m.idx = 2 AND o.idx = 1))`);
    await expect(open().agentRuns.load('swapped-1')).rejects.toMatchObject({ name: 'StoredRecordError', code: 'record_corrupt' });
    await env.sql(`UPDATE ${t}.cairn_run_messages m SET body = o.body FROM ${t}.cairn_run_messages o
      WHERE m.run_id = 'swapped-1' AND o.run_id = 'swapped-1' AND ((m.idx = 1 AND o.idx = 2) OR (m.idx = 2 AND o.idx = 1))`);
    expect(await open().agentRuns.load('swapped-1')).toEqual(envelopes.at(-1));
    await env.sql(`DELETE FROM ${t}.cairn_run_receipts WHERE run_id = 'swapped-1' AND key = (
      SELECT min(key) FROM ${t}.cairn_run_receipts WHERE run_id = 'swapped-1')`);
    await expect(open().agentRuns.load('swapped-1')).rejects.toMatchObject({ name: 'StoredRecordError', code: 'record_corrupt' });
  });

  it('stores exactly the envelope it is given, also when its transcript is not the stored one plus more', async () => {
    const [one, two, three] = await envelopesOfRun('rewrite-1');
    await ops.agentRuns.save(one!);
    await ops.agentRuns.save(two!);
    // Revision 3 with a transcript that rewrites the first message and with a receipt of an earlier step changed.
    const edited = clone(three!);
    const messages = (edited.snapshot as { context: { messages: { role: string; content: unknown }[] } }).context.messages;
    messages[0] = { role: 'user', content: 'A different first message.' };
    edited.receipts['-1:made-up'] = {
      key: '-1:made-up', toolCallId: 'made-up', toolName: 'echo', modelStep: -1, status: 'completed', idempotent: false,
    };
    await ops.agentRuns.save(edited);
    expect(await open().agentRuns.load('rewrite-1')).toEqual(edited);
    // And a shorter transcript with fewer receipts.
    const shorter = { ...clone(one!), revision: 4 };
    await ops.agentRuns.save(shorter);
    expect(await open().agentRuns.load('rewrite-1')).toEqual(shorter);
    expect(await count('cairn_run_messages', 'rewrite-1')).toBe(lengthOf(one!));
  });

  it('setup() is idempotent and safe to run concurrently', async () => {
    const fresh = env.newSchema();
    const stores = Array.from({ length: 6 }, () => open(fresh));
    await Promise.all(stores.map((s) => s.setup()));
    await stores[0]!.setup();
    const versions = await env.sql<{ version: number }>(`SELECT version FROM "${fresh}".cairn_ops_schema ORDER BY version`);
    expect(versions.map((v) => v.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
    expect(SCHEMA_VERSION).toBe(MIGRATIONS.length);
    const tables = await env.sql<{ table_name: string }>(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name', [fresh]);
    expect(tables.map((r) => r.table_name)).toEqual([
      'cairn_breakers', 'cairn_budget_entries', 'cairn_budget_ledgers', 'cairn_chats', 'cairn_journal_frames', 'cairn_journal_streams',
      'cairn_leases', 'cairn_memories', 'cairn_ops_schema', 'cairn_run_messages', 'cairn_run_receipts', 'cairn_runs',
      'cairn_session_turns', 'cairn_sessions',
    ]);
    const [envelope] = await envelopesOfRun('setup-1');
    await stores[3]!.agentRuns.save(envelope!);
    expect(await stores[5]!.agentRuns.load('setup-1')).toEqual(envelope);
  });

  it('migrates a version 1 schema with a run in it to the current version, and the run loads and saves on', async () => {
    const fresh = env.newSchema();
    await env.sql(`CREATE SCHEMA "${fresh}"`);
    await env.sql(`CREATE TABLE "${fresh}".cairn_ops_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const client = new pg.Client({ connectionString: env.url });
    await client.connect();
    try {
      await client.query(`SET search_path TO "${fresh}"`);
      for (const statement of MIGRATIONS[0]!) await client.query(statement);
      await client.query('INSERT INTO cairn_ops_schema (version) VALUES (1)');
      // This code does not write version 1's whole-history hashes: defaults stand in for them. Every other column
      // (the digests, settled_step) means the same in both versions.
      await client.query("ALTER TABLE cairn_runs ALTER COLUMN transcript_hash SET DEFAULT '\\x00', ALTER COLUMN settled_hash SET DEFAULT '\\x00'");
    } finally {
      await client.end();
    }
    const [one, two] = await envelopesOfRun('migrate-1');
    // Saved by this code into a current schema, then copied into the version 1 one as the old code wrote it.
    const current = env.newSchema();
    const writer = open(current);
    await writer.setup();
    await writer.agentRuns.save(one!);
    await copyRunRows((text, values) => env.sql(text, values), current, fresh, 'migrate-1');
    const store = open(fresh);
    await store.setup();
    const versions = await env.sql<{ version: number }>(`SELECT version FROM "${fresh}".cairn_ops_schema ORDER BY version`);
    expect(versions.map((v) => v.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
    const columns = await env.sql<{ column_name: string }>(
      "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'cairn_runs'", [fresh]);
    expect(columns.map((c) => c.column_name)).not.toContain('transcript_hash');
    expect(columns.map((c) => c.column_name)).not.toContain('settled_hash');
    expect(await store.agentRuns.load('migrate-1')).toEqual(one);
    await store.agentRuns.save(two!);
    expect(await open(fresh).agentRuns.load('migrate-1')).toEqual(two);
  });

  it('is shown in docs/stores.md exactly as MIGRATIONS has it', () => {
    const page = readFileSync(new URL('../../docs/stores.md', import.meta.url), 'utf8');
    const block = /<!-- schema: postgres -->\n```sql\n([\s\S]*?)```/.exec(page);
    expect(block, 'docs/stores.md has a sql block after <!-- schema: postgres -->').not.toBeNull();
    expect(block![1]).toBe(`${MIGRATIONS.flat().map((statement) => `${statement};`).join('\n')}\n`);
  });

  it('refuses a database whose schema is newer than the code, and changes nothing', async () => {
    const fresh = env.newSchema();
    await env.sql(`CREATE SCHEMA "${fresh}"`);
    await env.sql(`CREATE TABLE "${fresh}".cairn_ops_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const future = SCHEMA_VERSION + 3;
    await env.sql(`INSERT INTO "${fresh}".cairn_ops_schema (version) VALUES ($1)`, [future]);
    const error = await open(fresh).setup().catch((e: unknown) => e);
    expect(StoreSchemaVersionError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      name: 'StoreSchemaVersionError', code: 'record_version_unsupported', backend: 'postgres', found: future, supported: SCHEMA_VERSION, schema: fresh,
    });
    const tables = await env.sql('SELECT 1 FROM information_schema.tables WHERE table_schema = $1', [fresh]);
    expect(tables).toHaveLength(1);
  });

  it('tells you to call setup() when the tables are missing', async () => {
    const store = open(env.newSchema());
    const error = await store.agentRuns.load('x').catch((e: unknown) => e);
    expect(PersistenceError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/call setup\(\) first/i);
  });

  it('a connection killed in the middle of a save fails it with a typed error, writes none of it, and a retry completes', async () => {
    const envelopes = await envelopesOfRun('killed-1');
    const store = open();
    await store.agentRuns.save(envelopes[0]!);
    // The next save that appends to the transcript.
    const next = envelopes[1]!;
    const stored = lengthOf(envelopes[0]!);
    expect(lengthOf(next)).toBeGreaterThan(stored);

    // Another session holds the key of the first message the save appends, so
    // the save stops there, after its run row was already updated.
    const locker = new pg.Client({ connectionString: env.url });
    locker.on('error', () => undefined);
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`INSERT INTO "${schema}".cairn_run_messages (run_id, idx, body) VALUES ('killed-1', $1, '\\x00'::bytea)`, [stored]);
      const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

      const saving = store.agentRuns.save(clone(next)).then(() => null, (e: unknown) => e);
      let victim: number | undefined;
      for (let i = 0; i < 200 && victim === undefined; i += 1) {
        const rows = await env.sql<{ pid: number; query: string }>(
          'SELECT pid, query FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [lockerPid]);
        victim = rows[0]?.pid;
        if (victim === undefined) await sleep(25);
      }
      expect(victim, 'the save waits on the locked message').toBeDefined();
      // The save already updated the run's row (its transaction holds the row lock) and waits to append.
      const activity = await env.sql<{ query: string }>('SELECT query FROM pg_stat_activity WHERE pid = $1', [victim]);
      expect(activity[0]!.query).toMatch(/INSERT INTO .*cairn_run_messages/);
      const locks = await env.sql<{ mode: string }>(
        'SELECT mode FROM pg_locks WHERE pid = $1 AND relation = $2::regclass', [victim, `"${schema}".cairn_runs`]);
      expect(locks.map((l) => l.mode)).toContain('RowExclusiveLock');
      await env.sql('SELECT pg_terminate_backend($1)', [victim]);

      const error = await saving;
      expect(PersistenceError.isInstance(error), String(error)).toBe(true);
      expect(error).toMatchObject({ code: 'persistence_failed', fault: 'dependency' });
      expect((error as Error).cause).toBeInstanceOf(Error);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }

    // Nothing of the failed save is stored.
    expect(await open().agentRuns.load('killed-1')).toEqual(envelopes[0]);
    expect(await count('cairn_run_messages', 'killed-1')).toBe(stored);
    // The same store object goes on with a new connection.
    await store.agentRuns.save(clone(next));
    expect(await open().agentRuns.load('killed-1')).toEqual(next);
    for (const envelope of envelopes.slice(2)) await store.agentRuns.save(envelope);
    expect(await open().agentRuns.load('killed-1')).toEqual(envelopes.at(-1));
  });

  it('a run whose connection dies inside a save fails with persistence_failed, and a resume finishes it', async () => {
    // The pool's clients kill their own backend when the chosen save appends to the transcript: the fourth
    // append, the second step's `executing` receipt (with its turn), so the effect of that step never ran.
    let appends = 0;
    const pool = interceptingPool(env.url, async (q, _values, query) => {
      if (/INSERT INTO .*cairn_run_messages/.test(textOf(q)) && ++appends === 4) {
        await query('SELECT pg_terminate_backend(pg_backend_pid())');
      }
    });
    pools.push(pool);
    const store = recording(createPostgresOpsStore({ pool }, { schema }).agentRuns);
    const echo = echoTool();
    const model = () => createMockModel({
      responses: Array.from({ length: 8 }, () => (request: { messages: readonly { role: string }[] }) => {
        const done = request.messages.filter((m) => m.role === 'tool').length;
        return done < 3 ? { toolCalls: [{ toolName: 'echo', args: { n: done } }] } : { text: 'done' };
      }),
    });
    const options = {
      model: model(),
      prompt: 'Echo three numbers.',
      tools: { echo },
      session: { store, runId: 'dies-1', scope: 'tenant-a' },
    } satisfies ResumeOptions;
    const first = await runAgent(options);
    expect(first).toMatchObject({ status: 'failed', error: { code: 'persistence_failed' } });
    // What is stored is exactly the last save that committed.
    expect(await open().agentRuns.load('dies-1')).toEqual(store.saved.at(-1));
    expect(await count('cairn_run_messages', 'dies-1')).toBe(lengthOf(store.saved.at(-1)!));

    const resumed = await resumeAgent({ ...options, model: model(), session: { ...options.session, store: open().agentRuns } });
    expect(resumed.status).toBe('completed');
    expect((await ops.agentRuns.load('dies-1'))!.status).toBe('completed');
    expect(echo.runs).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);
  });

  it('a running run\'s later saves are one statement each, and a write by another store object in between sends the next one the checked way', async () => {
    const statements: string[] = [];
    const pool = interceptingPool(env.url, (q) => void statements.push(textOf(q).trim().split(/\s+/)[0]!.toUpperCase()));
    pools.push(pool);
    const store = recording(createPostgresOpsStore({ pool }, { schema }).agentRuns);
    const echo = echoTool();
    const result = await runAgent({
      model: createMockModel({ responses: [
        { toolCalls: [{ toolName: 'echo', args: { n: 0 } }] }, { toolCalls: [{ toolName: 'echo', args: { n: 1 } }] }, { text: 'done' },
      ] }),
      prompt: 'Echo twice.',
      tools: { echo },
      session: { store, runId: 'one-statement-1', scope: 'tenant-a' },
    });
    expect(result.status).toBe('completed');
    // Every save is one statement: no BEGIN, no COMMIT, no read before the write.
    expect(statements.length).toBe(store.saved.length);
    expect(statements.every((s) => s === 'WITH')).toBe(true);
    expect(await open().agentRuns.load('one-statement-1')).toEqual(store.saved.at(-1));

    // Another store object saves the next revision of a run this one wrote: this one's next save misses, goes the
    // checked way and is refused as a conflict; the save after that, of the right revision, is stored exactly.
    const envelopes = await engineEnvelopes('one-statement-2');
    expect(envelopes.length).toBeGreaterThan(4);
    statements.length = 0;
    const ours = createPostgresOpsStore({ pool }, { schema }).agentRuns;
    await ours.save(envelopes[0]!);
    await ours.save(envelopes[1]!);
    await open().agentRuns.save(envelopes[2]!);
    await expect(ours.save(envelopes[2]!)).rejects.toMatchObject({ code: 'revision_conflict' });
    await ours.save(envelopes[3]!);
    await ours.save(envelopes[4]!);
    expect(statements.filter((s) => s === 'BEGIN')).toHaveLength(2);
    expect(await open().agentRuns.load('one-statement-2')).toEqual(JSON.parse(JSON.stringify(envelopes[4])));
  });

  it('a one-statement save that leaves out a receipt of the current step deletes its row, and the next one puts it back', async () => {
    const texts: string[] = [];
    const pool = interceptingPool(env.url, (q) => void texts.push(textOf(q)));
    const firstWords = () => texts.map((text) => text.trim().split(/\s+/)[0]!.toUpperCase());
    pools.push(pool);
    const envelopes = await engineEnvelopes('gone-1');
    const current = (e: AgentRunEnvelope) => Math.max(0, stepOf(e) - 1);
    // A save after the first whose next save is of the same step and still has a receipt of that step.
    const k = envelopes.findIndex((e, i) => i > 0 && envelopes[i + 1] !== undefined && envelopes[i + 1]!.status === 'running'
      && current(envelopes[i + 1]!) === current(e) && Object.values(envelopes[i + 1]!.receipts).some((r) => r.modelStep >= current(e)));
    expect(k).toBeGreaterThan(0);
    const store = createPostgresOpsStore({ pool }, { schema }).agentRuns;
    for (const envelope of envelopes.slice(0, k + 1)) await store.save(envelope);
    const next = envelopes[k + 1]!;
    const dropped = Object.values(next.receipts).find((r) => r.modelStep >= current(next))!;
    const without = { ...next, receipts: Object.fromEntries(Object.entries(next.receipts).filter(([key]) => key !== dropped.key)) };
    texts.length = 0;
    await store.save(without);
    expect(firstWords()).toEqual(['WITH']);
    expect(texts[0]).toMatch(/DELETE FROM [^;]*cairn_run_receipts/);
    const receiptRows = async () => (await env.sql<{ key: string }>(
      `SELECT key FROM "${schema}".cairn_run_receipts WHERE run_id = 'gone-1' ORDER BY key COLLATE "C"`)).map((r) => r.key);
    expect(await receiptRows()).toEqual(Object.keys(without.receipts).sort());
    expect(await open().agentRuns.load('gone-1')).toEqual(JSON.parse(JSON.stringify(without)));
    // The next save has the receipt again: one statement, and the row is back.
    const after = { ...next, revision: next.revision + 1 };
    await store.save(after);
    expect(firstWords()).toEqual(['WITH', 'WITH']);
    // The engine's saves take nothing out: their statement has no DELETE.
    expect(texts[1]).not.toMatch(/DELETE/);
    expect(await receiptRows()).toEqual(Object.keys(next.receipts).sort());
    expect(await open().agentRuns.load('gone-1')).toEqual(JSON.parse(JSON.stringify(after)));
  });

  /**
   * An envelope whose receipts `edit` changed, in `envelope.receipts` and, when
   * the snapshot keeps the ended calls' receipts, there too (the envelope's are
   * a projection of the snapshot's).
   */
  function withReceipts(envelope: AgentRunEnvelope, edit: (receipts: Record<string, AgentToolReceipt>) => Record<string, AgentToolReceipt>) {
    const copy = clone(envelope);
    copy.receipts = edit(copy.receipts);
    const context = (copy.snapshot as { context?: { receipts?: Record<string, AgentToolReceipt> } }).context;
    if (context?.receipts) {
      const ended = edit(context.receipts);
      context.receipts = Object.fromEntries(Object.entries(ended).filter(([key]) => Object.hasOwn(context.receipts!, key)));
    }
    return copy;
  }

  it('a one-statement save takes settled receipts as stored (an equal copy is one statement), and one dropped or migrated goes the locked way, stored exactly', async () => {
    const texts: string[] = [];
    const pool = interceptingPool(env.url, (q) => void texts.push(textOf(q)));
    pools.push(pool);
    const firstWords = () => texts.map((text) => text.trim().split(/\s+/)[0]!.toUpperCase());
    const envelopes = await engineEnvelopes('settled-1', 5);
    const current = (e: AgentRunEnvelope) => Math.max(0, stepOf(e) - 1);
    const settledOf = (e: AgentRunEnvelope) => Object.values(e.receipts).filter((r) => r.modelStep < current(e));
    // Four running saves in a row, each with a settled receipt, the first of them after the run's first save.
    const k = envelopes.findIndex((e, i) => i > 0 && envelopes.slice(i, i + 4).length === 4
      && envelopes.slice(i, i + 4).every((x) => x.status === 'running' && settledOf(x).length > 0));
    expect(k).toBeGreaterThan(0);
    const store = createPostgresOpsStore({ pool }, { schema }).agentRuns;
    for (const envelope of envelopes.slice(0, k)) await store.save(envelope);
    const loaded = async () => open().agentRuns.load('settled-1');

    // A settled receipt that is an equal copy, not the engine's object: nothing to write for it.
    const a = envelopes[k]!;
    const copied = settledOf(a)[0]!;
    const withCopy = withReceipts(a, (receipts) => ({ ...receipts, [copied.key]: structuredClone(copied) }));
    texts.length = 0;
    await store.save(withCopy);
    expect(firstWords()).toEqual(['WITH']);
    expect(await loaded()).toEqual(JSON.parse(JSON.stringify(withCopy)));

    // A settled receipt changed in place, as a migration to another machine version does: every row is written again.
    const b = envelopes[k + 1]!;
    const changed = settledOf(b)[0]!;
    const withChange = withReceipts({ ...b, machine: { ...b.machine, version: b.machine.version + 1 } },
      (receipts) => ({ ...receipts, [changed.key]: { ...changed, toolName: 'changed' } }));
    texts.length = 0;
    await store.save(withChange);
    expect(firstWords()).toContain('BEGIN');
    expect(await loaded()).toEqual(JSON.parse(JSON.stringify(withChange)));

    // A settled receipt left out, after a save that had it: the receipts are written again.
    const c = envelopes[k + 2]!;
    const left = settledOf(c)[0]!;
    const withoutSettled = withReceipts(c, (receipts) => Object.fromEntries(Object.entries(receipts).filter(([key]) => key !== left.key)));
    texts.length = 0;
    await store.save(withoutSettled);
    expect(firstWords()).toContain('BEGIN');
    expect(await loaded()).toEqual(JSON.parse(JSON.stringify(withoutSettled)));

    // And the engine's own next envelope goes on.
    await store.save(envelopes[k + 3]!);
    expect(await loaded()).toEqual(JSON.parse(JSON.stringify(envelopes[k + 3])));
  });

  it('leases live on the database clock: expiry, fencing tokens, renew, drain, release', async () => {
    const leases = ops.leases;
    const ttl = 400;
    const dbNow = (await env.sql<{ now: number }>('SELECT floor(extract(epoch FROM now()) * 1000)::float8 AS now'))[0]!.now;
    const a = (await leases.acquire('lease-1', 'worker-a', ttl))!;
    expect(a).toMatchObject({ key: 'lease-1', owner: 'worker-a', token: 1 });
    expect(a.expiresAt).toBeGreaterThanOrEqual(dbNow + ttl - 5);
    expect(a.expiresAt).toBeLessThan(dbNow + ttl + 5_000);
    expect(await leases.inspect('lease-1')).toEqual(a);
    expect(await open().leases.acquire('lease-1', 'worker-b', ttl)).toBeNull();
    // The holder gets it back, same token.
    expect(await leases.acquire('lease-1', 'worker-a', ttl)).toMatchObject({ owner: 'worker-a', token: 1 });

    // Saves fenced by the lease.
    const envelopes = await envelopesOfRun('leased-1');
    await ops.agentRuns.save(envelopes[0]!, { lease: a });
    await ops.agentRuns.save(envelopes[1]!, { lease: a });

    const renewal = (await leases.renew(a, ttl))!;
    expect(renewal.drain).toBe(false);
    await leases.requestDrain('lease-1');
    expect((await leases.renew(renewal.lease, ttl))!.drain).toBe(true);

    await sleep(ttl + 150);
    // Expired on the database clock: another owner takes it with the next token.
    const b = (await open().leases.acquire('lease-1', 'worker-b', ttl * 10))!;
    expect(b).toMatchObject({ owner: 'worker-b', token: 2 });
    expect(await leases.renew(a, ttl)).toBeNull();
    expect((await leases.renew(b, ttl * 10))!.drain).toBe(false);
    const lost = await ops.agentRuns.save(clone(envelopes[2]!), { lease: a }).catch((e: unknown) => e);
    expect(AgentRunLeaseError.isInstance(lost)).toBe(true);
    expect(lost).toMatchObject({ code: 'lease_lost', key: 'lease-1' });
    expect((await ops.agentRuns.load('leased-1'))!.revision).toBe(2);
    await ops.agentRuns.save(clone(envelopes[2]!), { lease: b });
    // A stale revision with a good lease is still a revision conflict.
    await expect(ops.agentRuns.save(clone(envelopes[2]!), { lease: b })).rejects.toMatchObject({ name: 'RevisionConflictError' });

    // Releasing a lost lease changes nothing; releasing the held one frees it at once.
    await leases.release(a);
    expect(await leases.inspect('lease-1')).toMatchObject({ owner: 'worker-b', token: 2 });
    await leases.release(b);
    // Released: no holder to show, and the row keeps the token for the next holder.
    expect(await leases.inspect('lease-1')).toBeNull();
    const row = (await env.sql<{ owner: string; token: string; live: boolean }>(
      `SELECT owner, token::text, expires_at > now() AS live FROM "${schema}".cairn_leases WHERE key = 'lease-1'`))[0];
    expect(row).toEqual({ owner: '', token: '2', live: false });
    expect(await leases.renew(b, ttl)).toBeNull();
    expect(await leases.acquire('lease-1', 'worker-b', ttl)).toMatchObject({ owner: 'worker-b', token: 3 });
    expect(await leases.inspect('nobody-holds-this')).toBeNull();
    await expect(leases.acquire('lease-1', 'worker-c', 0)).rejects.toMatchObject({ code: 'invalid_options' });
  });

  it('concurrent acquires of a free lease: exactly one holder', async () => {
    const providers = Array.from({ length: 8 }, () => open().leases);
    const results = await Promise.all(providers.map((p, i) => p.acquire('race-1', `w-${i}`, 5_000)));
    const holders = results.filter((r) => r !== null);
    expect(holders).toHaveLength(1);
    expect(holders[0]!.token).toBe(1);
  });

  it('a run with a lease on the Postgres provider saves fenced and gives the lease back', async () => {
    const store = recording(ops.agentRuns);
    const result = await runAgent({
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'echo', args: { n: 1 } }] }, { text: 'done' }] }),
      prompt: 'Echo.',
      tools: { echo: echoTool() },
      session: { store, runId: 'leased-run-1', scope: 'tenant-a' },
      lease: { provider: ops.leases, owner: 'worker-x', ttlMs: 5_000 },
    });
    expect(result.status).toBe('completed');
    expect((await ops.agentRuns.load('leased-run-1'))!.status).toBe('completed');
    // Released at the end: the row is emptied, and another owner takes the run at once.
    const key = agentRunLeaseKey({ runId: 'leased-run-1', scope: 'tenant-a' });
    expect(await ops.leases.inspect(key)).toBeNull();
    expect(await ops.leases.acquire(key, 'worker-y', 5_000)).toMatchObject({ owner: 'worker-y', token: 2 });
  });

  it('lists newest first with filters and cursors, and prunes terminal runs with their rows', async () => {
    const fresh = env.newSchema();
    const store = open(fresh);
    await store.setup();
    const [first] = await envelopesOfRun('template');
    const make = (runId: string, scope: string, status: AgentRunEnvelope['status'], updatedAt: number) =>
      ({ ...clone(first!), runId, scope, status, updatedAt, createdAt: 100 });
    const runs = [
      make('r1', 'a', 'completed', 1000), make('r2', 'a', 'running', 2000), make('r3', 'b', 'failed', 3000),
      make('r4', 'a', 'suspended', 4000), make('r5', 'b', 'stopped', 5000), make('r6', 'a', 'completed', 5000),
    ];
    for (const run of runs) await store.agentRuns.save(run);

    const all = await store.agentRuns.list();
    expect(all.runs.map((r) => r.runId)).toEqual(['r6', 'r5', 'r4', 'r3', 'r2', 'r1']);
    expect(all.nextCursor).toBeUndefined();
    expect(all.runs[0]).toEqual({
      runId: 'r6', scope: 'a', status: 'completed', revision: 1, bindingId: first!.bindingId,
      createdAt: 100, updatedAt: 5000, pendingApprovals: 0, pendingClientCalls: 0,
    });
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await store.agentRuns.list({ limit: 4, ...(cursor ? { cursor } : {}) });
      seen.push(...page.runs.map((r) => r.runId));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(['r6', 'r5', 'r4', 'r3', 'r2', 'r1']);
    expect((await store.agentRuns.list({ scope: 'a', status: ['completed', 'running'] })).runs.map((r) => r.runId)).toEqual(['r6', 'r2', 'r1']);
    expect((await store.agentRuns.list({ updatedAfter: 2000, updatedBefore: 5000 })).runs.map((r) => r.runId)).toEqual(['r4', 'r3', 'r2']);
    await expect(store.agentRuns.list({ cursor: 'not-a-cursor' })).rejects.toMatchObject({ code: 'invalid_options' });

    expect(await store.agentRuns.prune({ terminalBefore: 5000 })).toBe(2); // r1, r3
    expect((await store.agentRuns.list()).runs.map((r) => r.runId)).toEqual(['r6', 'r5', 'r4', 'r2']);
    const leftover = await env.sql(`SELECT run_id FROM "${fresh}".cairn_run_messages WHERE run_id IN ('r1', 'r3')
      UNION ALL SELECT run_id FROM "${fresh}".cairn_run_receipts WHERE run_id IN ('r1', 'r3')`);
    expect(leftover).toEqual([]);
    expect(await store.agentRuns.load('r1')).toBeUndefined();
    expect(await store.agentRuns.prune({ terminalBefore: 10_000 })).toBe(2); // r5, r6
    expect((await store.agentRuns.list()).runs.map((r) => r.runId)).toEqual(['r4', 'r2']);
  });

  it('works on a pool you pass, and close() leaves that pool open', async () => {
    const pool = new pg.Pool({ connectionString: env.url });
    pool.on('error', () => undefined);
    pools.push(pool);
    const store = createPostgresOpsStore({ pool }, { schema });
    await store.setup();
    const [envelope] = await envelopesOfRun('own-pool-1');
    await store.agentRuns.save(envelope!);
    await store.close();
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    expect(await createPostgresOpsStore({ pool }, { schema }).agentRuns.load('own-pool-1')).toEqual(envelope);
  });

  it('refuses a schema name that is not a plain identifier', () => {
    expect(() => createPostgresOpsStore({ connectionString: env.url }, { schema: 'x"; DROP TABLE y; --' })).toThrow(/plain SQL identifier/);
  });

  it('writes per save what the step added: bytes at step 200 are within 1.5x of step 10', async () => {
    const measured = measuringPool(env.url);
    pools.push(measured.pool);
    const store = createPostgresOpsStore({ pool: measured.pool }, { schema });
    const perSave: { step: number; bytes: number }[] = [];
    const session: AgentRunStore = {
      load: (runId, options) => store.agentRuns.load(runId, options),
      async save(envelope, options) {
        const before = measured.bytes();
        await store.agentRuns.save(envelope, options);
        perSave.push({ step: stepOf(envelope), bytes: measured.bytes() - before });
      },
    };
    const steps = 200;
    const result = await runAgent({
      model: createMockModel({
        responses: [
          ...Array.from({ length: steps }, (_, n) => ({ toolCalls: [{ toolName: 'echo', args: { n } }] })),
          { text: 'done' },
        ],
      }),
      prompt: 'Echo two hundred numbers.',
      tools: { echo: echoTool() },
      session: { store: session, runId: 'bytes-1', scope: 'tenant-a' },
      maxSteps: steps + 10,
    });
    expect(result.status).toBe('completed');
    const mean = (step: number) => {
      const saves = perSave.filter((s) => s.step === step);
      expect(saves.length).toBeGreaterThan(0);
      return saves.reduce((sum, s) => sum + s.bytes, 0) / saves.length;
    };
    const at10 = mean(10);
    const at200 = mean(200);
    const ratio = at200 / at10;
    console.log(`[postgres bytes per save] step 10: ${at10.toFixed(0)} B, step 200: ${at200.toFixed(0)} B, ratio ${ratio.toFixed(3)}`);
    expect(ratio).toBeLessThanOrEqual(1.5);
    const final = (await open().agentRuns.load('bytes-1'))!;
    expect(final.status).toBe('completed');
    expect(lengthOf(final)).toBe(await count('cairn_run_messages', 'bytes-1'));
  }, 120_000);
});

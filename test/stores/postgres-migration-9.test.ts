/**
 * PostgreSQL ops migration 9: a run's head stays in its row (no TOAST rows a
 * save), and the transcript and receipt rows carry no foreign key to
 * cairn_runs (a prune deletes them with their run). A schema of version 8
 * with runs written into it (heads out of line, as version 8 stored them)
 * migrates, and every run loads exactly as it was saved, then saves on.
 */
import { afterAll, expect, it } from 'vitest';
import { resumeAgent, runAgent, type AgentRunStore, type AgentTool } from 'cairn/agent';
import { createPostgresOpsStore, MIGRATIONS, SCHEMA_VERSION, type PostgresOpsStore } from 'cairn/ops/postgres';
import { createMockModel } from 'cairn/testing';
import { describePostgres, type PostgresTestEnv } from './pg-env.js';
import { oldOpsSchema } from './pg-old-schema.js';
import { json, recording, waitingRun as sharedWaitingRun } from './recording-store.js';



// A tool result large enough that a head holding a call's snapshot passes 2 kB (PostgreSQL's TOAST threshold).
const step: AgentTool = { parameters: { type: 'object' }, execute: (args: { n: number }) => ({ n: args.n, text: `r${args.n} `.repeat(300) }) };

/** `steps` tool steps (two calls a step, the first with 600 B of arguments), then a call that waits for an approval. */
const waitingRun = (store: AgentRunStore, runId: string, steps: number) =>
  sharedWaitingRun(store, runId, steps, step, (n, call) => ({ n, pad: call === 'a' ? 'x'.repeat(600) : '' }));

describePostgres('cairn/ops/postgres migration 9', (env: PostgresTestEnv) => {
  const opened: PostgresOpsStore[] = [];
  const open = (schema: string) => {
    const store = createPostgresOpsStore({ connectionString: env.url, poolOptions: { idleTimeoutMillis: 1_000 } }, { schema });
    opened.push(store);
    return store;
  };
  afterAll(async () => {
    for (const store of opened) await store.close();
  });

  const toastRows = async (schema: string) => {
    const [row] = await env.sql<{ toast: string }>(
      `SELECT reltoastrelid::regclass::text AS toast FROM pg_class WHERE oid = '"${schema}".cairn_runs'::regclass`);
    return Number((await env.sql<{ n: string }>(`SELECT count(*) AS n FROM ${row!.toast}`))[0]!.n);
  };
  const foreignKeys = async (schema: string) => (await env.sql<{ name: string }>(
    `SELECT conname AS name FROM pg_constraint WHERE contype = 'f' AND conrelid IN ('"${schema}".cairn_run_messages'::regclass,
      '"${schema}".cairn_run_receipts'::regclass) ORDER BY conname`))
    .map((r) => r.name);

  it('migrates a version 8 schema: every run loads deep-equal to its last save, and goes on saving', async () => {
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(9);
    const schema = await oldOpsSchema(env, 8);
    // Written by this code into the version 8 tables (the same columns): the heads go out of line, as version 8 kept them.
    const old = open(schema);
    const a = recording(old.agentRuns);
    const b = recording(old.agentRuns);
    const c = recording(old.agentRuns);
    const [ra, rb] = await Promise.all([runAgent(waitingRun(a, 'run-a', 4)), runAgent(waitingRun(b, 'run-b', 2))]);
    expect([ra.status, rb.status]).toEqual(['suspended', 'suspended']);
    const rc = await runAgent({
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'step', args: { n: 9 }, toolCallId: 'c0' }] }, { text: 'done' }] }),
      prompt: 'Once.', tools: { step }, maxSteps: 4, session: { store: c, runId: 'run-c', scope: 'tenant-b' },
    });
    expect(rc.status).toBe('completed');
    expect(await toastRows(schema)).toBeGreaterThan(0);
    expect(await foreignKeys(schema)).toEqual(['cairn_run_messages_run_id_fkey', 'cairn_run_receipts_run_id_fkey']);

    const store = open(schema);
    await store.setup();
    const versions = await env.sql<{ version: number }>(`SELECT version FROM "${schema}".cairn_ops_schema ORDER BY version`);
    expect(versions.map((v) => v.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
    expect(await foreignKeys(schema)).toEqual([]);
    for (const [runId, saved] of [['run-a', a.saved], ['run-b', b.saved], ['run-c', c.saved]] as const) {
      expect(json(await store.agentRuns.load(runId))).toEqual(saved.at(-1));
      expect(json(await open(schema).agentRuns.load(runId))).toEqual(saved.at(-1));
    }

    // A migrated run resumes and saves on; what it saves reads back exactly, and its head is no longer out of line.
    if (ra.status !== 'suspended') return;
    const approval = ra.pendingApprovals[0]!;
    const resumedOn = recording(store.agentRuns);
    const done = await resumeAgent({
      ...waitingRun(resumedOn, 'run-a', 4),
      model: createMockModel({ responses: [{ text: 'Published.' }] }),
      approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }],
    });
    expect(done.status).toBe('completed');
    expect(json(await open(schema).agentRuns.load('run-a'))).toEqual(resumedOn.saved.at(-1));
    const [sizes] = await env.sql<{ stored: number; head: number }>(
      `SELECT pg_column_size(head) AS stored, octet_length(head) AS head FROM "${schema}".cairn_runs WHERE run_id = 'run-a'`);
    expect(sizes!.head).toBeGreaterThan(2_000);
    expect(sizes!.stored).toBeGreaterThanOrEqual(sizes!.head);
  });

  it('a new schema keeps the heads in their rows: a run of large steps writes no TOAST row', async () => {
    const schema = env.newSchema();
    const store = open(schema);
    await store.setup();
    const run = recording(store.agentRuns);
    expect((await runAgent(waitingRun(run, 'big-1', 5))).status).toBe('suspended');
    expect(await toastRows(schema)).toBe(0);
    expect(await foreignKeys(schema)).toEqual([]);
    expect(json(await open(schema).agentRuns.load('big-1'))).toEqual(run.saved.at(-1));
  });

  it('a prune takes the run\'s transcript and receipt rows with it, and a run of the same id starts clean', async () => {
    const schema = env.newSchema();
    const store = open(schema);
    await store.setup();
    const done = recording(store.agentRuns);
    const kept = recording(store.agentRuns);
    const once = (s: AgentRunStore, runId: string) => runAgent({
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'step', args: { n: 1 }, toolCallId: 'c0' }] }, { text: 'done' }] }),
      prompt: 'Once.', tools: { step }, maxSteps: 4, session: { store: s, runId, scope: 'tenant-a' },
    });
    expect((await once(done, 'gone-1')).status).toBe('completed');
    expect((await runAgent(waitingRun(kept, 'kept-1', 1))).status).toBe('suspended');
    const rows = async (runId: string) => Number((await env.sql<{ n: string }>(`
      SELECT (SELECT count(*) FROM "${schema}".cairn_run_messages WHERE run_id = $1)
        + (SELECT count(*) FROM "${schema}".cairn_run_receipts WHERE run_id = $1) AS n`, [runId]))[0]!.n);
    expect(await rows('gone-1')).toBeGreaterThan(0);
    const keptRows = await rows('kept-1');
    expect(await store.agentRuns.prune({ terminalBefore: Date.now() + 60_000 })).toBe(1);
    expect(await rows('gone-1')).toBe(0);
    expect(await rows('kept-1')).toBe(keptRows);
    expect(await store.agentRuns.load('gone-1')).toBeUndefined();
    expect(json(await store.agentRuns.load('kept-1'))).toEqual(kept.saved.at(-1));
    // The id is free again, and nothing of the pruned run comes back with it.
    const again = recording(store.agentRuns);
    expect((await once(again, 'gone-1')).status).toBe('completed');
    expect(json(await open(schema).agentRuns.load('gone-1'))).toEqual(again.saved.at(-1));
    expect(await store.agentRuns.prune({ terminalBefore: 0 })).toBe(0);
  });
});

/**
 * PostgreSQL ops migration 10: no index of cairn_runs reads a column a
 * running run's save changes, so PostgreSQL can write each save's new row
 * version on the same page with no index entry (a heap-only tuple). The
 * at-rest list and prune indexes read `rested_at` (the run's updated_at while
 * it is at rest, NULL while it runs) instead of `updated_at`.
 *
 * A schema of version 9 with runs at rest and running ones migrates: the
 * at-rest runs get their rested_at, list pages and prune answer as before,
 * and the runs go on saving.
 */
import { afterAll, expect, it } from 'vitest';
import { runAgent, type AgentRunStore, type AgentTool } from 'cairn/agent';
import { createPostgresOpsStore, MIGRATIONS, SCHEMA_VERSION, type PostgresOpsStore } from 'cairn/ops/postgres';
import { createMockModel } from 'cairn/testing';
import { describePostgres, type PostgresTestEnv } from './pg-env.js';
import { oldOpsSchema } from './pg-old-schema.js';
import { json, recording, waitingRun } from './recording-store.js';

const step: AgentTool = { parameters: { type: 'object' }, execute: (args: { n: number }) => ({ n: args.n, ok: true }) };

/** The columns a running run's save (running to running) may change: none of them may be read by an index. */
const CHANGED_BY_A_RUNNING_SAVE = [
  'revision', 'binding_id', 'updated_at', 'pending_approvals', 'pending_client_calls', 'head',
  'transcript_length', 'transcript_digest', 'receipts_digest', 'settled_step', 'rested_at',
];

/** A run of `steps` one-call tool steps and an answer. */
const loop = (store: AgentRunStore, runId: string, steps: number, scope = 'tenant-a') => runAgent({
  model: createMockModel({
    responses: [
      ...Array.from({ length: steps }, (_, n) => ({ toolCalls: [{ toolName: 'step', args: { n }, toolCallId: `c${n}` }] })),
      { text: 'done' },
    ],
  }),
  prompt: 'Loop.', tools: { step }, maxSteps: steps + 2, session: { store, runId, scope },
});

describePostgres('cairn/ops/postgres migration 10', (env: PostgresTestEnv) => {
  const opened: PostgresOpsStore[] = [];
  const open = (schema: string) => {
    const store = createPostgresOpsStore({ connectionString: env.url, poolOptions: { idleTimeoutMillis: 1_000 } }, { schema });
    opened.push(store);
    return store;
  };
  afterAll(async () => {
    for (const store of opened) await store.close();
  });

  /** What an index of `schema`.cairn_runs reads: its key columns and the columns of its predicate, by index name. */
  async function indexedColumns(schema: string): Promise<Map<string, string[]>> {
    const rows = await env.sql<{ index: string; columns: string[] | null; predicate: string | null }>(`
      SELECT (SELECT relname::text FROM pg_class WHERE oid = i.indexrelid) AS index,
        (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a
          WHERE a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)) AS columns,
        pg_get_expr(i.indpred, i.indrelid) AS predicate
      FROM pg_index i WHERE i.indrelid = '"${schema}".cairn_runs'::regclass`);
    const all = await env.sql<{ name: string }>(
      `SELECT attname::text AS name FROM pg_attribute WHERE attrelid = '"${schema}".cairn_runs'::regclass AND attnum > 0 AND NOT attisdropped`);
    const byIndex = new Map<string, string[]>();
    for (const row of rows) {
      // A predicate's columns, by name: every column of the table the predicate's text names.
      const inPredicate = row.predicate === null ? [] : all.map((c) => c.name).filter((name) => new RegExp(`\\b${name}\\b`).test(row.predicate!));
      byIndex.set(row.index, [...new Set([...(row.columns ?? []), ...inPredicate])].sort());
    }
    return byIndex;
  }

  it('leaves no column a running run\'s save changes in any index of cairn_runs', async () => {
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(10);
    const schema = env.newSchema();
    await open(schema).setup();
    const indexes = await indexedColumns(schema);
    expect([...indexes.keys()].sort()).toEqual([
      'cairn_runs_at_rest_by_scope', 'cairn_runs_at_rest_by_status', 'cairn_runs_at_rest_by_update', 'cairn_runs_pkey', 'cairn_runs_running',
    ]);
    for (const [index, columns] of indexes) {
      const changed = columns.filter((c) => CHANGED_BY_A_RUNNING_SAVE.includes(c) && c !== 'rested_at');
      expect(changed, `${index} reads ${columns.join(', ')}`).toEqual([]);
    }
    // rested_at is read by the at-rest indexes: a running save must leave it as it was (NULL), which the next case checks.
    expect(indexes.get('cairn_runs_at_rest_by_update')).toEqual(['rested_at', 'run_id', 'status']);
    expect(indexes.get('cairn_runs_running')).toEqual(['scope', 'status']);
  });

  it('a running run\'s saves leave rested_at NULL; a run at rest has rested_at = updated_at', async () => {
    // With the index check above, what PostgreSQL needs to write a running save as a heap-only tuple (the other
    // condition, room on the row's page, is the database's own; bench --wal prints the index records a step writes).
    const schema = env.newSchema();
    const store = open(schema);
    await store.setup();
    const seen: { status: string; rested: number | null; updated: number }[] = [];
    const watching: AgentRunStore = {
      load: (runId, options) => store.agentRuns.load(runId, options),
      async save(envelope, options) {
        await store.agentRuns.save(envelope, options);
        const [row] = await env.sql<{ status: string; rested: number | null; updated: number }>(
          `SELECT status, rested_at AS rested, updated_at AS updated FROM "${schema}".cairn_runs WHERE run_id = $1`, [envelope.runId]);
        seen.push(row!);
      },
    };
    expect((await runAgent(waitingRun(watching, 'wait-1', 3, step))).status).toBe('suspended');
    expect((await loop(watching, 'done-1', 3)).status).toBe('completed');
    expect(seen.filter((r) => r.status === 'running').length).toBeGreaterThan(6);
    expect(seen.map((r) => r.status).filter((s) => s !== 'running')).toEqual(['suspended', 'completed']);
    for (const row of seen) expect(row.rested).toBe(row.status === 'running' ? null : row.updated);
  });

  it('migrates a version 9 schema: rested_at filled for the runs at rest, list and prune as before, runs save on', async () => {
    const schema = await oldOpsSchema(env, 9);
    const old = open(schema);
    const runs = { done: recording(old.agentRuns), other: recording(old.agentRuns), waiting: recording(old.agentRuns) };
    expect((await loop(runs.done, 'done-1', 2)).status).toBe('completed');
    expect((await loop(runs.other, 'done-2', 1, 'tenant-b')).status).toBe('completed');
    expect((await runAgent(waitingRun(runs.waiting, 'wait-1', 1, step))).status).toBe('suspended');
    // A running run, left mid-run as a crash leaves it: its first save only.
    const running = recording(old.agentRuns);
    let saves = 0;
    const stopping: AgentRunStore = {
      load: (runId, options) => running.load(runId, options),
      async save(envelope, options) {
        if (saves++ === 2) throw new Error('the process stops here');
        await running.save(envelope, options);
      },
    };
    const stopped = await loop(stopping, 'run-1', 3).catch((error: unknown) => ({ status: String(error) }));
    expect(stopped.status).not.toBe('completed');
    // As version 9 left them: no rested_at anywhere.
    await env.sql(`UPDATE "${schema}".cairn_runs SET rested_at = NULL`);

    const store = open(schema);
    await store.setup();
    const versions = await env.sql<{ version: number }>(`SELECT version FROM "${schema}".cairn_ops_schema ORDER BY version`);
    expect(versions.map((v) => v.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
    const rows = await env.sql<{ run_id: string; status: string; rested: number | null; updated: number }>(
      `SELECT run_id, status, rested_at AS rested, updated_at AS updated FROM "${schema}".cairn_runs ORDER BY run_id`);
    expect(rows.map((r) => [r.run_id, r.status])).toEqual([['done-1', 'completed'], ['done-2', 'completed'], ['run-1', 'running'], ['wait-1', 'suspended']]);
    for (const row of rows) expect(row.rested).toBe(row.status === 'running' ? null : row.updated);

    // Every run loads as saved; list pages are in updated order, newest first, whatever their status.
    for (const [runId, saved] of [['done-1', runs.done], ['done-2', runs.other], ['wait-1', runs.waiting], ['run-1', running]] as const) {
      expect(json(await store.agentRuns.load(runId))).toEqual(saved.saved.at(-1));
    }
    const expected = [...rows].sort((a, b) => b.updated - a.updated || (a.run_id < b.run_id ? 1 : -1)).map((r) => r.run_id);
    const ids = (page: { runs: { runId: string }[] }) => page.runs.map((r) => r.runId);
    expect(ids(await store.agentRuns.list())).toEqual(expected);
    const paged: string[] = [];
    for (let cursor: string | undefined, i = 0; i < 10; i++) {
      const page = await store.agentRuns.list({ limit: 1, ...(cursor ? { cursor } : {}) });
      paged.push(...ids(page));
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    expect(paged).toEqual(expected);
    expect(ids(await store.agentRuns.list({ status: ['completed'] }))).toEqual(expected.filter((id) => id.startsWith('done')));
    expect(ids(await store.agentRuns.list({ scope: 'tenant-b' }))).toEqual(['done-2']);
    const newest = rows.find((r) => r.run_id === expected[0])!;
    expect(ids(await store.agentRuns.list({ updatedBefore: newest.updated }))).toEqual(expected.slice(1));
    expect(ids(await store.agentRuns.list({ updatedAfter: newest.updated }))).toEqual(expected.slice(0, 1));

    // The migrated runs save on: one that was at rest ends, and a prune takes exactly the ended ones.
    expect((await loop(recording(store.agentRuns), 'done-3', 1)).status).toBe('completed');
    expect(await store.agentRuns.prune({ terminalBefore: Date.now() + 60_000 })).toBe(3);
    expect((await store.agentRuns.list()).runs.map((r) => r.runId).sort()).toEqual(['run-1', 'wait-1']);
  });
});

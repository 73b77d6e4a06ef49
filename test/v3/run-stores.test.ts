/**
 * V3 runs on the durable V3 stores: the same run, crash and resume on an
 * SQLite file and on PostgreSQL as on the in-memory store. A step whose answer
 * was lost is reopened with its stored package (the sources are not asked
 * again, the request is the same); a working-memory patch whose receipt's
 * save failed is applied once; a process that opens the file later reads the
 * record back.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, type AgentRunStoreV3 } from 'cairn/agent';
import { createRagContextSource } from 'cairn/context';
import { createPostgresAgentRunStoreV3 } from 'cairn/ops/postgres';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel } from 'cairn/testing';
import { describePostgres } from '../stores/pg-env.js';
import { countingStoreV3 } from './run-helpers.js';

function scenarios(open: () => Promise<{ store: AgentRunStoreV3; reopen(): Promise<AgentRunStoreV3> }>) {
  it('reopens a step whose answer was lost with its stored package', async () => {
    const { store, reopen } = await open();
    const runs = countingStoreV3(store);
    const asked = { n: 0 };
    const context = { sources: [createRagContextSource({ retrieve: () => { asked.n++; return [{ text: 'Deploys need a green CI run.', index: 0 }]; } })] };
    const base = { checkpointVersion: 3 as const, prompt: 'How?', context };
    runs.failSave(2);
    const first = createMockModel({ responses: [{ text: 'lost' }] });
    expect((await runAgent({ ...base, session: { store: runs, runId: 'd1', scope: 's' }, model: first })).status).toBe('failed');
    // Another process opens the store and resumes.
    const later = await reopen();
    const second = createMockModel({ responses: [{ text: 'kept' }] });
    const result = await resumeAgent({ ...base, session: { store: later, runId: 'd1', scope: 's' }, model: second });
    expect(result.status).toBe('completed');
    expect(asked.n).toBe(1);
    expect(second.calls[0]!.messages).toEqual(first.calls[0]!.messages);
    const record = (await later.load('d1', { scope: 's' }))!;
    expect(record.version).toBe(3);
    expect(record.context!.steps).toHaveLength(1);
    expect((await later.getBlob(record.context!.steps[0]!.blob.digest)).status).toBe('found');
  });

  it('applies a working-memory patch once when its receipt\'s save failed', async () => {
    const { store, reopen } = await open();
    const runs = countingStoreV3(store);
    const model = () => createMockModel({
      strict: false,
      responses: [(request) => (request.messages.some((m) => m.role === 'tool')
        ? { text: 'noted' }
        : { toolCalls: [{ toolName: 'working_memory_add', args: { text: 'CI is green.' }, toolCallId: 'c1' }] })],
    });
    const base = { checkpointVersion: 3 as const, prompt: 'remember', workingMemory: { create: { scope: 's', now: 1 }, tools: true } };
    runs.failSave(3);
    expect((await runAgent({ ...base, session: { store: runs, runId: 'w1', scope: 's' }, model: model() })).status).toBe('failed');
    const later = await reopen();
    expect((await resumeAgent({ ...base, session: { store: later, runId: 'w1', scope: 's' }, model: model() })).status).toBe('completed');
    const record = (await later.load('w1', { scope: 's' }))!;
    expect(record.workingMemory).toMatchObject({ revision: 1, snapshot: { notes: [{ id: 'n1', text: 'CI is green.' }] } });
  });
}

describe('V3 runs on an SQLite file', () => {
  const dirs: string[] = [];
  const closers: Array<() => void> = [];
  afterAll(() => {
    for (const close of closers) close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  scenarios(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-v3-run-'));
    dirs.push(dir);
    const path = join(dir, 'ops.sqlite');
    const opened = () => {
      const ops = createSqliteOpsStore({ path });
      closers.push(() => ops.close());
      return createSqliteAgentRunStoreV3(ops);
    };
    return { store: opened(), reopen: async () => opened() };
  });
});

describePostgres('V3 runs on PostgreSQL', (env) => {
  const stores: Array<{ close(): Promise<void> }> = [];
  afterAll(async () => {
    for (const s of stores) await s.close();
  });
  scenarios(async () => {
    const schema = env.newSchema();
    const opened = async () => {
      const store = createPostgresAgentRunStoreV3({ connectionString: env.url }, { schema });
      stores.push(store);
      await store.setup();
      return store;
    };
    return { store: await opened(), reopen: opened };
  });
});

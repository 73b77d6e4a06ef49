/**
 * Which save wrote each part of a stored run: the SQLite and PostgreSQL stores
 * keep the revision of each transcript and receipt row, `load(runId, { saves:
 * true })` reads it back, describeRun puts it on the step history, and a plain
 * load stays exactly the envelope saved.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, type AgentRunEnvelope, type AgentRunStore } from 'cairn/agent';
import { describeRun } from 'cairn/machines';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createPostgresOpsStore, type PostgresOpsStore } from 'cairn/ops/postgres';
import { createMockModel } from 'cairn/testing';
import { describePostgres } from './pg-env.js';
import { recordingStore as recording } from '../support/recording-store.js';

const echo = { parameters: { type: 'object' }, execute: (args: unknown) => ({ echoed: args }) };

/** The oracle: the first save whose transcript holds message i, and the last save that changed each receipt. */
function expectedSaves(saved: AgentRunEnvelope[]) {
  const messages: number[] = [];
  const receipts: Record<string, number> = {};
  const last: Record<string, string> = {};
  for (const envelope of saved) {
    const transcript = (envelope.snapshot as { context: { messages: unknown[] } }).context.messages;
    while (messages.length < transcript.length) messages.push(envelope.revision);
    for (const [key, receipt] of Object.entries(envelope.receipts)) {
      const json = JSON.stringify(receipt);
      if (last[key] !== json) receipts[key] = envelope.revision;
      last[key] = json;
    }
  }
  return { messages, receipts };
}

async function twoStepRun(store: AgentRunStore, runId: string) {
  const recorder = recording(store);
  const result = await runAgent({
    model: createMockModel({
      responses: [
        { toolCalls: [{ toolCallId: 'a', toolName: 'echo', args: { n: 1 } }] },
        { toolCalls: [{ toolCallId: 'b', toolName: 'echo', args: { n: 2 } }] },
        { text: 'Done.' },
      ],
    }),
    prompt: 'Echo twice.',
    tools: { echo },
    session: { store: recorder.store, runId, scope: 's' },
  });
  expect(result.status).toBe('completed');
  return recorder.saved;
}

function checks(open: () => Promise<AgentRunStore>, tamper: (runId: string) => Promise<void>) {
  it('reads back which save wrote each row, and describeRun shows it on the step history', async () => {
    const store = await open();
    const saved = await twoStepRun(store, 'r1');
    const want = expectedSaves(saved);
    const plain = await store.load('r1');
    expect(plain).toEqual(saved.at(-1));
    expect(plain).not.toHaveProperty('saves');
    const withSaves = (await store.load('r1', { saves: true }))!;
    expect(withSaves.saves).toEqual(want);
    // Otherwise the same envelope (toEqual reads an undefined property as absent).
    expect({ ...withSaves, saves: undefined }).toEqual(saved.at(-1));
    const steps = describeRun(withSaves).steps;
    // Message 1 is the first turn, 2 its call's result, 3 the second turn, 4 its result (message 0 is the prompt).
    expect(steps.map((s) => s.savedAt)).toEqual([want.messages[1], want.messages[3], want.messages[5]]);
    expect(steps[0]!.calls[0]).toMatchObject({ toolCallId: 'a', resultSavedAt: want.messages[2], receiptSavedAt: want.receipts[Object.keys(want.receipts)[0]!] });
    // A turn is saved before its call's result, and the result no later than the receipt's last write.
    expect(steps[0]!.savedAt!).toBeLessThan(steps[0]!.calls[0]!.resultSavedAt!);
    // Without `saves`, the history says nothing about revisions.
    expect(describeRun(plain!).steps.map((s) => s.savedAt)).toEqual([null, null, null]);
  });

  it('an approval that opens and closes rewrites no row: each save writes only what it added', async () => {
    const store = await open();
    const recorder = recording(store);
    const options = {
      prompt: 'Look up, then pay.',
      tools: { echo, pay: { ...echo, needsApproval: true } },
      session: { store: recorder.store, runId: 'r3', scope: 's' },
    };
    const first = await runAgent({
      ...options,
      model: createMockModel({
        responses: [
          { toolCalls: [{ toolCallId: 'a', toolName: 'echo', args: { n: 1 } }] },
          { toolCalls: [{ toolCallId: 'p', toolName: 'pay', args: { cents: 5 } }] },
        ],
      }),
    });
    if (first.status !== 'suspended') throw new Error(`expected a suspended run, got ${first.status}`);
    // The suspension moves the envelope to version 2 and the completed call back to version 1.
    expect(recorder.saved.map((e) => e.version)).toContain(2);
    const [pending] = first.pendingApprovals;
    const done = await resumeAgent({
      ...options,
      model: createMockModel({ responses: [{ text: 'Paid.' }] }),
      approvalResponses: [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }],
    });
    expect(done.status).toBe('completed');
    expect(recorder.saved.at(-1)!.version).toBe(1);
    // Were a save to rewrite the transcript or the settled receipts, their rows would carry its revision.
    const want = expectedSaves(recorder.saved);
    expect((await store.load('r3', { saves: true }))!.saves).toEqual(want);
    expect(want.messages[1]).toBeLessThan(recorder.saved.find((e) => e.version === 2)!.revision);
  });

  it('reads rows written before the column existed as unknown', async () => {
    const store = await open();
    await twoStepRun(store, 'r2');
    await tamper('r2');
    const loaded = (await store.load('r2', { saves: true }))!;
    expect(loaded.saves!.messages[0]).toBeNull();
    expect(loaded.saves!.messages.slice(1).every((r) => typeof r === 'number')).toBe(true);
  });
}

describe('sqlite', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  let file = '';
  checks(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-saves-'));
    dirs.push(dir);
    file = join(dir, 'ops.sqlite');
    return createSqliteOpsStore({ path: file }).agentRuns;
  }, async (runId) => {
    const db = new Database(file);
    db.prepare('UPDATE cairn_run_messages SET revision = NULL WHERE run_id = ? AND idx = 0').run(runId);
    db.close();
  });
});

describePostgres('postgres', (env) => {
  const opened: PostgresOpsStore[] = [];
  afterEach(async () => {
    for (const ops of opened.splice(0)) await ops.close();
  });
  let schema = '';
  checks(async () => {
    schema = env.newSchema();
    const ops = createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 2 } }, { schema });
    opened.push(ops);
    await ops.setup();
    return ops.agentRuns;
  }, async (runId) => {
    await env.sql(`UPDATE "${schema}".cairn_run_messages SET revision = NULL WHERE run_id = $1 AND idx = 0`, [runId]);
  });
});

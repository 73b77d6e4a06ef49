/**
 * The SQLite load reads each table's rows of a run as one row (run-statements.ts, joinedReads): their ids, their
 * lengths and their bodies one after the other, cut back into rows. It must read what the row-by-row read (still
 * used for `load(runId, { saves: true })` and whenever the joined row does not fit) reads, and refuse what it
 * refuses.
 */
import { describe, expect, it } from 'vitest';
import { runAgent, type AgentTool } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { json, recording, waitingRun } from './recording-store.js';
import { sqliteScratch } from './sqlite-scratch.js';

const { file, open, raw } = sqliteScratch('cairn-sqlite-joined-');

// Results of different sizes, a string with a multi-byte character and an empty object: the cut must fall on each row's own bytes.
const step: AgentTool = {
  parameters: { type: 'object' },
  execute: (args: { n: number }) => ({ ok: true, n: args.n, text: 'é'.repeat(args.n * 7), empty: {} }),
};

async function seeded(steps = 6) {
  const path = file('ops.sqlite');
  const store = recording(open(path).agentRuns);
  const first = await runAgent(waitingRun(store, 'run-a', steps, step));
  expect(first.status).toBe('suspended');
  return { path, saved: store.saved.at(-1)! };
}

describe('the joined load', () => {
  it('reads the envelope the last save was handed, as the row-by-row read does', async () => {
    const { path, saved } = await seeded();
    const loaded = await open(path).agentRuns.load('run-a');
    expect(json(loaded)).toEqual(saved);
    // With the rows' revisions asked for, the rows are read one by one: the same record beside them.
    const { saves, ...rest } = (await open(path).agentRuns.load('run-a', { saves: true }))!;
    expect(saves?.messages).toHaveLength((saved.snapshot as { context: { messages: unknown[] } }).context.messages.length);
    expect(json(rest)).toEqual(json(loaded));
  });

  it('refuses a row in the run\'s range filed under another run id, a changed body and a lost message row', async () => {
    const { path, saved } = await seeded();
    const db = raw(path);
    for (const table of ['cairn_run_messages', 'cairn_run_receipts']) {
      const key = db.prepare(`SELECT min(row_key) FROM ${table} WHERE run_id = 'run-a'`).safeIntegers().pluck().get() as bigint;
      db.prepare(`UPDATE ${table} SET run_id = 'run-z' WHERE row_key = ?`).run(key);
      await expect(open(path).agentRuns.load('run-a')).rejects.toMatchObject({ code: 'record_corrupt' });
      db.prepare(`UPDATE ${table} SET run_id = 'run-a' WHERE row_key = ?`).run(key);
      // One byte of a body changed (its length kept): the digests tell.
      const body = db.prepare(`SELECT body FROM ${table} WHERE row_key = ?`).pluck().get(key) as Buffer;
      const changed = Buffer.from(body);
      changed[changed.length - 1]! ^= 1;
      db.prepare(`UPDATE ${table} SET body = ? WHERE row_key = ?`).run(changed, key);
      await expect(open(path).agentRuns.load('run-a')).rejects.toMatchObject({ code: 'record_corrupt' });
      db.prepare(`UPDATE ${table} SET body = ? WHERE row_key = ?`).run(body, key);
      expect(json(await open(path).agentRuns.load('run-a'))).toEqual(saved);
    }
    const lost = db.prepare("SELECT * FROM cairn_run_messages WHERE run_id = 'run-a' AND idx = 3").get() as Record<string, unknown>;
    db.prepare("DELETE FROM cairn_run_messages WHERE run_id = 'run-a' AND idx = 3").run();
    await expect(open(path).agentRuns.load('run-a')).rejects.toMatchObject({ code: 'record_corrupt' });
    const columns = Object.keys(lost);
    db.prepare(`INSERT INTO cairn_run_messages (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`).run(...Object.values(lost));
    expect(json(await open(path).agentRuns.load('run-a'))).toEqual(saved);
  });

  it('reads a body put there as text row by row, where it is no bytes, and refuses it', async () => {
    const { path } = await seeded();
    const db = raw(path);
    for (const table of ['cairn_run_messages', 'cairn_run_receipts']) {
      const key = db.prepare(`SELECT max(row_key) FROM ${table} WHERE run_id = 'run-a'`).safeIntegers().pluck().get() as bigint;
      const body = db.prepare(`SELECT body FROM ${table} WHERE row_key = ?`).pluck().get(key) as Buffer;
      db.prepare(`UPDATE ${table} SET body = CAST(? AS TEXT) WHERE row_key = ?`).run(body, key);
      expect(db.prepare(`SELECT typeof(body) FROM ${table} WHERE row_key = ?`).pluck().get(key)).toBe('text');
      await expect(open(path).agentRuns.load('run-a')).rejects.toMatchObject({ code: 'record_corrupt' });
      db.prepare(`UPDATE ${table} SET body = ? WHERE row_key = ?`).run(body, key);
    }
  });

  it('reads a run with no receipt rows and one with a long history', async () => {
    const path = file('ops.sqlite');
    const store = recording(open(path).agentRuns);
    const text = await runAgent({ ...waitingRun(store, 'run-t', 0, step), tools: {}, model: createMockModel({ responses: [{ text: 'hi' }] }) });
    expect(text.status).toBe('completed');
    expect(json(await open(path).agentRuns.load('run-t'))).toEqual(store.saved.at(-1));
    const long = recording(open(path).agentRuns);
    expect((await runAgent(waitingRun(long, 'run-l', 40, step))).status).toBe('suspended');
    expect(json(await open(path).agentRuns.load('run-l'))).toEqual(long.saved.at(-1));
  });
});

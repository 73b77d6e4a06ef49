/**
 * Record format 4: an open call's receipt that the head holds (in the call's
 * snapshot) is not written a second time as a receipt row. The `executing`
 * receipt written ahead of a tool's effect is then durable in the head alone:
 * a store reading the file while the tool runs finds it, a copy of the file
 * taken at that moment resumes to `tool-reconciliation-required` without
 * running the tool, and the receipt becomes a row once its step is
 * checkpointed. A head whose layout points at a receipt that is not there is
 * refused as `record_corrupt`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, type AgentOptions, type AgentRunStore, type ResumeOptions } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel, type MockResponse } from 'cairn/testing';
import { decodePart, encodePart, RECORD_FORMAT } from '../../src/stores/codec.js';
import { receiptOf } from './old-parts.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-open-receipts-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const turns: MockResponse[] = [
  { toolCalls: [{ toolName: 'charge', args: { cents: 100 }, toolCallId: 'c1' }] },
  { text: 'Charged.' },
];

function options(store: AgentRunStore, execute: () => unknown): AgentOptions {
  return {
    model: createMockModel({ responses: [...turns] }),
    prompt: 'Charge the card.',
    session: { store, runId: 'pay-1', scope: 'tenant-a' },
    tools: { charge: { parameters: { type: 'object' }, execute } },
  };
}

const receiptRows = (db: Database.Database) =>
  db.prepare('SELECT receipt_key AS key, body FROM cairn_run_receipts WHERE run_id = ?').all('pay-1') as { key: string; body: Buffer }[];

describe('record format 4: open receipts in the head', () => {
  it('keeps the executing receipt in the head alone while the tool runs, and writes it as a row once the step is checkpointed', async () => {
    const path = join(dir, 'runs.sqlite');
    const ops = createSqliteOpsStore({ path });
    const reader = new Database(path, { readonly: true });
    let during: { rows: string[]; status: unknown; format: number } | undefined;
    const result = await runAgent(options(ops.agentRuns, async () => {
      // Another store object on the same file, so nothing is remembered from the saves: only what is committed.
      const other = createSqliteOpsStore({ path });
      const loaded = await other.agentRuns.load('pay-1');
      other.close();
      const head = reader.prepare('SELECT head FROM cairn_runs WHERE run_id = ?').pluck().get('pay-1') as Buffer;
      during = { rows: receiptRows(reader).map((r) => r.key), status: loaded?.receipts['0:c1']?.status, format: head[3]! };
      return { ok: true };
    }));
    expect(result.status).toBe('completed');
    expect(during).toEqual({ rows: [], status: 'executing', format: RECORD_FORMAT });
    const rows = receiptRows(reader);
    expect(rows.map((r) => r.key)).toEqual(['0:c1']);
    expect(receiptOf<{ status: string }>(rows[0]!.body).status).toBe('completed');
    reader.close();
    ops.close();
  });

  it('resumes a copy of the file taken while the tool ran to tool-reconciliation-required, without running the tool', async () => {
    const path = join(dir, 'runs.sqlite');
    const copy = join(dir, 'copy.sqlite');
    const ops = createSqliteOpsStore({ path });
    const effects: string[] = [];
    const first = await runAgent(options(ops.agentRuns, () => {
      // A consistent copy of the file as it is while the effect runs: the crash that leaves a receipt and no result.
      const db = new Database(path, { readonly: true });
      db.exec(`VACUUM INTO '${copy.replaceAll("'", "''")}'`);
      db.close();
      effects.push('charged');
      return { ok: true };
    }));
    expect(first.status).toBe('completed');
    ops.close();

    const crashed = createSqliteOpsStore({ path: copy });
    const again = (extra: Partial<ResumeOptions>) => resumeAgent({
      ...options(crashed.agentRuns, () => {
        effects.push('charged again');
        return { ok: true };
      }),
      model: createMockModel({ responses: [{ text: 'Charged.' }] }),
      ...extra,
    } as ResumeOptions);
    const resumed = await again({});
    expect(effects).toEqual(['charged']);
    if (resumed.status !== 'stopped') throw new Error(`the resume ended ${resumed.status}`);
    expect(resumed.reason).toBe('tool-reconciliation-required');
    expect(resumed.unknownEffects?.map((r) => r.toolCallId)).toEqual(['c1']);
    // The operator asks for it to run once more: it does, once, and its receipt becomes a row.
    const retried = await again({ retryToolCallIds: ['c1'] });
    expect(retried.status).toBe('completed');
    expect(effects).toEqual(['charged', 'charged again']);
    crashed.close();
    const db = new Database(copy, { readonly: true });
    expect(receiptRows(db).map((r) => r.key)).toEqual(['0:c1']);
    db.close();
  });

  it('refuses a head whose layout names an open receipt that is not where it says', async () => {
    const path = join(dir, 'runs.sqlite');
    const copy = join(dir, 'copy.sqlite');
    const ops = createSqliteOpsStore({ path });
    await runAgent(options(ops.agentRuns, () => {
      const db = new Database(path, { readonly: true });
      db.exec(`VACUUM INTO '${copy.replaceAll("'", "''")}'`);
      db.close();
      return { ok: true };
    }));
    ops.close();
    const db = new Database(copy);
    const head = db.prepare('SELECT head FROM cairn_runs WHERE run_id = ?').pluck().get('pay-1') as Buffer;
    const value = decodePart<{ layout: { inHead?: [string, string, string][] } }>('pay-1', head);
    expect(value.layout.inHead?.map(([key, where]) => [key, where])).toEqual([['0:c1', 'child']]);
    // The layout now points at a call the snapshot does not hold. The head is framed again (its checksum made anew),
    // so only the join can tell.
    value.layout.inHead = [['0:c1', 'child', 'call-9-9']];
    db.prepare('UPDATE cairn_runs SET head = ? WHERE run_id = ?').run(encodePart(value), 'pay-1');
    db.close();
    const reopened = createSqliteOpsStore({ path: copy });
    await expect(reopened.agentRuns.load('pay-1')).rejects.toMatchObject({ code: 'record_corrupt' });
    reopened.close();
  });
});

/**
 * Record format 5: a receipt part holds a `modelOutput` equal to its
 * `rawResult` once (src/stores/receipt-part.ts). Read back, the receipt is
 * the one saved, keys in their order; a receipt whose output differs, or is
 * no plain data, is written whole; and a whole receipt of an older part
 * still reads as it is.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent, type AgentTool } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { decodeFramed, encodePart } from '../../src/stores/codec.js';
import { receiptFromPart, receiptPartValue, SHARED_OUTPUT_FORMAT } from '../../src/stores/receipt-part.js';

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-receipt-part-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const read = (value: unknown) => receiptFromPart(SHARED_OUTPUT_FORMAT, decodeFramed('r', encodePart(value)).value);

describe('a receipt part', () => {
  const receipt = {
    key: '0:c0', toolCallId: 'c0', status: 'completed', rawResult: { ok: true, pad: 'x'.repeat(50), list: [1, 'a', null] },
    modelOutput: { ok: true, pad: 'x'.repeat(50), list: [1, 'a', null] }, after: 1,
  };

  it('holds an output equal to the raw result once, and reads back as the receipt, keys in their order', () => {
    expect(encodePart(receiptPartValue(receipt)).length).toBeLessThan(encodePart(receipt).length - 50);
    expect(JSON.stringify(read(receiptPartValue(receipt)))).toBe(JSON.stringify(receipt));
    const last = { key: '0:c0', rawResult: { a: 1 }, modelOutput: { a: 1 } };
    expect(JSON.stringify(read(receiptPartValue(last)))).toBe(JSON.stringify(last));
    const first = { modelOutput: { a: 1 }, key: '0:c0', rawResult: { a: 1 } };
    expect(JSON.stringify(read(receiptPartValue(first)))).toBe(JSON.stringify(first));
    const shared = { key: '0:c0', rawResult: receipt.rawResult, modelOutput: receipt.rawResult };
    expect(JSON.stringify(read(receiptPartValue(shared)))).toBe(JSON.stringify(shared));
  });

  it('holds a receipt whole when its output differs or is no plain data', () => {
    const cases = [
      { ...receipt, modelOutput: { ok: true } },
      { ...receipt, modelOutput: { list: [1, 'a', null], ok: true, pad: 'x'.repeat(50) } },
      { key: '0:c0', rawResult: 'text', modelOutput: 'text' },
      { key: '0:c0', rawResult: { at: Buffer.from('x') }, modelOutput: { at: Buffer.from('x') } },
      { key: '0:c0', rawResult: { n: NaN }, modelOutput: { n: NaN } },
      { key: '0:c0', rawResult: { ok: true } },
    ];
    for (const value of cases) expect(receiptPartValue(value)).toBe(value);
  });

  it('reads a part of an older format, or a pair that is no receipt, as it is', () => {
    const pair = [{ key: '0:c0', rawResult: 1 }, 1];
    expect(receiptFromPart(4, pair)).toBe(pair);
    for (const value of [[{ key: '0:c0' }, 0], [{ key: '0:c0', rawResult: 1 }, 5], [{ key: '0:c0', rawResult: 1 }, 'x'], [1, 2, 3]]) {
      expect(receiptFromPart(SHARED_OUTPUT_FORMAT, value)).toBe(value);
    }
  });

  it('makes a stored step smaller, and a load is the envelope saved', async () => {
    const path = join(dir, 'ops.sqlite');
    const ops = createSqliteOpsStore({ path });
    const step: AgentTool = { parameters: { type: 'object' }, execute: (args: { n: number }) => ({ ok: true, n: args.n, pad: 'y'.repeat(200) }) };
    const turns = Array.from({ length: 3 }, (_, n) => ({ toolCalls: [{ toolName: 'step', args: { n }, toolCallId: `c${n}` }] }));
    const saved: string[] = [];
    const store = {
      load: ops.agentRuns.load.bind(ops.agentRuns),
      async save(...args: Parameters<typeof ops.agentRuns.save>) {
        await ops.agentRuns.save(...args);
        saved.push(JSON.stringify(args[0]));
      },
    };
    const result = await runAgent({
      model: createMockModel({ responses: [...turns, { text: 'done' }] }), prompt: 'Work.', tools: { step }, maxSteps: 6,
      session: { store, runId: 'parts', scope: 'tenant-a' },
    });
    expect(result.status).toBe('completed');
    const reader = createSqliteOpsStore({ path });
    expect(JSON.stringify(await reader.agentRuns.load('parts'))).toBe(saved.at(-1));
    reader.close();
    ops.close();
    const db = new Database(path, { readonly: true });
    const bodies = db.prepare('SELECT body FROM cairn_run_receipts').pluck().all() as Buffer[];
    db.close();
    expect(bodies).toHaveLength(3);
    for (const body of bodies) {
      const value = decodeFramed<unknown>('parts', body).value;
      expect(Array.isArray(value)).toBe(true);
      expect(body.length).toBeLessThan(encodePart(receiptFromPart(SHARED_OUTPUT_FORMAT, value)).length - 200);
    }
  });
});

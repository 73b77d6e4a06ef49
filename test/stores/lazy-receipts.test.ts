/**
 * An engine envelope's `receipts` record holds every receipt of the run, so
 * it is built when first read, not when the envelope is: a row store saving
 * it takes the receipt parts from the engine's lists and never builds it (a
 * save then costs what the step added, not the run's history). Read, spread,
 * serialized or replaced, it behaves as a plain property.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runAgent, type AgentRunEnvelope, type AgentRunStore, type AgentToolReceipt } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel } from 'cairn/testing';
import { unbuiltReceiptsOf } from '../../src/agent/envelope.js';
import { toRecord } from '../../src/stores/record.js';
import { recordingStore } from '../support/recording-store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A three-step tool loop; `inner` keeps what it is given, and every envelope saved is kept in order. */
async function loop(inner: AgentRunStore) {
  // The very objects the engine handed over: what the test is about.
  const { store, saved } = recordingStore(inner, 'same');
  let n = 0;
  const result = await runAgent({
    model: createMockModel({ strict: false, responses: [() => (n < 3 ? { toolCalls: [{ toolName: 'step', args: { n }, toolCallId: `c${n++}` }] } : { text: 'done' })] }),
    prompt: 'Loop.',
    session: { store, runId: 'lazy', scope: 'tests' },
    tools: { step: { parameters: { type: 'object' }, execute: (args: { n: number }) => ({ ok: args.n }) } },
  });
  expect(result.status).toBe('completed');
  return saved;
}

/** The record as it must read: the run's ended receipts, then the open calls', by key. */
function expected(envelope: AgentRunEnvelope): Record<string, AgentToolReceipt> {
  const lists = unbuiltReceiptsOf(envelope)!;
  const out: Record<string, AgentToolReceipt> = {};
  for (const receipt of [...lists.ended, ...lists.open]) out[receipt.key] = receipt;
  return out;
}

describe('an engine envelope builds its receipts record when first read', () => {
  it('a SQLite save never builds it, and what it reads back is the record the envelope builds', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-lazy-'));
    dirs.push(dir);
    const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
    try {
      const saved = await loop(ops.agentRuns);
      expect(saved.length).toBeGreaterThan(4);
      // Every save went through without reading `receipts`.
      for (const envelope of saved) expect(unbuiltReceiptsOf(envelope)).toBeDefined();
      const last = saved[saved.length - 1]!;
      const want = expected(last);
      expect(Object.keys(want)).toHaveLength(3);
      expect(last.receipts).toEqual(want);
      // Once read, the record is the truth: no lists are kept for it.
      expect(unbuiltReceiptsOf(last)).toBeUndefined();
      expect(last.receipts).toBe(last.receipts);
      const loaded = await ops.agentRuns.load('lazy');
      expect(loaded).toEqual(JSON.parse(JSON.stringify(last)));
    } finally {
      ops.close();
    }
  });

  it('reads, spreads and serializes as a plain property, in its place among the keys', async () => {
    const saved = await loop({ load: async () => undefined, save: async () => undefined });
    const envelope = saved[saved.length - 1]!;
    const keys = Object.keys(envelope);
    const want = expected(envelope);
    const json = JSON.parse(JSON.stringify(envelope)) as AgentRunEnvelope;
    expect(Object.keys(json)).toEqual(keys);
    expect(json.receipts).toEqual(JSON.parse(JSON.stringify(want)));
    expect(unbuiltReceiptsOf(envelope)).toBeUndefined();
    const other = saved[saved.length - 2]!;
    const otherKeys = Object.keys(other);
    // A copy made with the envelope's property descriptors is still unbuilt, and builds the same record.
    const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(other)) as AgentRunEnvelope;
    expect(unbuiltReceiptsOf(copy)).toBe(unbuiltReceiptsOf(other));
    expect(copy.receipts).toEqual(expected(other));
    const spread = { ...other };
    expect(Object.getOwnPropertyDescriptor(spread, 'receipts')).toMatchObject({ writable: true, enumerable: true });
    expect(spread.receipts).toBe(other.receipts);
    expect(Object.keys(other)).toEqual(otherKeys);
    expect(otherKeys.indexOf('receipts')).toBe(keys.indexOf('receipts'));
  });

  it('an envelope whose snapshot no longer holds the lists it was built from is split from its record', async () => {
    const saved = await loop({ load: async () => undefined, save: async () => undefined });
    const envelope = saved[saved.length - 1]!;
    const want = expected(envelope);
    // The snapshot's ended receipts replaced by an equal list: the lists no longer say what the record holds.
    const context = (envelope.snapshot as unknown as { context: { receipts: AgentToolReceipt[] } }).context;
    context.receipts = [...context.receipts];
    expect(toRecord(envelope).receipts).toEqual(Object.values(want));
  });

  it('a record assigned, or changed once read, is what a store saves', async () => {
    const saved = await loop({ load: async () => undefined, save: async () => undefined });
    const [a, b] = saved.slice(-2) as [AgentRunEnvelope, AgentRunEnvelope];
    // Replaced before anyone read it: the lists are dropped and the record given is split.
    a.receipts = {};
    expect(unbuiltReceiptsOf(a)).toBeUndefined();
    expect(a.receipts).toEqual({});
    expect(toRecord(a).receipts).toEqual([]);
    // Read, then given one more receipt: the split has it.
    const extra: AgentToolReceipt = { key: '9:x', toolCallId: 'x', toolName: 'step', modelStep: 9, status: 'completed', idempotent: false };
    b.receipts[extra.key] = extra;
    expect(toRecord(b).receipts.map((r) => (r as AgentToolReceipt).key)).toContain('9:x');
  });
});

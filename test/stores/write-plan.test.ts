/**
 * The shared write planner and the record: two saves of a growing run write
 * only what the second added, and a record joined back from its plan is the
 * envelope it came from, for both snapshot shapes (receipts only in
 * `envelope.receipts`, and the run's ended receipts in its context with an
 * open call's in its child).
 */
import { describe, expect, it } from 'vitest';
import type { AgentRunEnvelope, AgentToolReceipt } from '../../src/agent/types.js';
import { decodePart, encodePart, RECORD_FORMAT, sha256 } from '../../src/stores/codec.js';
import { digestOf } from '../../src/stores/digest.js';
import { receiptCountOf, receiptOf, unbuiltReceiptsOf } from '../../src/agent/envelope.js';
import { loadRecord, planSave, readIndex, readRecord, type SavePlan, type StoredState } from '../../src/stores/write-plan.js';

const receipt = (modelStep: number, id: string, status: AgentToolReceipt['status'] = 'completed'): AgentToolReceipt => ({
  key: `${modelStep}:${id}`, toolCallId: id, toolName: 'lookup', modelStep, status, idempotent: false,
  ...(status === 'completed' ? { rawResult: { step: modelStep, text: 'x'.repeat(200) } } : {}),
});

/** A run at `steps` steps: two messages and one ended receipt per step, and an open call at the last. */
function run(steps: number, shape: 'flat' | 'context', revision = steps): AgentRunEnvelope {
  const messages: unknown[] = [{ role: 'user', content: 'go' }];
  const ended: Record<string, AgentToolReceipt> = {};
  for (let s = 0; s < steps; s++) {
    messages.push({ role: 'assistant', content: '', toolCalls: [{ toolCallId: `c${s}`, toolName: 'lookup', args: { s } }] });
    messages.push({ role: 'tool', toolCallId: `c${s}`, toolName: 'lookup', content: `result ${s}` });
    ended[`${s}:c${s}`] = receipt(s, `c${s}`);
  }
  const open = receipt(steps, `c${steps}`, 'executing');
  const context: Record<string, unknown> = { messages, step: steps + 1 };
  if (shape === 'context') context.receipts = ended;
  return {
    kind: 'cairn-agent-run', version: 2, runId: 'r', scope: 's', revision, bindingId: null,
    binding: { bindingId: null, model: 'm', tools: 't', output: null, limits: 'l' },
    machine: { id: 'run', version: 2 },
    snapshot: {
      status: 'active', value: 'loop', context,
      children: { [`call-${steps}`]: { src: 'toolCall', snapshot: { status: 'active', value: 'executing', context: { receipt: open } } } },
    } as never,
    receipts: { ...structuredClone(ended), [open.key]: structuredClone(open) },
    approvalRequestCounts: {}, approvals: {}, status: 'running', pendingApprovals: [], pendingClientCalls: [],
    createdAt: 1, updatedAt: revision,
  };
}

/** The rows a store holds after writing `plans` in order. */
function rowsAfter(plans: SavePlan[]) {
  const messages = new Map<number, Uint8Array>();
  const receipts = new Map<string, Uint8Array>();
  for (const plan of plans) {
    if (plan.trimMessagesFrom !== null) for (const i of [...messages.keys()]) if (i >= plan.trimMessagesFrom) messages.delete(i);
    for (const m of plan.messages) messages.set(m.index, m.bytes);
    if (plan.replaceReceipts) receipts.clear();
    for (const key of plan.deleteReceipts) receipts.delete(key);
    for (const r of plan.receipts) receipts.set(r.key, r.bytes);
  }
  const last = plans.at(-1)!;
  return {
    head: last.head,
    messages: [...messages].sort(([a], [b]) => a - b).map(([index, bytes]) => ({ index, bytes })),
    receipts: [...receipts].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, bytes]) => ({ key, bytes })),
    transcriptDigest: last.next.transcriptDigest,
    receiptsDigest: last.next.receiptsDigest,
  };
}

const json = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

describe.each(['flat', 'context'] as const)('the planner, snapshot shape %s', (shape) => {
  it('joins a plan back into the envelope it came from', () => {
    for (const steps of [0, 1, 5]) {
      const envelope = run(steps, shape);
      const loaded = loadRecord('r', rowsAfter([planSave(envelope, undefined)]));
      expect(loaded).toStrictEqual(json(envelope));
    }
  });

  it('writes, on the second save of a growing run, only the new messages and receipts', () => {
    const first = planSave(run(30, shape, 1), undefined);
    const grown = run(31, shape, 2);
    const second = planSave(grown, first.next);
    expect(second.trimMessagesFrom).toBeNull();
    expect(second.replaceReceipts).toBe(false);
    expect(second.messages.map((m) => m.index)).toEqual([61, 62]);
    // Step 30's call ended (executing -> completed) and step 31's opened; nothing older is encoded again.
    expect(second.receipts.map((r) => r.key).sort()).toEqual(['30:c30', '31:c31']);
    expect(second.bytes).toBeLessThan(first.bytes / 5);
    const rows = rowsAfter([first, second]);
    expect(loadRecord('r', rows)).toStrictEqual(json(grown));
    // The digests the plan kept are those of the rows, computed from nothing.
    expect(rows.transcriptDigest).toEqual(digestOf(rows.messages.map((m) => [m.index, sha256(m.bytes)] as const)));
    expect(rows.receiptsDigest).toEqual(digestOf(rows.receipts.map((r) => [r.key, sha256(r.bytes)] as const)));
  });

  it('stores each receipt once, as a part: the head holds no ended receipt', () => {
    const plan = planSave(run(3, shape), undefined);
    const head = JSON.stringify(decodePart('r', plan.head));
    for (const key of ['0:c0', '1:c1', '2:c2']) expect(head).not.toContain(`"${key}"`);
    expect(plan.receipts.map((r) => r.key).sort()).toEqual(['0:c0', '1:c1', '2:c2', '3:c3']);
  });

  it('appends across envelope versions 1 and 2, rewrites on a machine migration, and reads the lineage older heads wrote', () => {
    const first = planSave(run(30, shape, 1), undefined);
    const grown = { ...run(31, shape, 2), version: 1 as const };
    const appended = planSave(grown, first.next);
    expect(appended.messages.map((m) => m.index)).toEqual([61, 62]);
    expect(appended.trimMessagesFrom).toBeNull();
    // A head written when the lineage still began with the envelope version ("2/run@2").
    const older = { ...first.next, index: { ...first.next.index!, lineage: `2/${first.next.index!.lineage}` } };
    expect(planSave(grown, older).messages.map((m) => m.index)).toEqual([61, 62]);
    const migrated = planSave({ ...run(31, shape, 2), machine: { id: 'run', version: 3 } }, first.next);
    expect(migrated.trimMessagesFrom).toBe(0);
    expect(migrated.messages).toHaveLength(63);
    expect(migrated.replaceReceipts).toBe(true);
  });

  it('rewrites the transcript and receipts when a save does not extend what is stored', () => {
    const first = planSave(run(4, shape, 1), undefined);
    const shorter = run(2, shape, 2);
    const second = planSave(shorter, first.next);
    expect(second.trimMessagesFrom).toBe(0);
    expect(second.replaceReceipts).toBe(true);
    expect(loadRecord('r', rowsAfter([first, second]))).toStrictEqual(json(shorter));
  });
});

it('reads a record of format 1 (the first layout) and plans its next save as a rewrite', () => {
  const envelope = run(2, 'flat');
  const messages = (envelope.snapshot as { context: { messages: unknown[] } }).context.messages;
  const head = { ...envelope, snapshot: { ...(envelope.snapshot as object), context: { messages: { $transcript: messages.length }, step: 3 } }, receipts: {} };
  const frame = (value: unknown) => {
    const bytes = Buffer.from(encodePart(value));
    bytes[3] = 1;
    const payload = bytes.subarray(36);
    sha256(payload).copy(bytes, 4);
    return bytes;
  };
  const rows = {
    head: frame(head),
    messages: messages.map((m, index) => ({ index, bytes: frame(m) })),
    receipts: Object.values(envelope.receipts).sort((a, b) => (a.key < b.key ? -1 : 1)).map((r) => ({ key: r.key, bytes: frame(r) })),
    transcriptDigest: null as Uint8Array | null,
    receiptsDigest: null as Uint8Array | null,
  };
  rows.transcriptDigest = digestOf(rows.messages.map((m) => [m.index, sha256(m.bytes)] as const), 1);
  rows.receiptsDigest = digestOf(rows.receipts.map((r) => [r.key, sha256(r.bytes)] as const), 1);
  expect(loadRecord('r', rows)).toStrictEqual(json(envelope));
  const stored: StoredState = { revision: 2, index: null, transcriptDigest: rows.transcriptDigest, receiptsDigest: rows.receiptsDigest, unsettled: new Map() };
  const next = planSave({ ...run(3, 'flat'), revision: 3 }, stored);
  expect(next.trimMessagesFrom).toBe(0);
  expect(next.replaceReceipts).toBe(true);
});

/** `rows` as a reader of record format `format` holds them: each part's format byte set, the digests made that format's way. */
function asFormat(rows: ReturnType<typeof rowsAfter>, format: number, digestFormat = format) {
  const reframe = (bytes: Uint8Array) => {
    const copy = Buffer.from(bytes);
    copy[3] = format;
    return copy;
  };
  const messages = rows.messages.map((m) => ({ index: m.index, bytes: reframe(m.bytes) }));
  const receipts = rows.receipts.map((r) => ({ key: r.key, bytes: reframe(r.bytes) }));
  return {
    head: reframe(rows.head), messages, receipts,
    transcriptDigest: digestOf(messages.map((m) => [m.index, sha256(m.bytes)] as const), digestFormat),
    receiptsDigest: digestOf(receipts.map((r) => [r.key, sha256(r.bytes)] as const), digestFormat),
  };
}

describe('the digests beside the head', () => {
  it('are made as the head\'s format says: a record of format 2 reads with the older digest, and its next save rewrites every row', () => {
    const plans = [planSave(run(2, 'context'), undefined)];
    const rows = asFormat(rowsAfter(plans), 2);
    expect(loadRecord('r', rows)).toStrictEqual(json(run(2, 'context')));
    // Nothing a save could extend: the index and the rows' state are not carried over from a format-2 head.
    expect(readIndex('r', rows.head)).toBeNull();
    expect(readRecord('r', rows).stored).toBeUndefined();
    const stored: StoredState = { revision: 2, index: null, transcriptDigest: rows.transcriptDigest, receiptsDigest: rows.receiptsDigest, unsettled: new Map() };
    const next = planSave(run(3, 'context'), stored);
    expect(next.trimMessagesFrom).toBe(0);
    expect(next.replaceReceipts).toBe(true);
    expect(next.messages.map((m) => m.index)).toEqual([...Array(7).keys()]);
    expect(next.head[3]).toBe(RECORD_FORMAT);
    expect(loadRecord('r', rowsAfter([...plans, next]))).toStrictEqual(json(run(3, 'context')));
  });

  it('refuse a head whose digests were made another format\'s way', () => {
    const rows = rowsAfter([planSave(run(2, 'context'), undefined)]);
    expect(() => loadRecord('r', asFormat(rows, 2, 3))).toThrow(expect.objectContaining({ code: 'record_corrupt' }));
    expect(() => loadRecord('r', asFormat(rows, 3, 2))).toThrow(expect.objectContaining({ code: 'record_corrupt' }));
    expect(loadRecord('r', asFormat(rows, 3))).toStrictEqual(json(run(2, 'context')));
  });

  it('change when a row is moved, two rows trade bodies, a row is dropped or one is copied under another key', () => {
    const rows = rowsAfter([planSave(run(3, 'context'), undefined)]);
    const sha = (b: Uint8Array) => sha256(b);
    const digest = (entries: [string | number, Uint8Array][]) => digestOf(entries.map(([id, b]) => [id, sha(b)] as const));
    const messages = rows.messages.map((m) => [m.index, m.bytes] as [number, Uint8Array]);
    const receipts = rows.receipts.map((r) => [r.key, r.bytes] as [string, Uint8Array]);
    const base = digest(messages);
    expect(digest(messages)).toEqual(base);
    const traded = messages.map(([i, b], k) => [i, k === 1 ? messages[2]![1] : k === 2 ? messages[1]![1] : b] as [number, Uint8Array]);
    expect(digest(traded)).not.toEqual(base);
    expect(digest(messages.map(([i, b]) => [i === 3 ? 30 : i, b]))).not.toEqual(base);
    expect(digest(messages.slice(1))).not.toEqual(base);
    const receiptBase = digest(receipts);
    expect(digest([...receipts, ['9:copied', receipts[0]![1]]])).not.toEqual(receiptBase);
    expect(digest(receipts.map(([k, b], i) => [k, receipts[(i + 1) % receipts.length]![1]]))).not.toEqual(receiptBase);
  });
});

describe('the record of a run whose context keeps its ended receipts', () => {
  it('round-trips them as a list in run order, each stored once as a part', () => {
    const envelope = run(4, 'context');
    const context = (envelope.snapshot as unknown as { context: { receipts: unknown } }).context;
    context.receipts = Object.values(context.receipts as Record<string, AgentToolReceipt>).reverse().sort((a, b) => a.modelStep - b.modelStep);
    const plan = planSave(envelope, undefined);
    expect(JSON.stringify(decodePart('r', plan.head))).not.toContain('"0:c0"');
    expect(loadRecord('r', rowsAfter([plan]))).toStrictEqual(json(envelope));
  });

  it('loads them without building the envelope\'s receipts record, which reads as every receipt once asked for', () => {
    const envelope = run(4, 'context');
    const context = (envelope.snapshot as unknown as { context: { receipts: unknown } }).context;
    context.receipts = Object.values(context.receipts as Record<string, AgentToolReceipt>).sort((a, b) => a.modelStep - b.modelStep);
    const loaded = loadRecord('r', rowsAfter([planSave(envelope, undefined)]));
    expect(unbuiltReceiptsOf(loaded)).toBeDefined();
    expect(receiptCountOf(loaded)).toBe(5);
    expect(receiptOf(loaded, '1:c1')).toEqual(envelope.receipts['1:c1']);
    expect(receiptOf(loaded, '4:c4')).toMatchObject({ status: 'executing' });
    expect(receiptOf(loaded, '9:none')).toBeUndefined();
    expect(unbuiltReceiptsOf(loaded)).toBeDefined();
    expect(loaded.receipts).toEqual(json(envelope.receipts));
    expect(unbuiltReceiptsOf(loaded)).toBeUndefined();
  });

  it('refuses rows that hand over a receipt under another row\'s key, or one key twice, even with digests to match', () => {
    const envelope = run(3, 'context');
    const rows = rowsAfter([planSave(envelope, undefined)]);
    const redigest = (receipts: { key: string; bytes: Uint8Array }[]) => ({
      ...rows, receipts, receiptsDigest: digestOf(receipts.map((r) => [r.key, sha256(r.bytes)] as const)),
    });
    const [a, b, ...rest] = rows.receipts;
    expect(loadRecord('r', redigest([a!, b!, ...rest]))).toStrictEqual(json(envelope));
    expect(() => loadRecord('r', redigest([{ key: a!.key, bytes: b!.bytes }, { key: b!.key, bytes: a!.bytes }, ...rest])))
      .toThrow(expect.objectContaining({ code: 'record_corrupt' }));
    expect(() => loadRecord('r', redigest([a!, a!, b!, ...rest]))).toThrow(expect.objectContaining({ code: 'record_corrupt' }));
  });

  it('keeps them in the head when a key is not among the envelope\'s receipts, or is there twice', () => {
    for (const change of ['missing', 'twice'] as const) {
      const envelope = run(3, 'context');
      const context = (envelope.snapshot as unknown as { context: { receipts: AgentToolReceipt[] } }).context;
      context.receipts = Object.values(context.receipts);
      if (change === 'missing') delete envelope.receipts['1:c1'];
      else context.receipts.push(structuredClone(context.receipts[0]!));
      const plan = planSave(envelope, undefined);
      expect(JSON.stringify(decodePart('r', plan.head))).toContain('"0:c0"');
      expect(loadRecord('r', rowsAfter([plan]))).toStrictEqual(json(envelope));
    }
  });
});

/**
 * A SQLite head's tail (the run's binding and its context's settings, see
 * record.ts, HeadTail) is packed once and its bytes written again by the
 * saves after, as long as the tail is the same plain data: samePacked says
 * when a value packs to the bytes it was compared with, and a tail that
 * changed between two saves of the same store object is written anew.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentRunEnvelope } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { packTail, samePacked, unpackTail } from '../../src/stores/codec.js';

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-tail-bytes-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Plain data as a run's binding and settings hold it, with the values the packer writes in more than one way. */
const plain = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, undefined, true, false, 0, -0, NaN, 1, -1, 0.5, 2 ** 32, 2 ** 53, 'x', '', '__proto__'),
    fc.double(),
    fc.integer(),
    fc.string(),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'c', '1', '__proto_', 'toString'), tie('value'), { maxKeys: 4, noNullPrototype: true }),
  ),
})).value;

const hasNaN = (value: unknown): boolean => (typeof value === 'number' ? Number.isNaN(value)
  : typeof value === 'object' && value !== null ? Object.values(value).some(hasNaN) : false);

describe('samePacked', () => {
  it('says a value packs to the bytes it is compared with only when it does', () => {
    fc.assert(fc.property(plain, plain, (a, b) => {
      const bytes = packTail(a);
      if (samePacked(unpackTail(bytes), b)) expect(Buffer.compare(packTail(b), bytes)).toBe(0);
    }), { numRuns: 2000 });
  });

  it('holds for plain data against its own bytes, keys in their order', () => {
    fc.assert(fc.property(plain, (a) => {
      const same = samePacked(unpackTail(packTail(a)), a);
      // NaN is never taken to be the same (NaN !== NaN): those values are packed again.
      if (!hasNaN(a)) expect(same).toBe(true);
    }), { numRuns: 500 });
    expect(samePacked(unpackTail(packTail({ a: 1, b: 2 })), { b: 2, a: 1 })).toBe(false);
  });

  it('takes what is no plain data to differ', () => {
    const bytes = packTail({ at: Buffer.from('x') });
    expect(samePacked(unpackTail(bytes), { at: Buffer.from('x') })).toBe(false);
    expect(samePacked(unpackTail(packTail({ d: 1 })), { d: new Date(1) })).toBe(false);
    const proto = Object.defineProperty({}, '__proto__', { value: 1, enumerable: true });
    expect(samePacked(unpackTail(packTail(proto)), proto)).toBe(false);
  });
});

describe('a SQLite save', () => {
  const envelope = (revision: number, binding: unknown, maxSteps: number): AgentRunEnvelope => ({
    kind: 'cairn-agent-run', version: 1, runId: 'tail', scope: 'tenant-a', revision, bindingId: 'b', binding,
    machine: { id: 'run', version: 1 },
    snapshot: { status: 'active', value: 'loop', context: { runId: 'tail', maxSteps, messages: [{ role: 'user', content: 'go' }], step: 1 } },
    receipts: {}, approvalRequestCounts: {}, approvals: {}, status: 'running', pendingApprovals: [], pendingClientCalls: [],
    createdAt: 1, updatedAt: revision,
  } as unknown as AgentRunEnvelope);

  it('writes a tail that changed between saves of the same store object, and keeps one that did not', async () => {
    const path = join(dir, 'ops.sqlite');
    const ops = createSqliteOpsStore({ path });
    // Loads through a store object of their own: a load leaves the writer's memory of the run as the rows hold it.
    const reader = createSqliteOpsStore({ path });
    const context = (e: AgentRunEnvelope) => (e.snapshot as { context: { maxSteps: number } }).context;
    try {
      const binding = { tools: ['a', 'b'], model: { id: 'm', n: 1 } };
      await ops.agentRuns.save(envelope(1, binding, 5));
      // The same values in new objects: the bytes kept are the ones written.
      await ops.agentRuns.save(envelope(2, structuredClone(binding), 5));
      expect((await reader.agentRuns.load('tail'))!.binding).toEqual(binding);
      // The very object of the last save, changed in place: written.
      binding.model.n = 2;
      await ops.agentRuns.save(envelope(3, binding, 5));
      expect((await reader.agentRuns.load('tail'))!.binding).toEqual({ tools: ['a', 'b'], model: { id: 'm', n: 2 } });
      // A changed setting of the run's context: written.
      await ops.agentRuns.save(envelope(4, binding, 7));
      const loaded = (await reader.agentRuns.load('tail'))!;
      expect(context(loaded).maxSteps).toBe(7);
      expect(JSON.stringify(loaded)).toBe(JSON.stringify(envelope(4, binding, 7)));
    } finally {
      reader.close();
      ops.close();
    }
  });
});

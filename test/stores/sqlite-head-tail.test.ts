/**
 * SQLite ops schema 9: a head row's head keeps what the run never changes
 * (its binding and its context's settings) at its end, after a fill of zeros
 * that puts those bytes on overflow pages of their own, and the pad column is
 * left empty. The envelope a load returns is the one saved, keys in their
 * order; a file of schema 8 (heads with their binding inline) is migrated and
 * its runs load and save on exactly.
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, type AgentRunEnvelope, type AgentRunStore, type AgentTool } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { SCHEMA_VERSION } from 'cairn/ops/sqlite';
import { decodePart, encodePart } from '../../src/stores/codec.js';
import { planSave } from '../../src/stores/write-plan.js';
import { sqliteScratch } from './sqlite-scratch.js';

const { file, open, raw } = sqliteScratch('cairn-sqlite-tail-');

const json = (value: unknown) => JSON.parse(JSON.stringify(value));

/** Every envelope a store was handed (as JSON text, keys in their order), and each load right after its save. */
function checking(inner: AgentRunStore): AgentRunStore & { saved: AgentRunEnvelope[]; texts: string[]; loaded: string[] } {
  const saved: AgentRunEnvelope[] = [];
  const texts: string[] = [];
  const loaded: string[] = [];
  return {
    saved, texts, loaded,
    load: (runId, options) => inner.load(runId, options),
    async save(envelope, options) {
      await inner.save(envelope, options);
      saved.push(json(envelope));
      texts.push(JSON.stringify(envelope));
      loaded.push(JSON.stringify(await inner.load(envelope.runId)));
    },
  };
}

const step: AgentTool = { parameters: { type: 'object' }, execute: (args: { n: number }) => ({ ok: true, n: args.n }) };
const publish: AgentTool = { parameters: { type: 'object', properties: {} }, needsApproval: true, execute: () => 'published' };

function loop(store: AgentRunStore, runId: string, steps: number, then: 'done' | 'publish' = 'done') {
  const turns = Array.from({ length: steps }, (_, n) => ({ toolCalls: [{ toolName: 'step', args: { n }, toolCallId: `c${n}` }] }));
  const last = then === 'done' ? { text: 'done' } : { toolCalls: [{ toolName: 'publish', args: {}, toolCallId: 'p' }] };
  return {
    model: createMockModel({ responses: [...turns, last] }), prompt: 'Work.', tools: { step, publish }, maxSteps: steps + 3,
    session: { store, runId, scope: 'tenant-a' },
  };
}

type StoredHead = { envelope: Record<string, unknown>; fill?: Uint8Array; tail?: { binding?: unknown; context?: Record<string, unknown>; order?: string[] } };

describe('a head row of schema 9', () => {
  it('keeps the binding and the context\'s settings in its tail, and every load is the envelope saved, keys in their order', async () => {
    const path = file('ops.sqlite');
    const ops = open(path);
    const db = raw(path);
    const store = checking(ops.agentRuns);
    const heads: { head: StoredHead; pad: number; envelope: AgentRunEnvelope }[] = [];
    const watching: AgentRunStore = {
      load: (runId, options) => store.load(runId, options),
      async save(envelope, options) {
        await store.save(envelope, options);
        const row = db.prepare<[string], { head: Buffer; pad: number }>('SELECT head, length(pad) AS pad FROM cairn_runs WHERE run_id = ?').get(envelope.runId)!;
        heads.push({ head: decodePart<StoredHead>(envelope.runId, row.head), pad: row.pad, envelope: json(envelope) });
      },
    };
    const result = await runAgent(loop(watching, 'tailed', 6));
    expect(result.status).toBe('completed');
    expect(store.loaded).toEqual(store.texts);
    for (const { head, pad, envelope } of heads) {
      expect(pad).toBe(0);
      // The binding's place in the head envelope holds 0; the binding itself is in the tail.
      expect(head.envelope.binding).toBe(0);
      expect(head.tail?.binding).toEqual(envelope.binding);
      const context = (envelope.snapshot as { context: Record<string, unknown> }).context;
      expect(head.tail?.order).toEqual(Object.keys(context));
      expect(head.tail?.context?.plan).toEqual(context.plan);
      expect((head.envelope.snapshot as { context: Record<string, unknown> }).context).not.toHaveProperty('plan');
      expect(head.fill!.every((byte) => byte === 0)).toBe(true);
    }
  });

  it('refuses a tail that does not fit its head (an order that is no list of keys) as corrupt', async () => {
    const path = file('ops.sqlite');
    const ops = open(path);
    const store = checking(ops.agentRuns);
    expect((await runAgent(loop(store, 'broken', 1))).status).toBe('completed');
    const db = raw(path);
    const value = decodePart<StoredHead>('broken', db.prepare('SELECT head FROM cairn_runs').pluck().get() as Buffer);
    db.prepare('UPDATE cairn_runs SET head = ?').run(encodePart({ ...value, tail: { ...value.tail, order: 'plan' } }));
    await expect(open(path).agentRuns.load('broken')).rejects.toMatchObject({ code: 'record_corrupt' });
  });
});

describe('a file of schema 8', () => {
  it('is migrated: its heads, binding inline and padded, load exactly, and its runs save on with tails', async () => {
    const path = file('ops.sqlite');
    const writer = open(path);
    const store = checking(writer.agentRuns);
    const options = loop(store, 'old-1', 3, 'publish');
    const first = await runAgent(options);
    expect(first.status).toBe('suspended');
    const other = checking(writer.agentRuns);
    expect((await runAgent(loop(other, 'old-2', 2))).status).toBe('completed');
    writer.close();
    // As schema 8 wrote them: the head one plain part (what the planner makes without a tail), padded with zeros.
    const db = raw(path);
    for (const saved of [store.saved.at(-1)!, other.saved.at(-1)!]) {
      db.prepare('UPDATE cairn_runs SET head = ?, pad = zeroblob(300) WHERE run_id = ?').run(planSave(saved, undefined).head, saved.runId);
    }
    db.prepare('DELETE FROM cairn_ops_schema WHERE version > 8').run();
    expect(decodePart<StoredHead>('old-1', db.prepare("SELECT head FROM cairn_runs WHERE run_id = 'old-1'").pluck().get() as Buffer))
      .not.toHaveProperty('tail');

    const ops = open(path);
    expect(db.prepare('SELECT version FROM cairn_ops_schema ORDER BY version').pluck().all())
      .toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(9);
    expect(JSON.stringify(await ops.agentRuns.load('old-1'))).toBe(store.texts.at(-1));
    expect(JSON.stringify(await ops.agentRuns.load('old-2'))).toBe(other.texts.at(-1));
    if (first.status !== 'suspended') return;
    const resumed = checking(ops.agentRuns);
    const done = await resumeAgent({
      ...options, model: createMockModel({ responses: [{ text: 'Published.' }] }), session: { ...options.session, store: resumed },
      approvalResponses: first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true })),
    });
    expect(done.status).toBe('completed');
    expect(resumed.loaded).toEqual(resumed.texts);
    const head = decodePart<StoredHead>('old-1', db.prepare("SELECT head FROM cairn_runs WHERE run_id = 'old-1'").pluck().get() as Buffer);
    expect(head.tail?.binding).toEqual(resumed.saved.at(-1)!.binding);
    expect(db.prepare("SELECT length(pad) FROM cairn_runs WHERE run_id = 'old-1'").pluck().get()).toBe(0);
  });
});

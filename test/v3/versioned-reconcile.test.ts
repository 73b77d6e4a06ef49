/**
 * reconcileAgentRun({ checkpointVersion: 3, session, versionedMemory }) on
 * V3 runs: a lost acknowledgment is settled from the session's receipts
 * (read back, never applied again) on in-memory, SQLite and PostgreSQL run
 * stores; a receipt of another request digest is refused with nothing
 * written; a tool write of a run that ended is settled by its receipt.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  agentRunLeaseKey, createInMemoryAgentRunStoreV3, createInMemoryLeaseProvider, reconcileAgentRun, runAgent, type AgentRunStoreV3, type LeaseProvider,
} from 'cairn/agent';
import { createPostgresAgentRunStoreV3, type PostgresAgentRunStoreV3 } from 'cairn/ops/postgres';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel } from 'cairn/testing';
import { describePostgres } from '../stores/pg-env.js';
import { countingMemoryStore, memorySession, recordingStoreV3, rememberingModel } from './versioned-helpers.js';

const answer = () => createMockModel({ responses: [{ text: 'Noted: tea.' }] });

/** A completed run whose acknowledgment save failed (the memory commit landed): its intent is stored `planned`. */
async function lostAcknowledgment(inner: AgentRunStoreV3, runId: string, lease?: { provider: LeaseProvider }) {
  const probe = recordingStoreV3();
  await runAgent({ checkpointVersion: 3, session: { store: probe, runId, scope: 's' }, model: answer(), prompt: 'I prefer tea.', versionedMemory: { session: memorySession(countingMemoryStore()), extract: true } });
  const memory = countingMemoryStore();
  const session = memorySession(memory);
  const runs = recordingStoreV3(inner);
  runs.failSave(probe.saves.length);
  const sessionOf = { store: runs, runId, scope: 's' };
  const result = await runAgent({
    checkpointVersion: 3, session: sessionOf, model: answer(), prompt: 'I prefer tea.', versionedMemory: { session, extract: true }, ...(lease ? { lease } : {}),
  });
  expect(result.status).toBe('completed');
  expect((await runs.load(runId))!.memoryIntents!.map((i) => i.status)).toEqual(['planned']);
  return { memory, session, runs, sessionOf };
}

function reconcileCases(name: string, open: () => Promise<AgentRunStoreV3>) {
  describe(`reconcileAgentRun with versionedMemory (${name})`, () => {
    it('settles a lost acknowledgment from the receipt, commits nothing again, and a settled run reports only its id', async () => {
      const { memory, session, runs, sessionOf } = await lostAcknowledgment(await open(), 'l1');
      const before = (await runs.load('l1'))!;
      expect(before.memoryIntents!.map((i) => i.status)).toEqual(['planned']);
      const answered = await reconcileAgentRun({ checkpointVersion: 3, session: sessionOf, versionedMemory: { session } });
      expect(answered).toEqual({ runId: 'l1', memoryIntents: ['l1:memory:extract'] });
      expect(answered.status).toBe('completed');
      const after = (await runs.load('l1'))!;
      const receipt = (await session.receipt('l1:memory:extract'))!;
      expect(after.revision).toBe(before.revision + 1);
      expect(after.memoryIntents![0]).toMatchObject({
        status: 'acknowledged', requestDigest: receipt.requestDigest, planned: 1, receipt: { scopeRevision: receipt.scopeRevision, committedAt: receipt.committedAt },
      });
      expect(memory.calls).toBe(1);
      expect(await reconcileAgentRun({ checkpointVersion: 3, session: sessionOf, versionedMemory: { session } })).toEqual({ runId: 'l1' });
      expect((await runs.load('l1'))!.revision).toBe(after.revision);
    });

    it('a receipt whose request digest is not the intent\'s: MemoryError memory_receipt_mismatch, nothing written', async () => {
      const { memory, session, runs, sessionOf } = await lostAcknowledgment(await open(), 'm1');
      // The stored intent claims another request than the one the memory committed.
      const stored = (await runs.load('m1'))!;
      const forged = { ...stored, revision: stored.revision + 1, memoryIntents: stored.memoryIntents!.map((i) => ({ ...i, requestDigest: `sha256:${'0'.repeat(64)}` })) };
      await runs.save(forged);
      await expect(reconcileAgentRun({ checkpointVersion: 3, session: sessionOf, versionedMemory: { session } }))
        .rejects.toMatchObject({ name: 'MemoryError', code: 'memory_receipt_mismatch' });
      const after = (await runs.load('m1'))!;
      expect(after.revision).toBe(forged.revision);
      expect(after.memoryIntents!.map((i) => i.status)).toEqual(['planned']);
      expect(memory.calls).toBe(1);
    });

    it('refuses a session of another scope, and a run bound to none', async () => {
      const { sessionOf } = await lostAcknowledgment(await open(), 'b1');
      const other = memorySession(countingMemoryStore(), { scope: { userId: 'bob' } });
      await expect(reconcileAgentRun({ checkpointVersion: 3, session: sessionOf, versionedMemory: { session: other } }))
        .rejects.toMatchObject({ name: 'BindingChangedError', code: 'binding_changed' });
      const runs = await open();
      await runAgent({ checkpointVersion: 3, session: { store: runs, runId: 'b2', scope: 's' }, model: answer(), prompt: 'hi' });
      await expect(reconcileAgentRun({ checkpointVersion: 3, session: { store: runs, runId: 'b2', scope: 's' }, versionedMemory: { session: other } }))
        .rejects.toMatchObject({ code: 'binding_changed' });
    });
  });
}

const dirs: string[] = [];
const closers: Array<() => unknown> = [];
afterAll(async () => {
  for (const close of closers) await close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

reconcileCases('in memory', async () => createInMemoryAgentRunStoreV3());
reconcileCases('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-vr-'));
  dirs.push(dir);
  const ops = createSqliteOpsStore({ path: join(dir, 'ops.sqlite') });
  closers.push(() => ops.close());
  return createSqliteAgentRunStoreV3(ops);
});

describePostgres('reconcileAgentRun with versionedMemory on PostgreSQL', (env) => {
  const opened: PostgresAgentRunStoreV3[] = [];
  afterAll(async () => {
    for (const store of opened) await store.close();
  });
  it('settles a lost acknowledgment, once', async () => {
    const store = createPostgresAgentRunStoreV3({ connectionString: env.url }, { schema: env.newSchema() });
    opened.push(store);
    await store.setup();
    const { memory, session, runs, sessionOf } = await lostAcknowledgment(store, 'pg1');
    expect(await reconcileAgentRun({ checkpointVersion: 3, session: sessionOf, versionedMemory: { session } })).toEqual({ runId: 'pg1', memoryIntents: ['pg1:memory:extract'] });
    expect((await runs.load('pg1'))!.memoryIntents!.map((i) => i.status)).toEqual(['acknowledged']);
    expect(memory.calls).toBe(1);
    expect((await session.recall({ text: 'tea' }))[0]!.record.sources).toEqual([{ messageId: 'pg1:0' }]);
  });
});

describe('under a lease', () => {
  it('a run and its reconciliation under a lease: the lease is given back, and a held one refuses the reconciliation', async () => {
    const leases = createInMemoryLeaseProvider();
    const inner = createInMemoryAgentRunStoreV3({ leases });
    const { memory, session, runs, sessionOf } = await lostAcknowledgment(inner, 'ls', { provider: leases });
    expect(await leases.inspect(agentRunLeaseKey(sessionOf))).toBeNull();
    expect(await reconcileAgentRun({ checkpointVersion: 3, session: sessionOf, versionedMemory: { session }, lease: { provider: leases } }))
      .toEqual({ runId: 'ls', memoryIntents: ['ls:memory:extract'] });
    expect((await runs.load('ls'))!.memoryIntents![0]!.status).toBe('acknowledged');
    expect(memory.calls).toBe(1);
    // Held by another executor: refused before anything is read.
    const held = await leases.acquire(agentRunLeaseKey(sessionOf), 'other', 60_000);
    expect(held).not.toBeNull();
    await expect(reconcileAgentRun({ checkpointVersion: 3, session: sessionOf, versionedMemory: { session }, lease: { provider: leases } }))
      .rejects.toMatchObject({ code: 'lease_held' });
  });

  it('the extraction\'s saves carry the run\'s lease: taken by another owner during the extraction, the acknowledgment is refused', async () => {
    const leases = createInMemoryLeaseProvider();
    const runs = createInMemoryAgentRunStoreV3({ leases });
    const key = agentRunLeaseKey({ runId: 'lt', scope: 's' });
    const memory = countingMemoryStore();
    const session = memorySession(memory, {
      llm: async () => {
        // Another executor takes the run while the memory LLM answers.
        await leases.release((await leases.inspect(key))!);
        await leases.acquire(key, 'thief', 60_000);
        return '{"facts":[{"text":"Ada prefers tea.","sources":["s0"]}]}';
      },
    });
    const result = await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'lt', scope: 's' }, model: answer(), prompt: 'I prefer tea.',
      versionedMemory: { session, extract: true }, lease: { provider: leases },
    });
    expect(result.status).toBe('completed');
    expect(memory.applied).toEqual(['lt:memory:extract']);
    expect((await runs.load('lt'))!.memoryIntents!.map((i) => i.status)).toEqual(['planned']);
  });
});

describe('reconcileAgentRun settles a tool write of a run that ended', () => {
  it('acknowledges it from its receipt, or fails it when the session holds none', async () => {
    const memory = countingMemoryStore();
    const session = memorySession(memory);
    const runs = recordingStoreV3();
    const sessionOf = { store: runs, runId: 't1', scope: 's' };
    await runAgent({ checkpointVersion: 3, session: sessionOf, model: rememberingModel(), prompt: 'hi', versionedMemory: { session, tools: true } });
    const stored = (await runs.load('t1'))!;
    // As if the run had ended before the call's receipt moved its intent on.
    const back = (status: string) => stored.memoryIntents!.map((i) => ({ ...i, status, snapshot: null, receipt: undefined, planned: undefined, requestDigest: undefined }));
    await runs.save({ ...stored, revision: stored.revision + 1, memoryIntents: JSON.parse(JSON.stringify(back('intended'))) });
    expect(await reconcileAgentRun({ checkpointVersion: 3, session: sessionOf, versionedMemory: { session } })).toEqual({ runId: 't1', memoryIntents: ['t1:memory:0:c1'] });
    expect((await runs.load('t1'))!.memoryIntents![0]).toMatchObject({ status: 'acknowledged', planned: 1 });
    expect(memory.applied).toEqual(['t1:memory:0:c1']);
    const empty = memorySession(countingMemoryStore());
    const again = (await runs.load('t1'))!;
    await runs.save({ ...again, revision: again.revision + 1, memoryIntents: JSON.parse(JSON.stringify(back('intended'))) });
    await reconcileAgentRun({ checkpointVersion: 3, session: sessionOf, versionedMemory: { session: empty } });
    expect((await runs.load('t1'))!.memoryIntents![0]).toMatchObject({ status: 'failed', error: { name: 'MemoryError' } });
  });
});

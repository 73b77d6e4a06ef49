/**
 * reconcileAgentToolExecution on the in-memory, SQLite and PostgreSQL stores:
 * verified evidence settles a call a crash left unknown (the next ordinary
 * resume answers it from the evidence, the tool never runs again); the
 * decision reaches the journal before the record; identical evidence again
 * is idempotent and finishes a reconciliation whose save failed; an active
 * worker, conflicting, mismatched or rejected evidence keep the call blocked
 * with a typed error and the run unchanged.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { agentRunLeaseKey, createInMemoryAgentRunStore, runAgent, type AgentRunStore } from 'cairn/agent';
import { createFaultyStore, createLedger } from 'cairn/testing';
import { evidenceStreamId, reconcileAgentToolExecution, ToolEvidenceError, type ToolReconciliationStore } from 'cairn/evidence';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { describePostgres } from '../stores/pg-env.js';
import { crashedRun, evidenceFor, inMemoryStore, ledgerVerifier, resume, RUN, runOptions } from './fixture.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const frames = async (store: ToolReconciliationStore) => (await store.journal.read(evidenceStreamId(RUN), 0)).map((f) => JSON.parse(f.body) as Record<string, unknown>);
const revision = async (store: ToolReconciliationStore) => (await store.agentRuns.load(RUN.runId, { scope: RUN.scope }))!.revision;
const receipt = async (store: ToolReconciliationStore) => (await store.agentRuns.load(RUN.runId, { scope: RUN.scope }))!.receipts['0:pay-A7']!;

/** The store's run saves throw once they are asked to (after the journal write): a crash between the two writes. */
function failingSaves(store: ToolReconciliationStore): ToolReconciliationStore & { failNext: () => void } {
  let fail = false;
  const agentRuns: AgentRunStore = {
    load: (runId, options) => store.agentRuns.load(runId, options),
    save: async (envelope, options) => {
      if (fail) {
        fail = false;
        throw Object.assign(new Error('the process died before the save'), { code: 'injected_fault' });
      }
      return store.agentRuns.save(envelope, options);
    },
  };
  return { ...store, agentRuns, failNext: () => void (fail = true) };
}

function suite(name: string, open: () => Promise<{ store: ToolReconciliationStore; close(): Promise<void> }>) {
  const withStore = (title: string, body: (store: ToolReconciliationStore) => Promise<void>) =>
    it(title, async () => {
      const { store, close } = await open();
      try {
        await body(store);
      } finally {
        await close();
      }
    }, 60_000);

  describe(`evidence reconciliation: ${name}`, () => {
    for (const when of ['before', 'after'] as const) {
      withStore(`settles a call interrupted ${when} its effect; the next resume goes on from the evidence, the tool not run again`, async (store) => {
        const payments = await crashedRun(store, when);
        if (when === 'before') payments.record('charge@0:pay-A7'); // the charge went through another way; the ledger knows it
        const stopped = await resume(store, payments);
        expect(stopped).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required' });
        const before = await revision(store);
        const seen: unknown[] = [];
        const state = await reconcileAgentToolExecution({ store, evidence: evidenceFor(), verifyEvidence: ledgerVerifier(payments, seen as never[]) });
        expect(seen).toEqual([expect.objectContaining({ toolName: 'charge', modelStep: 0, toolCallId: 'pay-A7', status: 'executing', input: { order: 'A-7', cents: 1250 } })]);
        expect(state).toMatchObject({ runId: RUN.runId, revision: before + 1, kind: 'cairn-agent-state' });
        expect(await receipt(store)).toMatchObject({ status: 'executed', rawResult: { receipt: 'rcpt-1' }, reconciled: true });
        const [decision, ...more] = await frames(store);
        expect(more).toEqual([]);
        expect(decision).toMatchObject({ decision: 'accepted', operationId: evidenceFor().operationId, previous: { status: 'executing', outputDigest: null }, source: 'payments-ledger' });
        // Digests only: neither the confirmed output nor the proof leaves in the journal.
        expect(JSON.stringify(decision)).not.toMatch(/rcpt-1|sig-very-secret-proof/);
        const done = await resume(store, payments);
        expect(done).toMatchObject({ status: 'completed', text: 'charged: [{"receipt":"rcpt-1"}]' });
        expect(payments.entries()).toEqual({ 'charge@0:pay-A7': 1 });
      });
    }

    withStore('a call whose result write the store refused (the run failed on it) is settled the same way', async (store) => {
      const payments = createLedger();
      // Save 3 records the charge's result: it fails, after the charge went through.
      const failed = await runAgent(runOptions(createFaultyStore(store.agentRuns, { failSave: { at: 3, mode: 'reject' } }), payments) as never);
      expect(failed).toMatchObject({ status: 'failed', error: { code: 'persistence_failed' } });
      expect((await receipt(store)).status).toBe('executing');
      await reconcileAgentToolExecution({ store, evidence: evidenceFor(), verifyEvidence: ledgerVerifier(payments) });
      expect(await resume(store, payments)).toMatchObject({ status: 'completed', text: 'charged: [{"receipt":"rcpt-1"}]' });
      expect(payments.entries()).toEqual({ 'charge@0:pay-A7': 1 });
    });

    withStore('evidence that the effect happened and failed answers the call as failed, with its message to the model', async (store) => {
      const payments = await crashedRun(store, 'after');
      const evidence = evidenceFor({ output: 'card declined', isError: true });
      await reconcileAgentToolExecution({ store, evidence, verifyEvidence: ledgerVerifier(payments) });
      expect(await receipt(store)).toMatchObject({ status: 'failed', reconciled: true, error: { code: 'reconciled_error', message: 'card declined' } });
      const done = await resume(store, payments);
      expect(done.status).toBe('completed');
      expect(done.text).toContain('card declined');
      expect(payments.entries()).toEqual({ 'charge@0:pay-A7': 1 });
    });

    withStore('identical evidence again is idempotent: no write, the same state', async (store) => {
      const payments = await crashedRun(store, 'after');
      const first = await reconcileAgentToolExecution({ store, evidence: evidenceFor(), verifyEvidence: ledgerVerifier(payments) });
      const again = await reconcileAgentToolExecution({ store, evidence: evidenceFor(), verifyEvidence: () => { throw new Error('not asked again'); } });
      expect(again.revision).toBe(first.revision);
      expect(await revision(store)).toBe(first.revision);
      expect(await frames(store)).toHaveLength(1);
    });

    withStore('a crash between the journal write and the save: the same evidence again finishes it, decided once', async (store) => {
      const payments = await crashedRun(store, 'after');
      const faulty = failingSaves(store);
      const before = await revision(store);
      faulty.failNext();
      await expect(reconcileAgentToolExecution({ store: faulty, evidence: evidenceFor(), verifyEvidence: ledgerVerifier(payments) }))
        .rejects.toThrow('the process died before the save');
      expect(await revision(store)).toBe(before);
      expect((await frames(store)).map((f) => f.decision)).toEqual(['accepted']);
      expect(await resume(store, payments)).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required' });
      let asked = 0;
      const state = await reconcileAgentToolExecution({ store: faulty, evidence: evidenceFor(), verifyEvidence: () => (asked++, true) });
      expect(asked, 'the journal\'s decision stands; the verifier is not asked again').toBe(0);
      expect(state.revision).toBe(before + 1);
      expect((await frames(store)).map((f) => f.decision)).toEqual(['accepted']);
      expect(await resume(store, payments)).toMatchObject({ status: 'completed' });
      expect(payments.entries()).toEqual({ 'charge@0:pay-A7': 1 });
    });

    withStore('conflicting evidence after an accepted one is refused, and changes nothing', async (store) => {
      const payments = await crashedRun(store, 'after');
      const state = await reconcileAgentToolExecution({ store, evidence: evidenceFor(), verifyEvidence: ledgerVerifier(payments) });
      const other = evidenceFor({ output: { receipt: 'rcpt-2' } });
      const error = await reconcileAgentToolExecution({ store, evidence: other, verifyEvidence: () => true }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolEvidenceError);
      expect(error).toMatchObject({ code: 'evidence_conflict', reason: 'conflict', operationId: other.operationId });
      expect(await revision(store)).toBe(state.revision);
      expect((await receipt(store)).rawResult).toEqual({ receipt: 'rcpt-1' });
      expect((await frames(store)).map((f) => [f.decision, f.reason ?? null])).toEqual([['accepted', null], ['rejected', 'conflict']]);
    });

    withStore('a verifier that answers false, a non-boolean or throws rejects it: the call stays blocked, the rejection is journaled', async (store) => {
      const payments = await crashedRun(store, 'after');
      const before = await revision(store);
      const verifiers: [string, () => unknown][] = [
        ['verifier-false', () => false], ['verifier-invalid', () => 'yes'], ['verifier-invalid', () => 1], ['verifier-invalid', async () => undefined],
        ['verifier-threw', () => { throw new Error('ledger down'); }],
      ];
      for (const [reason, verifyEvidence] of verifiers) {
        await expect(reconcileAgentToolExecution({ store, evidence: evidenceFor(), verifyEvidence: verifyEvidence as never }))
          .rejects.toMatchObject({ name: 'ToolEvidenceError', code: 'evidence_rejected', reason });
      }
      expect(await revision(store)).toBe(before);
      expect((await receipt(store)).status).toBe('executing');
      expect((await frames(store)).map((f) => f.reason)).toEqual(verifiers.map(([reason]) => reason));
      expect(await resume(store, payments)).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required' });
      // Rejections bind nothing: verified evidence still settles it.
      await reconcileAgentToolExecution({ store, evidence: evidenceFor(), verifyEvidence: ledgerVerifier(payments) });
      expect(await resume(store, payments)).toMatchObject({ status: 'completed' });
    });

    withStore('evidence of other arguments, another tool or no call of the run is refused without asking the verifier', async (store) => {
      await crashedRun(store, 'after');
      const before = await revision(store);
      const never = () => { throw new Error('never asked'); };
      const cases = [
        [evidenceFor({ inputDigest: `sha256:${'0'.repeat(64)}` }), 'binding-mismatch'],
        [evidenceFor({ toolName: 'refund' }), 'binding-mismatch'],
        [evidenceFor({ operationId: 'cairn_other' }), 'not-found'],
        [evidenceFor({ toolCallId: 'pay-B3' }), 'not-found'],
      ] as const;
      for (const [evidence, reason] of cases) {
        await expect(reconcileAgentToolExecution({ store, evidence, verifyEvidence: never })).rejects.toMatchObject({ code: 'evidence_rejected', reason });
      }
      await expect(reconcileAgentToolExecution({ store, evidence: evidenceFor({ scope: 'tenant-b' }), verifyEvidence: never }))
        .rejects.toMatchObject({ name: 'RunIdentityError', code: 'scope_mismatch' });
      await expect(reconcileAgentToolExecution({ store, evidence: evidenceFor({ runId: 'nope' }), verifyEvidence: never }))
        .rejects.toMatchObject({ code: 'run_not_found' });
      expect(await revision(store)).toBe(before);
      expect((await receipt(store)).status).toBe('executing');
    });

    withStore('an active worker holding the run\'s lease keeps it blocked: lease_held, nothing read, decided or written', async (store) => {
      const payments = await crashedRun(store, 'after');
      const before = await revision(store);
      const worker = (await store.leases.acquire(agentRunLeaseKey(RUN), 'worker-1', 60_000))!;
      let asked = 0;
      await expect(reconcileAgentToolExecution({ store, evidence: evidenceFor(), verifyEvidence: () => (asked++, true) }))
        .rejects.toMatchObject({ name: 'AgentRunLeaseError', code: 'lease_held' });
      expect(asked).toBe(0);
      expect(await frames(store)).toEqual([]);
      expect(await revision(store)).toBe(before);
      await store.leases.release(worker);
      await reconcileAgentToolExecution({ store, evidence: evidenceFor(), verifyEvidence: ledgerVerifier(payments) });
      expect((await receipt(store)).status).toBe('executed');
    });

    withStore('malformed evidence and a store that cannot be fenced are refused before anything is read', async (store) => {
      await crashedRun(store, 'after');
      const bad = [null, {}, evidenceFor({ operationId: '' }), evidenceFor({ inputDigest: 'abc' }), { ...evidenceFor(), output: undefined },
        evidenceFor({ proof: (() => 1) as never }), evidenceFor({ isError: 'no' as never }), evidenceFor({ source: 7 as never })];
      for (const evidence of bad) {
        await expect(reconcileAgentToolExecution({ store, evidence: evidence as never, verifyEvidence: () => true }))
          .rejects.toMatchObject({ name: 'ToolEvidenceError', code: 'evidence_invalid' });
      }
      await expect(reconcileAgentToolExecution({ store, evidence: evidenceFor(), verifyEvidence: 'yes' as never })).rejects.toMatchObject({ code: 'evidence_invalid' });
      const bare = createInMemoryAgentRunStore();
      await expect(reconcileAgentToolExecution({ store: bare as never, evidence: evidenceFor(), verifyEvidence: () => true }))
        .rejects.toMatchObject({ name: 'UnsupportedStoreError', code: 'unsupported_store' });
      expect(await frames(store)).toEqual([]);
    });
  });
}

suite('in-memory', async () => ({ store: inMemoryStore(), close: async () => {} }));

suite('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-evidence-'));
  dirs.push(dir);
  const ops = createSqliteOpsStore({ path: join(dir, 'ops.sqlite'), synchronous: 'normal' });
  return { store: ops, close: async () => ops.close() };
});

describePostgres('evidence reconciliation on PostgreSQL', (env) => {
  suite('postgres', async () => {
    const ops = createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 4 } }, { schema: env.newSchema() });
    await ops.setup();
    return { store: ops, close: () => ops.close() };
  });
});

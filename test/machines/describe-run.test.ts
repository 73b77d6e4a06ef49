/**
 * describeRun on the compatibility corpus (every machine version so far, and
 * every kind of stopping point: approval, client call, both, unknown effect,
 * failed with a retry, drained, completed) and on a live run.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, runAgent, streamAgent, type AgentRunEnvelope } from 'cairn/agent';
import { createExecutionContext } from 'cairn/policy';
import { createMockModel } from 'cairn/testing';
import { describeRun, RUN_MACHINE_VERSION, statePaths } from 'cairn/machines';
import { agentOptions, suspendingModel } from '../ui/helpers.js';

const CORPUS = fileURLToPath(new URL('../compat/corpus/', import.meta.url));
const corpus = readdirSync(CORPUS).filter((d) => /^run-v\d+$/.test(d)).flatMap((version) =>
  readdirSync(join(CORPUS, version)).filter((f) => f.endsWith('.json')).map((file) => ({
    version: Number(version.slice('run-v'.length)),
    name: file.slice(0, -'.json'.length),
    text: readFileSync(join(CORPUS, version, file), 'utf8'),
  })));

/** What each kind of record must show, whatever machine version wrote it. */
const EXPECTED: Record<string, { status: string; states: string[]; stages: string[]; receipts: Record<string, number>; unknown: number; retryable: boolean }> = {
  completed: { status: 'completed', states: ['completed'], stages: [], receipts: { completed: 1 }, unknown: 0, retryable: false },
  drained: { status: 'drained', states: ['draining'], stages: [], receipts: { completed: 1 }, unknown: 0, retryable: false },
  'failed-transient': { status: 'failed', states: ['loop.checkpointing'], stages: [], receipts: { completed: 1 }, unknown: 0, retryable: true },
  'suspended-approval': { status: 'suspended', states: ['suspending'], stages: ['approval'], receipts: { completed: 1 }, unknown: 0, retryable: false },
  'suspended-client-call': { status: 'suspended', states: ['suspending'], stages: ['effectIdentity'], receipts: {}, unknown: 0, retryable: false },
  'suspended-approval-and-client-call': { status: 'suspended', states: ['suspending'], stages: ['approval', 'effectIdentity'], receipts: {}, unknown: 0, retryable: false },
  'unknown-effect': { status: 'running', states: ['loop.awaitingCalls'], stages: ['effectIdentity'], receipts: { executing: 1 }, unknown: 1, retryable: false },
  'unknown-effect-approved': { status: 'running', states: ['loop.awaitingCalls'], stages: ['effectIdentity'], receipts: { executing: 1 }, unknown: 1, retryable: false },
};

describe('describeRun on the compatibility corpus', () => {
  it('covers every version and every kind of record', () => {
    expect(new Set(corpus.map((c) => c.version)).size).toBeGreaterThanOrEqual(2);
    for (const version of new Set(corpus.map((c) => c.version))) {
      expect(corpus.filter((c) => c.version === version).map((c) => c.name).sort()).toEqual(Object.keys(EXPECTED).sort());
    }
  });

  for (const fixture of corpus) {
    it(`describes run-v${fixture.version}/${fixture.name} after its migration, without changing it`, () => {
      const envelope = JSON.parse(fixture.text) as AgentRunEnvelope;
      const d = describeRun(envelope);
      const want = EXPECTED[fixture.name]!;
      expect(JSON.stringify(envelope)).toBe(JSON.stringify(JSON.parse(fixture.text)));
      expect(d.machine).toEqual({ id: 'run', version: RUN_MACHINE_VERSION, storedVersion: fixture.version });
      expect(d.status).toBe(want.status);
      expect(d.states).toEqual(want.states);
      expect(d.calls.map((c) => c.stage)).toEqual(want.stages);
      for (const call of d.calls) expect(call.states[0]!.startsWith(`${call.stage}.`)).toBe(true);
      expect(d.receipts.byStatus).toEqual(want.receipts);
      expect(d.unknownEffects).toHaveLength(want.unknown);
      expect(d.outcome.retryable).toBe(want.retryable);
      expect(d.revision).toBe(envelope.revision);
      expect(d.pendingApprovals.map((a) => a.toolCallId)).toEqual(envelope.pendingApprovals.map((a) => a.toolCallId));
      expect(d.pendingClientCalls.map((c) => c.toolCallId)).toEqual(envelope.pendingClientCalls.map((c) => c.toolCallId));
      // Each step's calls, with the answered ones marked, and nothing private.
      expect(d.steps.length).toBeGreaterThan(0);
      const text = JSON.stringify(d);
      for (const approval of envelope.pendingApprovals) expect(text).not.toContain(approval.token);
      for (const receipt of Object.values(envelope.receipts)) {
        if (receipt.rawResult !== undefined && JSON.stringify(receipt.rawResult).length > 8) expect(text).not.toContain(JSON.stringify(receipt.rawResult));
      }
      expect(text).not.toContain('"rawResult"');
      expect(text).not.toContain('"args"');
    });
  }

  it('refuses a record of a machine newer than this reader, as a resume does', () => {
    const envelope = JSON.parse(corpus.find((c) => c.name === 'completed')!.text) as AgentRunEnvelope;
    const future = { ...envelope, machine: { ...envelope.machine, version: RUN_MACHINE_VERSION + 1 } };
    expect(() => describeRun(future)).toThrow(expect.objectContaining({ name: 'CheckpointVersionError', code: 'checkpoint_version_unsupported' }));
    expect(() => describeRun({ ...envelope, snapshot: null } as never)).toThrow(expect.objectContaining({ code: 'invalid_envelope' }));
    expect(() => describeRun(null as never)).toThrow(expect.objectContaining({ code: 'invalid_envelope' }));
  });
});

describe('describeRun on a live run', () => {
  it('shows the step history of a run suspended on an approval and a client call', async () => {
    const store = createInMemoryAgentRunStore();
    await streamAgent({ ...agentOptions(suspendingModel()), session: { store, runId: 'live', scope: 's' } }).result;
    const d = describeRun((await store.load('live'))!);
    // The in-memory store does not keep which save wrote what: no revisions on the history.
    expect(d.steps).toEqual([{
      step: 0, textLength: 'Asking both.'.length, savedAt: null,
      calls: [
        { toolCallId: 'call-publish', toolName: 'publish', outcome: 'open', receipt: null, resultSavedAt: null, receiptSavedAt: null },
        { toolCallId: 'call-color', toolName: 'pickColor', outcome: 'open', receipt: null, resultSavedAt: null, receiptSavedAt: null },
      ],
    }]);
    expect(d.calls.map((c) => [c.toolName, c.states])).toEqual([
      ['publish', ['approval.awaitingApproval']],
      ['pickColor', ['effectIdentity.awaitingClientResult']],
    ]);
    expect(d.usage.totalTokens).toBeGreaterThan(0);
  });

  it('sums the execution ledger a run under a budget checkpoints, and has none without one', async () => {
    const store = createInMemoryAgentRunStore();
    const execution = createExecutionContext({
      prices: { 'mock:mock-model': { input: 1, output: 2 } },
      budget: { usd: 1, estimate: { inputTokens: 1000, outputTokens: 1000 } },
    });
    const model = createMockModel({ responses: [{ text: 'Done.', usage: { inputTokens: 1000, outputTokens: 500 } }] });
    await runAgent({ model, prompt: 'Go.', execution, session: { store, runId: 'budgeted', scope: 's' } });
    const d = describeRun((await store.load('budgeted'))!);
    expect(d.ledger).toMatchObject({ subtree: false, entries: 1, totals: { committed: { usd: 0.002 } } });
    expect(d.ledger!.totals.reserved.usd).toBe(0);
    await streamAgent({ ...agentOptions(suspendingModel()), session: { store, runId: 'plain', scope: 's' } }).result;
    expect(describeRun((await store.load('plain'))!).ledger).toBeNull();
  });

  it('reads nested state values as dotted paths', () => {
    expect(statePaths('a')).toEqual(['a']);
    expect(statePaths({ a: 'b', c: { d: 'e' } })).toEqual(['a.b', 'c.d.e']);
    expect(statePaths({})).toEqual([]);
  });
});

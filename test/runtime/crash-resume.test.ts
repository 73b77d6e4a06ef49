/**
 * Write-ahead, never re-invoke: a process that dies right after any save, or
 * right before the next one, leaves a record from which a fresh runtime goes
 * on without running a completed effect twice. XState restarts every invoked
 * actor that was in flight when the snapshot was taken; the permit issued by
 * the `executing` receipt write is what keeps a restarted effect from running.
 */
import { describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentOptions, type AgentRunEnvelope, type AgentRunStore,
} from 'cairn/agent';
import { createMockModel, type MockTurn } from 'cairn/testing';
import type { ModelRequest } from '../../src/models/types.js';
import { plantedBugs } from '../../src/runtime/test-switches.js';

type Ledger = Record<string, number>;

/** The model decides from the conversation, so a resumed run meets the same script wherever it restarts. */
function scriptedTurn(request: ModelRequest): MockTurn {
  const toolMessages = request.messages.filter((m) => m.role === 'tool').length;
  if (toolMessages === 0) {
    return { toolCalls: [
      { toolName: 'charge', args: { order: 7 }, toolCallId: 'c1' },
      { toolName: 'note', args: { text: 'charged' }, toolCallId: 'c2' },
    ] };
  }
  if (toolMessages === 2) return { toolCalls: [{ toolName: 'ship', args: { order: 7 }, toolCallId: 'c1' }] };
  return { text: 'Order 7 charged and shipped.' };
}

function options(store: AgentRunStore, ledger: Ledger): AgentOptions {
  const effect = (name: string) => (_args: unknown, ctx: { toolCallId: string; modelStep: number }) => {
    const key = `${name}@${ctx.modelStep}:${ctx.toolCallId}`;
    ledger[key] = (ledger[key] ?? 0) + 1;
    return `${name} done`;
  };
  return {
    model: createMockModel({ responses: Array.from({ length: 12 }, () => scriptedTurn), strict: false }),
    prompt: 'Charge and ship order 7.',
    bindingId: 'crash-v1',
    session: { store, runId: 'order-7', scope: 'tenant-a' },
    deps: { clock: { now: () => 1_000 }, generateId: (() => { let n = 0; return () => `id-${n++}`; })() },
    tools: {
      charge: { parameters: { type: 'object' }, execute: effect('charge') },
      ship: { parameters: { type: 'object' }, execute: effect('ship') },
      note: { parameters: { type: 'object' }, replay: 'idempotent', execute: effect('note') },
    },
  };
}

interface Cut {
  envelope: AgentRunEnvelope;
  /** Effects that had run when the process died. */
  ledger: Ledger;
  when: 'after-save' | 'before-next-save';
}

async function recordCuts(): Promise<{ cuts: Cut[]; ledger: Ledger }> {
  const inner = createInMemoryAgentRunStore();
  const ledger: Ledger = {};
  const cuts: Cut[] = [];
  let last: AgentRunEnvelope | undefined;
  const store: AgentRunStore = {
    load: (id) => inner.load(id),
    async save(envelope) {
      if (last) cuts.push({ envelope: last, ledger: { ...ledger }, when: 'before-next-save' });
      await inner.save(envelope);
      last = JSON.parse(JSON.stringify(envelope)) as AgentRunEnvelope;
      cuts.push({ envelope: last, ledger: { ...ledger }, when: 'after-save' });
    },
  };
  const result = await runAgent(options(store, ledger));
  expect(result.status).toBe('completed');
  return { cuts, ledger };
}

interface MatrixOutcome {
  cuts: number;
  completions: number;
  reconciliations: number;
  doubleEffects: string[];
}

/** Resumes from every cut; collects what happened instead of asserting, so a planted bug can be shown to fail it. */
async function runMatrix(): Promise<MatrixOutcome> {
  const { cuts } = await recordCuts();
  const outcome: MatrixOutcome = { cuts: cuts.length, completions: 0, reconciliations: 0, doubleEffects: [] };
  for (const cut of cuts) {
    const store = createInMemoryAgentRunStore();
    await store.save({ ...cut.envelope, revision: 1 });
    const ledger = { ...cut.ledger };
    const resumed = await resumeAgent(options(store, ledger) as never);
    for (const key of ['charge@0:c1', 'ship@1:c1']) {
      if ((ledger[key] ?? 0) > 1) outcome.doubleEffects.push(`${key} after revision ${cut.envelope.revision} (${cut.when})`);
    }
    if (resumed.status === 'completed') outcome.completions++;
    else if (resumed.status === 'stopped' && resumed.reason === 'tool-reconciliation-required') outcome.reconciliations++;
  }
  return outcome;
}

describe('resume after a crash at every persistence point', () => {
  it('with the permit check planted away, the same matrix runs effects twice', async () => {
    plantedBugs.ignoreEffectPermit = true;
    try {
      const outcome = await runMatrix();
      expect(outcome.doubleEffects.length).toBeGreaterThan(0);
    } finally {
      plantedBugs.ignoreEffectPermit = false;
    }
    const guarded = await runMatrix();
    console.log(`crash matrix: ${guarded.cuts} cuts, ${guarded.completions} completed, ${guarded.reconciliations} stopped for reconciliation`);
    expect(guarded.doubleEffects).toEqual([]);
  });

  it('never runs a completed effect twice and never guesses an unknown one', async () => {
    const { cuts, ledger: clean } = await recordCuts();
    expect(clean).toEqual({ 'charge@0:c1': 1, 'note@0:c2': 1, 'ship@1:c1': 1 });
    expect(cuts.length).toBeGreaterThan(10);
    let reconciliations = 0;
    let completions = 0;
    for (const cut of cuts) {
      const store = createInMemoryAgentRunStore();
      await store.save({ ...cut.envelope, revision: 1 });
      const ledger = { ...cut.ledger };
      const label = `cut ${cut.when} revision ${cut.envelope.revision} (${JSON.stringify(cut.envelope.snapshot && (cut.envelope.snapshot as { value: unknown }).value)})`;
      const resumed = await resumeAgent(options(store, ledger) as never);
      // A plain tool never runs twice; the idempotent one may run again under the same identity.
      expect(ledger['charge@0:c1'] ?? 0, label).toBeLessThanOrEqual(1);
      expect(ledger['ship@1:c1'] ?? 0, label).toBeLessThanOrEqual(1);
      expect(ledger['note@0:c2'] ?? 0, label).toBeLessThanOrEqual(2);
      if (resumed.status === 'completed') {
        completions++;
        expect(resumed.text, label).toBe('Order 7 charged and shipped.');
        expect(ledger['charge@0:c1'], label).toBe(1);
        expect(ledger['ship@1:c1'], label).toBe(1);
      } else {
        // The only other end: an effect that started and whose outcome nobody recorded.
        expect(resumed.status, label).toBe('stopped');
        if (resumed.status !== 'stopped') continue;
        expect(resumed.reason, label).toBe('tool-reconciliation-required');
        const unknown = (resumed.unknownEffects ?? []).map((r) => `${r.toolName}@${r.modelStep}:${r.toolCallId}`);
        expect(unknown.length, label).toBeGreaterThan(0);
        for (const key of unknown) expect(key === 'charge@0:c1' || key === 'ship@1:c1', label).toBe(true);
        reconciliations++;
      }
    }
    // The matrix reached both kinds of end, so it cannot pass vacuously.
    expect(completions).toBeGreaterThan(5);
    expect(reconciliations).toBeGreaterThan(0);
  });
});

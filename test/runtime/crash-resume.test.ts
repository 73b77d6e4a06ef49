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
import { createMockModel } from 'cairn/testing';
import { PLANTED_BUGS, type PlantedBugs } from '../../src/runtime/test-switches.js';
import { orderScript } from '../support/order-script.js';

type Ledger = Record<string, number>;

const scriptedTurn = orderScript;

function options(store: AgentRunStore, ledger: Ledger, bugs?: PlantedBugs): AgentOptions {
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
    deps: {
      clock: { now: () => 1_000 }, generateId: (() => { let n = 0; return () => `id-${n++}`; })(),
      ...(bugs ? { [PLANTED_BUGS]: bugs } : {}),
    },
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

async function recordCuts(bugs?: PlantedBugs): Promise<{ cuts: Cut[]; ledger: Ledger }> {
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
  const result = await runAgent(options(store, ledger, bugs));
  expect(result.status).toBe('completed');
  return { cuts, ledger };
}

interface MatrixOutcome {
  cuts: number;
  completions: number;
  reconciliations: number;
  doubleEffects: string[];
}

/**
 * Resumes from every cut. A stop for reconciliation is answered the way a
 * careful operator would: from the ledger, the effect's own system of record
 * (it landed: record its output; it did not: run it once more).
 */
async function runMatrix(bugs?: PlantedBugs): Promise<MatrixOutcome> {
  const { cuts } = await recordCuts(bugs);
  const outcome: MatrixOutcome = { cuts: cuts.length, completions: 0, reconciliations: 0, doubleEffects: [] };
  for (const cut of cuts) {
    const store = createInMemoryAgentRunStore();
    await store.save({ ...cut.envelope, revision: 1 });
    const ledger = { ...cut.ledger };
    let resumed = await resumeAgent(options(store, ledger, bugs) as never);
    if (resumed.status === 'stopped' && resumed.reason === 'tool-reconciliation-required') {
      outcome.reconciliations++;
      const unknown = resumed.unknownEffects ?? [];
      const landed = unknown.filter((r) => (ledger[`${r.toolName}@${r.modelStep}:${r.toolCallId}`] ?? 0) > 0);
      const missing = unknown.filter((r) => !landed.includes(r));
      resumed = await resumeAgent({
        ...options(store, ledger, bugs),
        reconciledToolResults: landed.map((r) => ({ toolCallId: r.toolCallId, output: `${r.toolName} done` })),
        retryToolCallIds: missing.map((r) => r.toolCallId),
      } as never);
    }
    for (const key of ['charge@0:c1', 'ship@1:c1']) {
      if ((ledger[key] ?? 0) > 1) outcome.doubleEffects.push(`${key} after revision ${cut.envelope.revision} (${cut.when})`);
    }
    if (resumed.status === 'completed' && resumed.text === 'Order 7 charged and shipped.' &&
        ledger['charge@0:c1'] === 1 && ledger['ship@1:c1'] === 1) outcome.completions++;
  }
  return outcome;
}

describe('resume after a crash at every persistence point', () => {
  it('every cut ends completed with each effect run exactly once', async () => {
    const outcome = await runMatrix();
    console.log(`crash matrix: ${outcome.cuts} cuts, ${outcome.completions} completed, ${outcome.reconciliations} needed reconciliation`);
    expect(outcome.doubleEffects).toEqual([]);
    expect(outcome.completions).toBe(outcome.cuts);
    // Both kinds of resume were exercised, so the matrix cannot pass vacuously.
    expect(outcome.cuts).toBeGreaterThan(15);
    expect(outcome.reconciliations).toBeGreaterThan(0);
  });

  it('fails with the executing receipt write switched off', async () => {
    const outcome = await runMatrix({ skipExecutingReceipt: true });
    expect(outcome.doubleEffects.length).toBeGreaterThan(0);
  });

  it('fails with the effect permit switched off: a reconciled call restored mid-effect runs again', async () => {
    const outcome = await runMatrix({ ignoreEffectPermit: true });
    expect(outcome.doubleEffects.length).toBeGreaterThan(0);
  });
});

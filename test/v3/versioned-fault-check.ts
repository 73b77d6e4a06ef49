/**
 * The invariants of the versioned-memory crash property (test/property/versioned-memory-crash.test.ts),
 * checked after each faulted drive of test/v3/versioned-fault-drive.ts against the fault-free drive.
 */
import { expect } from 'vitest';
import { describeScenario, type Fault, type Report, type Scenario } from './versioned-fault-drive.js';

/** Receipt status > intent status, as one save may hold them. */
const PROTOCOL = new Set(['executing>intended', 'executed>committed', 'completed>acknowledged', 'failed>failed', 'failed>acknowledged']);

export const writesOf = (s: Scenario) => s.turns.flat().filter((c) => c.kind !== 'lookup').length;
const lookupsOf = (s: Scenario) => s.turns.flat().filter((c) => c.kind === 'lookup').length;
const memoryTexts = (r: Report) => r.revisions.filter((v) => !v.operationId.startsWith('seed-op-')).map((v) => `${v.status}:${v.text}`).sort();

export function checkDrive(scenario: Scenario, fault: Fault, ref: Report, run: Report): void {
  const where = `scenario ${describeScenario(scenario)}; fault ${JSON.stringify(fault)}; trace ${run.trace.join(' | ')}`;
  expect(run.fired, `the fault never fired; ${where}`).toBe(true);
  const record = run.record;
  expect(record, `no record; ${where}`).toBeDefined();
  // (1) Exactly once.
  const byOp = new Map<string, string[]>();
  for (const v of run.revisions) byOp.set(v.operationId, [...(byOp.get(v.operationId) ?? []), `${v.id}@${v.revision}`]);
  for (const [op, written] of byOp) {
    const receipt = run.receipts.get(op);
    expect(receipt, `(1) revisions of operation ${op} without a receipt; ${where}`).toBeDefined();
    expect(written.sort(), `(1) operation ${op} wrote other revisions than its receipt names; ${where}`)
      .toEqual(receipt!.records.map((r) => `${r.id}@${r.revision}`).sort());
    expect(receipt!.records.length, `(1) receipt of ${op} plans ${receipt!.planned}; ${where}`).toBe(receipt!.planned);
  }
  // Every operation that wrote belongs to the run (one of its intents) or was seeded before it.
  const intentOps = new Set((record!.memoryIntents ?? []).map((i) => i.operationId));
  for (const op of byOp.keys()) expect(op.startsWith('seed-op-') || intentOps.has(op), `(1) operation ${op} is no intent of the run; ${where}`).toBe(true);
  const committed = [...run.receipts.keys()].filter((op) => byOp.has(op) || run.receipts.get(op)!.planned === 0);
  expect(run.scopeRevision, `(1) scope revision against the receipts ${JSON.stringify(committed)}; ${where}`).toBe(new Set(committed).size);
  const texts = run.revisions.filter((v) => v.text !== null).map((v) => `${v.operationId}|${v.text}`);
  expect(new Set(texts).size, `(1) a text written twice by one operation: ${texts.join(', ')}; ${where}`).toBe(texts.length);
  // (2) Every intent settled.
  const intents = record!.memoryIntents ?? [];
  for (const intent of intents) {
    const receipt = run.receipts.get(intent.operationId);
    if (intent.status === 'acknowledged') {
      expect(receipt, `(2) acknowledged ${intent.operationId} has no receipt; ${where}`).toBeDefined();
    } else {
      expect(intent.status, `(2) intent ${intent.operationId} left ${intent.status}: ${JSON.stringify(intent)}; ${where}`).toBe('failed');
      const error = intent.error as { message?: unknown } | undefined;
      expect(typeof error?.message, `(2) failed intent ${intent.operationId} without a reason: ${JSON.stringify(intent)}; ${where}`).toBe('string');
      expect(receipt, `(2) failed intent ${intent.operationId} whose commit landed; ${where}`).toBeUndefined();
    }
  }
  expect(intents.length, `(2) intents ${JSON.stringify(intents)}; ${where}`).toBe((ref.record!.memoryIntents ?? []).length);
  expect(new Set(intents.map((i) => i.operationId)), `(2) intents' operations; ${where}`).toEqual(new Set(ref.record!.memoryIntents!.map((i) => i.operationId)));
  // (2) Each intent moves with its tool receipt, in the same save: intended with the executing receipt, committed with
  // the executed one, acknowledged with the completed one; a failed call fails it, unless its commit had landed.
  for (const pair of run.pairs) expect(PROTOCOL.has(pair), `(2) a save held a tool receipt and its intent as ${pair}; ${where}`).toBe(true);
  // (3) The run's outcome is the fault-free one.
  expect(record!.status, `(3) status; ${where}`).toBe(ref.record!.status);
  // The stored result (a leg whose save threw after it landed answers failed in hand; the record is what a resume answers).
  expect(record!.result?.status, `(3) stored result; ${where}`).toBe(ref.result!.status);
  expect((record!.result as { text?: string } | undefined)?.text, `(3) answer; ${where}`).toBe((ref.result as { text?: string }).text);
  expect(run.effects.size, `(3) lookups; ${where}`).toBe(lookupsOf(scenario));
  // An idempotent tool may run again after a lost save (that is what `replay: 'idempotent'` allows); each call ran.
  for (const [key, n] of run.effects) expect(n, `(3) lookup ${key} ran ${n} times; ${where}`).toBeGreaterThanOrEqual(1);
  if (intents.every((i) => i.status === 'acknowledged')) expect(memoryTexts(run), `(3) memory; ${where}`).toEqual(memoryTexts(ref));
}


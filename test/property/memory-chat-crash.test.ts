/**
 * The crash property for memory and chat: random conversations (one or two
 * runs, each with tool turns, some gated by an approval, some stopping at
 * max-steps, some ended by a cancel queued at their suspension, with memory
 * facts to extract, a stored memory to delete, and a plain or conditional
 * chat store), each driven once without a fault and
 * then once for EVERY write the fault-free drive made (every save of the
 * run's record, the terminal commit of a stop or a cancel and the queued
 * cancel's own save included, memory mutation and chat write), with that write crashing
 * the process before or after it landed, or throwing before or after it
 * landed. A careful operator goes on (resume, approvals, reconciled or
 * retried calls, a fresh process) and calls reconcileAgentRun({ session,
 * memory, chat }) once each run has ended.
 *
 * Invariants, after every drive:
 *  1. No memory mutation applied twice: each (operation id, text) landed at
 *     most once, and the store holds at most one record of each.
 *  2. Every extraction is settled: a completed run's extraction is completed,
 *     or failed with a code (a partial pass: memory_extraction_partial);
 *     never pending or planned. A stopped (or cancelled) run has none, and wrote no memory.
 *  3. No chat message lost or duplicated: the chat holds exactly the last
 *     run's transcript, each message under the id of the run that wrote it
 *     first (`<runId>:<index>`), and each run's record says its projection
 *     is written up to its whole transcript.
 *  4. The runs end as without the fault (same statuses), every plain effect
 *     ran exactly once, and when every extraction completed, memory holds
 *     the same facts and the conversation is the same as without the fault
 *     (a partial extraction is never run again, so a later run may recall
 *     less).
 *
 * Re-run a failure with FC_SEED=<seed> (and FC_PATH=<path>); raise the
 * number of scenarios with CAIRN_PROPERTY_RUNS.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { replayParams } from '../support/fc-seed.js';
import { driveMemChat, type MemChatReport } from './memory-chat-drive.js';
import { describeMemChat, endsEarly, everyFault, memChatScenarioArb, type MemChatScenario, type WriteFault, type WriteKind } from './memory-chat-world.js';

const NUM_RUNS = Math.max(20, Number(process.env.CAIRN_PROPERTY_RUNS ?? 0) || 0);
const TIMEOUT = Math.max(120_000, NUM_RUNS * 6_000);

interface Tally {
  scenarios: number;
  drives: number;
  byKind: Record<WriteKind, number>;
  restarts: number;
  settled: number;
  partial: number;
  /** Faulted drives whose fault hit the terminal commit of a stop or a cancel (the chart's `stopping`), or the cancel's own save. */
  stopCommits: number;
  cancelSaves: number;
}

const texts = (r: MemChatReport) => r.memories.map((m) => m.text).sort();

function check(scenario: MemChatScenario, fault: WriteFault, ref: MemChatReport, run: MemChatReport): void {
  const where = `scenario ${describeMemChat(scenario)}; fault ${JSON.stringify(fault)} (a ${ref.writes[(fault as { at?: number }).at! - 1] ?? '?'}); trace ${run.trace.join(' | ')}`;
  expect(run.violations, where).toEqual([]);
  // (1) Each mutation landed at most once; the store holds one record per operation and text.
  for (const [key, n] of Object.entries(run.landed)) expect(n, `(1) ${key} landed ${n} times; ${where}`).toBeLessThanOrEqual(1);
  const seen = new Set<string>();
  for (const m of run.memories) {
    const key = `${m.metadata.cairn?.operationId ?? '-'}|${m.text}`;
    expect(seen.has(key), `(1) ${key} stored twice; ${where}`).toBe(false);
    seen.add(key);
  }
  // (2) Every extraction settled; a stopped run extracted nothing.
  const operations = new Set<string>();
  run.records.forEach((record, leg) => {
    expect(record, `(2) leg ${leg} has no record; ${where}`).toBeDefined();
    const extraction = record!.memory?.extraction;
    if (endsEarly(scenario.legs[leg]!)) {
      expect(extraction, `(2) stopped leg ${leg} extracted; ${where}`).toBeUndefined();
      return;
    }
    expect(extraction, `(2) leg ${leg} has no extraction; ${where}`).toBeDefined();
    operations.add(extraction!.operationId);
    if (extraction!.status !== 'completed') {
      expect(extraction!.status, `(2) leg ${leg} extraction left ${extraction!.status}; ${where}`).toBe('failed');
      expect(typeof extraction!.error?.code, `(2) leg ${leg} failed without a code; ${where}`).toBe('string');
    } else {
      // Completed: every write it planned is in the store, once: as many records as the fault-free run's extraction left.
      const refOp = ref.records[leg]!.memory!.extraction!.operationId;
      const want = ref.memories.filter((m) => m.metadata.cairn?.operationId === refOp).length;
      const stored = run.memories.filter((m) => m.metadata.cairn?.operationId === extraction!.operationId).length;
      expect(stored, `(2) leg ${leg} completed (${JSON.stringify(extraction)}) with ${stored} records, not ${want}; ${where}`).toBe(want);
    }
  });
  for (const m of run.memories) {
    const op = m.metadata.cairn?.operationId;
    if (op !== undefined) expect(operations.has(op), `(2) record of an unknown operation ${op}; ${where}`).toBe(true);
  }
  // (3) The chat holds the conversation exactly once, under the fault-free ids.
  expect(run.chat?.messages, `(3) chat messages; ${where}`).toEqual(run.messages);
  // Each message keeps the id of the run that first wrote it: `<runId>:<index>`.
  const lengths = run.records.map((r) => (r!.result?.messages ?? []).length);
  const ids = (run.messages ?? []).map((_, i) => `mleg-${lengths.findIndex((n) => i < n)}:${i}`);
  expect(run.chat?.messageIds, `(3) chat ids; ${where}`).toEqual(ids);
  expect(new Set(run.chat?.messageIds).size, `(3) duplicate chat ids; ${where}`).toBe(run.chat?.messageIds.length);
  run.records.forEach((record, leg) => {
    const length = (record!.result?.messages ?? []).length;
    expect(record!.chat, `(3) leg ${leg} chat state; ${where}`).toMatchObject({ status: 'written', cursor: length });
  });
  // (4) As without the fault.
  expect(run.statuses, `(4) statuses; ${where}`).toEqual(ref.statuses);
  run.ledgers.forEach((ledger, leg) => {
    for (const [key, n] of Object.entries(ledger)) expect(n, `(4) effect ${key} of leg ${leg} ran ${n} times; ${where}`).toBe(1);
    expect(Object.keys(ledger).length, `(4) effects of leg ${leg}; ${where}`).toBe(Object.keys(ref.ledgers[leg]!).length);
  });
  const allCompleted = run.records.every((r, leg) => endsEarly(scenario.legs[leg]!) || r!.memory!.extraction!.status === 'completed');
  // A partial extraction is never run again, so a later run may recall less: then only the shape is the same.
  if (allCompleted) {
    expect(texts(run), `(4) memories; ${where}`).toEqual(texts(ref));
    expect(run.messages, `(4) conversation; ${where}`).toEqual(ref.messages);
  } else expect(run.messages?.length, `(4) conversation; ${where}`).toBeLessThanOrEqual(ref.messages?.length ?? 0);
}

function property(tally: Tally, breakConfirm = false) {
  return fc.asyncProperty(memChatScenarioArb, async (scenario) => {
    const ref = await driveMemChat(scenario, { kind: 'none' });
    expect(ref.violations, `fault-free drive of ${describeMemChat(scenario)}: ${ref.trace.join(' | ')}`).toEqual([]);
    tally.scenarios++;
    for (const fault of everyFault(ref.writes.length)) {
      const run = await driveMemChat(scenario, fault, breakConfirm);
      tally.drives++;
      tally.byKind[ref.writes[(fault as { at: number }).at - 1]!]++;
      const state = ref.states[(fault as { at: number }).at - 1];
      if (state === 'stopping') tally.stopCommits++;
      if (state === 'cancel') tally.cancelSaves++;
      tally.restarts += run.restarts;
      tally.settled += run.settled;
      tally.partial += run.records.filter((r) => r?.memory?.extraction?.error?.code === 'memory_extraction_partial').length;
      expect(run.fired, `fault ${JSON.stringify(fault)} never fired in ${describeMemChat(scenario)}`).toBe(true);
      check(scenario, fault, ref, run);
    }
  });
}

const newTally = (): Tally => ({
  scenarios: 0, drives: 0, byKind: { 'run-save': 0, 'memory-write': 0, 'chat-write': 0 }, restarts: 0, settled: 0, partial: 0, stopCommits: 0, cancelSaves: 0,
});

describe('crash property: memory and chat, a fault at every write', () => {
  it(`no memory mutation twice, every extraction settled, no chat message lost or duplicated (${NUM_RUNS} scenarios)`, async () => {
    const tally = newTally();
    const started = performance.now();
    const outcome = await fc.check(property(tally), replayParams<[MemChatScenario]>(NUM_RUNS));
    console.log(`memory/chat crash property: seed ${outcome.seed}; ${tally.scenarios} scenarios, ${tally.drives} faulted drives in ${Math.round(performance.now() - started)} ms; ` +
      `faults by write ${JSON.stringify(tally.byKind)} (at a stop's terminal commit ${tally.stopCommits}, at a queued cancel's save ${tally.cancelSaves}); ` +
      `fresh processes ${tally.restarts}, reconciliations that settled something ${tally.settled}, partial extractions ${tally.partial}`);
    if (outcome.failed) throw new Error(`${fc.defaultReportMessage(outcome) ?? 'the property failed'}\n${String(outcome.errorInstance)}`);
    if (process.env.FC_PATH === undefined) {
      // Non-vacuity: faults hit every kind of write, and reconciliation had work to do.
      for (const kind of Object.keys(tally.byKind) as WriteKind[]) expect(tally.byKind[kind], kind).toBeGreaterThan(0);
      expect(tally.settled).toBeGreaterThan(0);
      expect(tally.partial).toBeGreaterThan(0);
      expect(tally.stopCommits).toBeGreaterThan(0);
      expect(tally.cancelSaves).toBeGreaterThan(0);
    }
  }, TIMEOUT);

  it('fails when the reconciliation cannot see what an extraction wrote (it would apply the mutations again)', async () => {
    const outcome = await fc.check(property(newTally(), true), replayParams<[MemChatScenario]>(20, false));
    if (outcome.failed) console.log(`planted bug caught after ${outcome.numRuns} scenarios: ${String(outcome.errorInstance).split('\n')[0]}`);
    expect(outcome.failed).toBe(true);
    expect(String(outcome.errorInstance)).toMatch(/\(1\)|\(4\) memories/);
  }, TIMEOUT);
});

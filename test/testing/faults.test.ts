/**
 * The fault-injection harness of cairn/testing: the faulty store, the crash
 * plan, the cloned store and the ledger tools, each checked against the
 * engine's documented behaviour (spec: "When the store fails", "Idempotent
 * tools", "Strict checkpoints and approval resume").
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, receiptKey, resumeAgent, runAgent,
  type AgentOptions, type AgentResult, type AgentRunEnvelope, type AgentRunStore, type AgentTools, type LanguageModel,
} from 'cairn/agent';
import {
  cloneStore, countCrashPoints, createCrashPlan, createFaultyStore, createFencedMapStore, createLedger, createMockModel,
  injectedFaultError, isInjectedFault, ledgerKey, ledgerTool, listCrashPoints,
  type CrashPlan, type CrashPoint, type Ledger,
} from 'cairn/testing';
import { orderScript } from '../support/order-script.js';

const RUN = 'order-7';
const SCOPE = 'tenant-a';

const scriptedTurn = orderScript;

const freshModel = () => createMockModel({ responses: [scriptedTurn], strict: false });

function tools(ledger: Ledger): AgentTools {
  return {
    charge: ledgerTool(ledger, 'charge'),
    note: ledgerTool(ledger, 'note', { idempotent: true }),
    ship: ledgerTool(ledger, 'ship'),
  };
}

interface Parts {
  store: AgentRunStore;
  ledger: Ledger;
  model?: LanguageModel;
  tools?: AgentTools;
}

function options({ store, ledger, model, tools: given }: Parts): AgentOptions {
  let n = 0;
  return {
    model: model ?? freshModel(),
    prompt: 'Charge and ship order 7.',
    bindingId: 'faults-v1',
    session: { store, runId: RUN, scope: SCOPE },
    deps: { clock: { now: () => 1_000 }, generateId: () => `id-${n++}` },
    tools: given ?? tools(ledger),
  };
}

/** A run driven entirely through a crash plan's wrappers. */
function crashingRun(plan: CrashPlan, store: AgentRunStore, ledger: Ledger, toolset = tools(ledger)): Promise<AgentResult> {
  return runAgent(options({
    store: plan.wrapStore(store),
    ledger,
    model: plan.wrapModel(freshModel()),
    tools: plan.wrapTools(toolset),
  }));
}

/** A fresh runtime: a new store object over a copy of the data, a new model, the same world (ledger). */
async function resumeFresh(store: AgentRunStore, ledger: Ledger, toolset = tools(ledger)) {
  const fresh = await cloneStore(store, [RUN]);
  return { fresh, result: await resumeAgent({ ...options({ store: fresh, ledger, tools: toolset }), session: { store: fresh, runId: RUN, scope: SCOPE } }) };
}

const tick = (ms: number) => new Promise<'timer'>((resolve) => setTimeout(() => resolve('timer'), ms));

const CLEAN_LEDGER = { 'charge@0:c1': 1, 'note@0:c2': 1, 'ship@1:c1': 1 };

describe('createFaultyStore', () => {
  it('passes calls through without a plan, counting them and keeping deep copies of what landed', async () => {
    const inner = createInMemoryAgentRunStore();
    const store = createFaultyStore(inner, {});
    const ledger = createLedger();
    const result = await runAgent(options({ store, ledger }));
    expect(result.status).toBe('completed');
    expect(ledger.entries()).toEqual(CLEAN_LEDGER);
    expect(store.saves).toBeGreaterThan(3);
    expect(store.history).toHaveLength(store.saves);
    expect(store.history.map((e) => e.revision)).toEqual(store.history.map((_, i) => i + 1));
    expect(store.injected).toEqual([]);
    const stored = await inner.load(RUN);
    expect(stored).toEqual(store.history.at(-1));
    // The copies are the store's own: changing one touches neither the inner store nor another copy.
    store.history[0]!.status = 'failed';
    expect((await inner.load(RUN))!.status).toBe('completed');
    expect(store.loads).toBe(0);
    await resumeAgent({ ...options({ store, ledger }), session: { store, runId: RUN, scope: SCOPE } });
    expect(store.loads).toBe(1);
  });

  it("'reject' on the 2nd save: nothing of it lands and the run resolves failed with persistence_failed", async () => {
    const inner = createInMemoryAgentRunStore();
    const store = createFaultyStore(inner, { failSave: { at: 2, mode: 'reject' } });
    const ledger = createLedger();
    const result = await runAgent(options({ store, ledger }));
    expect(result.status).toBe('failed');
    if (result.status !== 'failed') return;
    expect(result.error.code).toBe('persistence_failed');
    expect(result.error.message).toContain('injected store failure');
    expect(store.saves).toBe(2);
    expect(store.injected).toEqual([{ method: 'save', attempt: 2, mode: 'reject', runId: RUN }]);
    expect(store.history.map((e) => e.revision)).toEqual([1]);
    expect((await inner.load(RUN))!.revision).toBe(1);
    // The failure was not stored: the run goes on from its last checkpoint and completes.
    const { result: resumed } = await resumeFresh(inner, ledger);
    expect(resumed.status).toBe('completed');
    expect(ledger.entries()).toEqual(CLEAN_LEDGER);
  });

  it("'apply-then-throw' lands the write the caller sees fail: the store is one revision ahead of the run", async () => {
    // The first save that records the results of both calls of the first step.
    const recorder = createFaultyStore(createInMemoryAgentRunStore());
    await runAgent(options({ store: recorder, ledger: createLedger() }));
    const at = 1 + recorder.history.findIndex((e) =>
      [receiptKey(0, 'c1'), receiptKey(0, 'c2')].every((key) => e.receipts[key]?.status === 'completed'));
    expect(at).toBeGreaterThan(2);

    const inner = createInMemoryAgentRunStore();
    const store = createFaultyStore(inner, { failSave: { at, mode: 'apply-then-throw' } });
    const ledger = createLedger();
    const result = await runAgent(options({ store, ledger }));
    expect(result.status).toBe('failed');
    if (result.status !== 'failed') return;
    expect(result.error.code).toBe('persistence_failed');
    expect(store.saves).toBe(at);
    expect(store.injected).toEqual([{ method: 'save', attempt: at, mode: 'apply-then-throw', runId: RUN }]);
    // The run's last save that it saw succeed was revision at - 1; the store holds revision at.
    expect(store.history.map((e) => e.revision)).toEqual(Array.from({ length: at }, (_, i) => i + 1));
    const stored = (await inner.load(RUN))!;
    expect(stored.revision).toBe(at);
    expect(stored).toEqual(store.history[at - 1]);
    // A resume goes on from what landed, and no completed effect runs twice.
    const { result: resumed } = await resumeFresh(inner, ledger);
    expect(resumed.status).toBe('completed');
    expect(ledger.entries()).toEqual(CLEAN_LEDGER);
  });

  it("'apply-then-throw' on the executing receipt's save: the tool never ran, yet the resume cannot know", async () => {
    const recorder = createFaultyStore(createInMemoryAgentRunStore());
    await runAgent(options({ store: recorder, ledger: createLedger() }));
    const at = 1 + recorder.history.findIndex((e) => e.receipts[receiptKey(0, 'c1')] !== undefined);
    expect(at).toBeGreaterThan(1);

    const inner = createInMemoryAgentRunStore();
    const store = createFaultyStore(inner, { failSave: { at, mode: 'apply-then-throw' } });
    const ledger = createLedger();
    const result = await runAgent(options({ store, ledger }));
    expect(result.status === 'failed' && result.error.code).toBe('persistence_failed');
    expect(ledger.count('charge@0:c1')).toBe(0);
    expect((await inner.load(RUN))!.receipts[receiptKey(0, 'c1')]?.status).toBe('executing');
    const { result: resumed } = await resumeFresh(inner, ledger);
    expect(resumed.status === 'stopped' && resumed.reason).toBe('tool-reconciliation-required');
    expect(ledger.count('charge@0:c1')).toBe(0);
  });

  it("'hang' keeps the run pending forever and records the hung call", async () => {
    const inner = createInMemoryAgentRunStore();
    const store = createFaultyStore(inner, { failSave: { at: 2, mode: 'hang' } });
    const ledger = createLedger();
    const run = runAgent(options({ store, ledger }));
    expect(await Promise.race([run.then(() => 'settled' as const), tick(50)])).toBe('timer');
    expect(store.saves).toBe(2);
    expect(store.injected).toEqual([{ method: 'save', attempt: 2, mode: 'hang', runId: RUN }]);
    expect(store.history.map((e) => e.revision)).toEqual([1]);
    // The hung run still holds its claim on `store`; a new store object over the data resumes it.
    const busy = await resumeAgent({ ...options({ store, ledger }), session: { store, runId: RUN, scope: SCOPE } });
    expect(busy.status === 'failed' && busy.error.code).toBe('run_busy');
    const { result: resumed } = await resumeFresh(inner, ledger);
    expect(resumed.status).toBe('completed');
  });

  it('fails loads too: a resume whose load rejects is refused with the injected error', async () => {
    const inner = createInMemoryAgentRunStore();
    const ledger = createLedger();
    expect((await runAgent(options({ store: inner, ledger }))).status).toBe('completed');
    const store = createFaultyStore(inner, { failLoad: [{ at: 1, mode: 'reject' }, { at: 2, mode: 'hang' }] });
    const resume = () => resumeAgent({ ...options({ store, ledger }), session: { store, runId: RUN, scope: SCOPE } });
    const first = await resume();
    expect(first.status === 'failed' && first.error).toMatchObject({ code: 'injected_fault', message: 'injected store failure' });
    expect(await Promise.race([resume().then(() => 'settled' as const), tick(30)])).toBe('timer');
    expect(store.loads).toBe(2);
    expect(store.injected.map((f) => `${f.method}#${f.attempt}:${f.mode}`)).toEqual(['load#1:reject', 'load#2:hang']);
  });

  it('throws the error the plan names, repeats a fault `times` times, and stops after heal()', async () => {
    const inner = createInMemoryAgentRunStore();
    const disk = new Error('disk full');
    const store = createFaultyStore(inner, { failSave: { at: 1, mode: 'reject', error: disk, times: Infinity } });
    const envelope = (await (async () => {
      const source = createInMemoryAgentRunStore();
      await runAgent(options({ store: source, ledger: createLedger() }));
      return (await source.load(RUN))!;
    })());
    const first = { ...envelope, revision: 1 };
    await expect(store.save(first)).rejects.toBe(disk);
    await expect(store.save(first)).rejects.toBe(disk);
    expect(await inner.load(RUN)).toBeUndefined();
    store.heal();
    await store.save(first);
    expect(store.saves).toBe(3);
    expect(store.history).toHaveLength(1);
    expect(store.injected.map((f) => f.attempt)).toEqual([1, 2]);
  });

  it('makes a plain injected error that is no CairnError, and refuses a malformed plan', () => {
    const error = injectedFaultError();
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe('injected store failure');
    expect(error.code).toBe('injected_fault');
    expect(isInjectedFault(error)).toBe(true);
    expect(isInjectedFault(new Error('x'))).toBe(false);
    const inner = createInMemoryAgentRunStore();
    expect(() => createFaultyStore(inner, { failSave: { at: 0, mode: 'reject' } })).toThrow(TypeError);
    expect(() => createFaultyStore(inner, { failSave: { at: 1, mode: 'explode' as never } })).toThrow(TypeError);
    expect(() => createFaultyStore(inner, { failLoad: [{ at: 1, mode: 'hang', times: 0 }] })).toThrow(TypeError);
  });

  it('keeps its books straight for any plan (property)', async () => {
    const base: AgentRunEnvelope = await (async () => {
      const source = createInMemoryAgentRunStore();
      await runAgent(options({ store: source, ledger: createLedger() }));
      return (await source.load(RUN))!;
    })();
    const fault = fc.record({
      at: fc.integer({ min: 1, max: 8 }),
      mode: fc.constantFrom('reject' as const, 'apply-then-throw' as const),
      times: fc.integer({ min: 1, max: 3 }),
    });
    await fc.assert(fc.asyncProperty(fc.array(fault, { maxLength: 3 }), async (faults) => {
      const inner = createInMemoryAgentRunStore();
      const store = createFaultyStore(inner, { failSave: faults });
      let revision = 0;
      const applied: number[] = [];
      for (let attempt = 1; attempt <= 8; attempt++) {
        const expected = faults.find((f) => attempt >= f.at && attempt < f.at + f.times);
        const outcome = await store.save({ ...base, revision: revision + 1 }).then(() => 'ok', (e: unknown) => e);
        if (expected?.mode === 'reject') {
          expect(isInjectedFault(outcome)).toBe(true);
        } else {
          // Landed: an apply-then-throw landed too, though it reported failure. The caller re-reads the revision.
          expect(outcome === 'ok' || (expected?.mode === 'apply-then-throw' && isInjectedFault(outcome))).toBe(true);
          revision += 1;
          applied.push(revision);
        }
      }
      expect(store.saves).toBe(8);
      expect(store.history.map((e) => e.revision)).toEqual(applied);
      expect((await inner.load(RUN))?.revision).toBe(applied.at(-1));
      expect(store.injected.length).toBe(
        Array.from({ length: 8 }, (_, i) => i + 1).filter((a) => faults.some((f) => a >= f.at && a < f.at + f.times)).length,
      );
    }), { numRuns: 60 });
  });
});

describe('createCrashPlan', () => {
  it('counts every call with a counting-only plan, and lists each crash point before and after', async () => {
    const ledger = createLedger();
    const counts = await countCrashPoints(async (plan) => {
      const result = await crashingRun(plan, createInMemoryAgentRunStore(), ledger);
      expect(result.status).toBe('completed');
    });
    expect(counts.modelCalls).toBe(3);
    expect(counts.tools).toEqual({ charge: 1, note: 1, ship: 1 });
    expect(counts.toolCalls).toBe(3);
    expect(counts.loads).toBe(0);
    expect(counts.saves).toBeGreaterThan(5);
    const points = listCrashPoints(counts);
    expect(points).toHaveLength(2 * (counts.saves + 3 + 3));
    expect(points.slice(0, 2)).toEqual([
      { kind: 'save', index: 1, when: 'before' },
      { kind: 'save', index: 1, when: 'after' },
    ]);
    expect(points).toContainEqual({ kind: 'tool', index: 1, when: 'after', toolName: 'ship' });
  });

  it('race() hands back the result of a run that never reached its crash point', async () => {
    const plan = createCrashPlan({ at: { kind: 'model', index: 99, when: 'before' } });
    const outcome = await plan.race(crashingRun(plan, createInMemoryAgentRunStore(), createLedger()));
    expect(outcome.crashed).toBe(false);
    expect(!outcome.crashed && outcome.result.status).toBe('completed');
    expect(plan.fired).toBe(false);
  });

  it('after a tool effect: the resume stops for reconciliation and the effect ran once', async () => {
    const store = createInMemoryAgentRunStore();
    const ledger = createLedger();
    const plan = createCrashPlan({ at: { kind: 'tool', index: 1, when: 'after', toolName: 'charge' } });
    const outcome = await plan.race(crashingRun(plan, store, ledger));
    expect(outcome).toEqual({ crashed: true });
    expect(plan.fired).toBe(true);
    expect(ledger.count('charge@0:c1')).toBe(1);
    const stored = (await store.load(RUN))!;
    // The `executing` receipt was written before the effect; the receipt that records its result never was.
    expect(stored.receipts[receiptKey(0, 'c1')]?.status).toBe('executing');
    const { result } = await resumeFresh(store, ledger);
    expect(result.status).toBe('stopped');
    if (result.status !== 'stopped') return;
    expect(result.reason).toBe('tool-reconciliation-required');
    expect(result.unknownEffects?.map((r) => ledgerKey(r.toolName, r.modelStep, r.toolCallId))).toEqual(['charge@0:c1']);
    expect(ledger.count('charge@0:c1')).toBe(1);
  });

  it('before an idempotent tool effect: the resume runs it and completes, with one execution', async () => {
    const store = createInMemoryAgentRunStore();
    const ledger = createLedger();
    // `ship` runs alone in its step; made idempotent here, an interrupted call of it may run again by itself.
    const toolset = () => ({ ...tools(ledger), ship: ledgerTool(ledger, 'ship', { idempotent: true }) });
    const plan = createCrashPlan({ at: { kind: 'tool', index: 1, when: 'before', toolName: 'ship' } });
    expect(await plan.race(crashingRun(plan, store, ledger, toolset()))).toEqual({ crashed: true });
    expect(ledger.count('ship@1:c1')).toBe(0);
    const { result } = await resumeFresh(store, ledger, toolset());
    expect(result.status).toBe('completed');
    expect(ledger.entries()).toEqual(CLEAN_LEDGER);
  });

  it('before an idempotent effect whose plain sibling was in flight: the sibling stops the resume', async () => {
    const store = createInMemoryAgentRunStore();
    const ledger = createLedger();
    const plan = createCrashPlan({ at: { kind: 'tool', index: 1, when: 'before', toolName: 'note' } });
    expect(await plan.race(crashingRun(plan, store, ledger))).toEqual({ crashed: true });
    expect(ledger.entries()).toEqual({ 'charge@0:c1': 1 });
    const { result } = await resumeFresh(store, ledger);
    expect(result.status === 'stopped' && result.unknownEffects?.map((r) => r.toolName)).toEqual(['charge']);
    expect(ledger.count('charge@0:c1')).toBe(1);
  });

  it('before a plain tool effect: its executing receipt is stored, so the resume cannot tell and stops', async () => {
    const store = createInMemoryAgentRunStore();
    const ledger = createLedger();
    const plan = createCrashPlan({ at: { kind: 'tool', index: 1, when: 'before', toolName: 'charge' } });
    expect(await plan.race(crashingRun(plan, store, ledger))).toEqual({ crashed: true });
    const { result } = await resumeFresh(store, ledger);
    expect(result.status === 'stopped' && result.reason).toBe('tool-reconciliation-required');
    expect(ledger.count('charge@0:c1')).toBe(0);
  });

  it('before the save of the executing receipt: the resume runs the plain tool once and completes', async () => {
    // Find the save that writes charge's `executing` receipt, with a counting run over a recording store.
    const recorder = createFaultyStore(createInMemoryAgentRunStore());
    await countCrashPoints((plan) => crashingRun(plan, recorder, createLedger()));
    const index = 1 + recorder.history.findIndex((e) => e.receipts[receiptKey(0, 'c1')] !== undefined);
    expect(index).toBeGreaterThan(0);
    expect(recorder.history[index - 1]!.receipts[receiptKey(0, 'c1')]?.status).toBe('executing');

    const store = createInMemoryAgentRunStore();
    const ledger = createLedger();
    const plan = createCrashPlan({ at: { kind: 'save', index, when: 'before' } });
    expect(await plan.race(crashingRun(plan, store, ledger))).toEqual({ crashed: true });
    expect((await store.load(RUN))!.revision).toBe(index - 1);
    expect(ledger.count('charge@0:c1')).toBe(0);
    const { result } = await resumeFresh(store, ledger);
    expect(result.status).toBe('completed');
    expect(ledger.entries()).toEqual(CLEAN_LEDGER);
  });

  it("'after' a save lands it; from then on every wrapped call hangs and nothing more reaches the store", async () => {
    const store = createFaultyStore(createInMemoryAgentRunStore());
    const ledger = createLedger();
    const plan = createCrashPlan({ at: { kind: 'save', index: 2, when: 'after' } });
    const wrapped = plan.wrapStore(store);
    const wrappedTools = plan.wrapTools(tools(ledger));
    const model = plan.wrapModel(freshModel());
    const run = runAgent(options({ store: wrapped, ledger, model, tools: wrappedTools }));
    expect(await plan.race(run)).toEqual({ crashed: true });
    expect(store.saves).toBe(2);
    expect((await store.load(RUN))!.revision).toBe(2);
    const before = plan.counts;
    const hung = await Promise.race([
      wrapped.load(RUN).then(() => 'settled'),
      wrapped.save(store.history[1]!).then(() => 'settled', () => 'settled'),
      model.doGenerate({ messages: [], tools: [], toolChoice: 'auto' }).then(() => 'settled', () => 'settled'),
      (wrappedTools.charge!.execute!({}, { toolCallId: 'x', modelStep: 9, messages: [], signal: new AbortController().signal, context: undefined }) as Promise<unknown>)
        .then(() => 'settled', () => 'settled'),
      run.then(() => 'settled'),
      tick(30),
    ]);
    expect(hung).toBe('timer');
    expect(store.saves).toBe(2);
    expect(plan.counts).toEqual(before);
    expect(ledger.count('charge@9:x')).toBe(0);
  });

  it('at a model call, streamed or not: before, the script is untouched; after, the answer is used up and lost', async () => {
    for (const streamed of [true, false]) {
      for (const when of ['before', 'after'] as const) {
        const label = `${streamed ? 'doStream' : 'doGenerate'} ${when}`;
        const store = createInMemoryAgentRunStore();
        const ledger = createLedger();
        const mock = createMockModel({ responses: [scriptedTurn], strict: false });
        const inner: LanguageModel = streamed
          ? mock
          : { specificationVersion: mock.specificationVersion, provider: mock.provider, modelId: mock.modelId, doGenerate: (r) => mock.doGenerate(r) };
        const plan = createCrashPlan({ at: { kind: 'model', index: 2, when } });
        const run = runAgent(options({ store: plan.wrapStore(store), ledger, model: plan.wrapModel(inner), tools: plan.wrapTools(tools(ledger)) }));
        expect(await plan.race(run), label).toEqual({ crashed: true });
        expect(mock.calls.length, label).toBe(when === 'before' ? 1 : 2);
        expect(ledger.entries(), label).toEqual({ 'charge@0:c1': 1, 'note@0:c2': 1 });
        const { result } = await resumeFresh(store, ledger);
        expect(result.status, label).toBe('completed');
        expect(ledger.entries(), label).toEqual(CLEAN_LEDGER);
      }
    }
  });

  it('refuses a malformed crash point', () => {
    const bad: unknown[] = [
      { kind: 'disk', index: 1, when: 'before' },
      { kind: 'save', index: 0, when: 'before' },
      { kind: 'save', index: 1, when: 'during' },
      { kind: 'save', index: 1, when: 'after', toolName: 'charge' },
    ];
    for (const at of bad) expect(() => createCrashPlan({ at: at as CrashPoint })).toThrow(TypeError);
  });

  it('a crash at every point of the scenario, then a resume in a fresh runtime: no plain effect twice, no guess', async () => {
    const counts = await countCrashPoints((plan) => crashingRun(plan, createInMemoryAgentRunStore(), createLedger()));
    const points = listCrashPoints(counts);
    let completions = 0;
    let reconciliations = 0;
    for (const at of points) {
      const label = JSON.stringify(at);
      const store = createInMemoryAgentRunStore();
      const ledger = createLedger();
      const plan = createCrashPlan({ at });
      expect(await plan.race(crashingRun(plan, store, ledger)), label).toEqual({ crashed: true });
      const atCrash = ledger.entries();
      if ((await store.load(RUN)) === undefined) {
        // Died before the first save landed: nothing to resume, and no effect can have run.
        expect(atCrash, label).toEqual({});
        continue;
      }
      const { result } = await resumeFresh(store, ledger);
      expect(ledger.count('charge@0:c1'), label).toBeLessThanOrEqual(1);
      expect(ledger.count('ship@1:c1'), label).toBeLessThanOrEqual(1);
      // The idempotent tool may run again, under the same identity only.
      expect(ledger.count('note@0:c2'), label).toBeLessThanOrEqual(2);
      expect(Object.keys(ledger.entries()).every((key) => key in CLEAN_LEDGER), label).toBe(true);
      if (result.status === 'completed') {
        completions++;
        expect(result.text, label).toBe('Order 7 charged and shipped.');
        expect(ledger.count('charge@0:c1'), label).toBe(1);
        expect(ledger.count('ship@1:c1'), label).toBe(1);
      } else {
        expect(result.status === 'stopped' && result.reason, label).toBe('tool-reconciliation-required');
        if (result.status !== 'stopped') continue;
        const unknown = (result.unknownEffects ?? []).map((r) => ledgerKey(r.toolName, r.modelStep, r.toolCallId));
        expect(unknown.length, label).toBeGreaterThan(0);
        for (const key of unknown) expect(['charge@0:c1', 'ship@1:c1'], label).toContain(key);
        reconciliations++;
      }
    }
    // Non-vacuity: the matrix reached both kinds of end.
    expect(completions).toBeGreaterThan(10);
    expect(reconciliations).toBeGreaterThan(0);
  });
});

describe('cloneStore', () => {
  it('copies the latest envelopes with their revisions into a new, fenced, independent store', async () => {
    const source = createInMemoryAgentRunStore();
    await runAgent(options({ store: source, ledger: createLedger() }));
    const original = (await source.load(RUN))!;
    const clone = await cloneStore(source, [RUN, 'missing']);
    expect(clone).not.toBe(source);
    expect(clone.runIds()).toEqual([RUN]);
    expect(await clone.load(RUN)).toEqual(original);
    expect(await clone.load('missing')).toBeUndefined();
    await expect(clone.save({ ...original, revision: original.revision })).rejects.toMatchObject({ code: 'revision_conflict' });
    await clone.save({ ...original, revision: original.revision + 1, status: 'failed' });
    expect((await source.load(RUN))!.revision).toBe(original.revision);
    expect((await clone.load(RUN))!.status).toBe('failed');
    // What load hands out is a copy.
    const loaded = (await clone.load(RUN))!;
    loaded.status = 'running';
    expect((await clone.load(RUN))!.status).toBe('failed');
    const seeded = createFencedMapStore([original]);
    await expect(seeded.save({ ...original, runId: 'new', revision: 2 })).rejects.toMatchObject({ code: 'revision_conflict' });
    await seeded.save({ ...original, runId: 'new', revision: 1 });
    expect(seeded.runIds()).toEqual([RUN, 'new']);
  });
});

describe('ledger tools', () => {
  it('the ledger counts by key and by tool', () => {
    const ledger = createLedger();
    ledger.record('a@0:x');
    ledger.record('a@0:x');
    ledger.record('ab@1:y');
    expect(ledger.count('a@0:x')).toBe(2);
    expect(ledger.count('nope')).toBe(0);
    expect(ledger.entries()).toEqual({ 'a@0:x': 2, 'ab@1:y': 1 });
    expect(ledger.total()).toBe(3);
    expect(ledger.total('a')).toBe(2);
    const copy = ledger.entries();
    copy['a@0:x'] = 99;
    expect(ledger.count('a@0:x')).toBe(2);
  });

  it('records under [modelStep, toolCallId], returns its result, and fails after its effect when told to', async () => {
    const ledger = createLedger();
    const store = createInMemoryAgentRunStore();
    const toolset: AgentTools = {
      charge: ledgerTool(ledger, 'charge', { fail: (args: { order: number }) => args.order === 7 }),
      note: ledgerTool(ledger, 'note', { idempotent: true, result: (args: { text: string }, ctx) => `${args.text}@${ctx.modelStep}` }),
      ship: ledgerTool(ledger, 'ship'),
    };
    expect(toolset.note!.replay).toBe('idempotent');
    expect(toolset.charge!.replay).toBeUndefined();
    const result = await runAgent(options({ store, ledger, tools: toolset }));
    expect(result.status).toBe('completed');
    expect(ledger.entries()).toEqual(CLEAN_LEDGER);
    const tool = result.messages.filter((m) => m.role === 'tool');
    expect(tool.find((m) => m.toolCallId === 'c2')).toMatchObject({ content: 'charged@0' });
    expect(tool.find((m) => m.toolName === 'charge')).toMatchObject({ isError: true });
    const receipts = Object.values((await store.load(RUN))!.receipts);
    expect(receipts.find((r) => r.toolName === 'charge')).toMatchObject({ status: 'failed', error: { code: 'injected_fault' } });
  });

  it('needsApproval holds the call; the approved resume runs it once', async () => {
    const ledger = createLedger();
    const store = createInMemoryAgentRunStore();
    const toolset = { ...tools(ledger), charge: ledgerTool(ledger, 'charge', { needsApproval: true }) };
    const first = await runAgent(options({ store, ledger, tools: toolset }));
    expect(first.status).toBe('suspended');
    if (first.status !== 'suspended') return;
    expect(first.pendingApprovals.map((p) => p.toolName)).toEqual(['charge']);
    expect(ledger.count('charge@0:c1')).toBe(0);
    const resumed = await resumeAgent({
      ...options({ store, ledger, tools: toolset }),
      session: { store, runId: RUN, scope: SCOPE },
      approvalResponses: first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, approved: true, token: p.token })),
    });
    expect(resumed.status).toBe('completed');
    expect(ledger.entries()).toEqual(CLEAN_LEDGER);
  });
});

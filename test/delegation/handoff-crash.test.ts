/**
 * The crash property around a handoff: a run whose root agent calls a plain
 * tool and hands off, and whose target calls an idempotent and a plain tool
 * in one batch, is crashed at every save, model call and tool execution of
 * its fault-free run (before and after each), then driven to its end by an
 * operator in fresh legs (a new store wrapper, new models and tools, as a new
 * process would have). Each time: the target goes on after the handoff (the
 * root's model is never asked again once the handoff is saved), every plain
 * effect ran exactly once, and the run completes with the target's answer.
 * On the in-memory and the SQLite store.
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, type AgentOptions, type AgentResult, type AgentRunStore, type ResumeOptions } from 'cairn/agent';
import { createCrashPlan, createMockModel, listCrashPoints, type CrashPlan, type CrashPoint } from 'cairn/testing';
import { answered, closeAfterEach, countEffect, crashWhere, NO_ARGS, operatorAnswers, type Effects, type Request } from './crash-helpers.js';
import { STORES } from './handoff-helpers.js';

interface World {
  effects: Effects;
  /** Root model calls made after the record held the handoff. */
  rootAfterHandoff: number;
}

/** The options of one leg: new models and tools, wrapped by the leg's plan. */
function legOptions(world: World, plan: CrashPlan, store: AgentRunStore, handedOff: () => boolean): AgentOptions {
  const count = (tool: string) => countEffect(world.effects, tool);
  const triage = createMockModel({ modelId: 'triage', strict: false, responses: [(request: Request) => {
    if (handedOff()) world.rootAfterHandoff += 1;
    return answered(request, 'faq')
      ? { toolCalls: [{ toolCallId: 'handoff-1', toolName: 'transfer_to_billing', args: {} }] }
      : { toolCalls: [{ toolCallId: 'faq-1', toolName: 'faq', args: {} }] };
  }] });
  const billing = createMockModel({ modelId: 'billing', strict: false, responses: [(request: Request) => (answered(request, 'charge')
    ? { text: 'Charged o-1.' }
    : { toolCalls: [{ toolCallId: 'lookup-1', toolName: 'lookup', args: {} }, { toolCallId: 'charge-1', toolName: 'charge', args: {} }] })] });
  return {
    name: 'triage',
    model: plan.wrapModel(triage),
    instructions: 'triage',
    prompt: 'Charge o-1.',
    tools: plan.wrapTools({ faq: { parameters: NO_ARGS, execute: async () => { count('faq'); return 'faq'; } } }),
    handoffs: [{
      name: 'billing',
      model: plan.wrapModel(billing),
      instructions: 'billing',
      tools: plan.wrapTools({
        lookup: { parameters: NO_ARGS, replay: 'idempotent', execute: async () => { count('lookup'); return 42; } },
        charge: { parameters: NO_ARGS, execute: async () => { count('charge'); return 'charged'; } },
      }),
    }],
    session: { store: plan.wrapStore(store), runId: 'crash', scope: 't' },
  };
}

async function drive(store: AgentRunStore, at: CrashPoint | undefined): Promise<{ world: World; result: AgentResult<unknown>; counts: CrashPlan['counts'] }> {
  const world: World = { effects: {}, rootAfterHandoff: 0 };
  const handedOff = () => false;
  const first = createCrashPlan(at ? { at } : {});
  const started = await first.race(runAgent(legOptions(world, first, store, handedOff)));
  let result: AgentResult<unknown> | null = started.crashed ? null : (started.result as AgentResult<unknown>);
  let extra: Partial<ResumeOptions> = {};
  for (let leg = 0; leg < 6 && (result === null || result.status !== 'completed'); leg++) {
    const record = await store.load('crash', { scope: 't' });
    if (!record) {
      // Crashed before the first save: the run starts again.
      const plan = createCrashPlan();
      result = await runAgent(legOptions(world, plan, store, handedOff));
      continue;
    }
    const saved = record.activeAgent === 'billing';
    const plan = createCrashPlan();
    result = await resumeAgent({ ...legOptions(world, plan, store, () => saved), ...extra } as ResumeOptions);
    extra = operatorAnswers(world.effects, result);
  }
  return { world, result: result!, counts: first.counts };
}

const closeLater = closeAfterEach();

describe.each(STORES)('a crash at every point around a handoff ($name store)', (kind) => {
  it('the target goes on, every plain effect once, the run completes with the target\'s answer', async () => {
    const clean = kind.open();
    closeLater(clean.close);
    const baseline = await drive(clean.store, undefined);
    expect(baseline.result.status).toBe('completed');
    expect(baseline.world.effects).toEqual({ faq: 1, lookup: 1, charge: 1 });
    const points = listCrashPoints(baseline.counts);
    expect(points.filter((p) => p.kind === 'save').length).toBeGreaterThanOrEqual(8);
    // Four model turns (triage twice, billing twice) and three tool executions, each crashed before and after.
    expect(points.filter((p) => p.kind === 'model')).toHaveLength(8);
    expect(points.filter((p) => p.kind === 'tool')).toHaveLength(6);
    console.log(`handoff crash points: ${points.length} (${points.filter((p) => p.kind === 'save').length / 2} saves)`);
    for (const at of points) {
      const opened = kind.open();
      closeLater(opened.close);
      const { world, result } = await drive(opened.store, at);
      const where = crashWhere(at);
      expect(result.status, where).toBe('completed');
      expect(result.text, where).toBe('Charged o-1.');
      expect(world.effects.faq, where).toBe(1);
      expect(world.effects.charge, where).toBe(1);
      expect(world.effects.lookup, where).toBeGreaterThanOrEqual(1);
      expect(world.rootAfterHandoff, where).toBe(0);
      expect((await opened.store.load('crash', { scope: 't' }))!.activeAgent, where).toBe('billing');
    }
  }, 120_000);
});

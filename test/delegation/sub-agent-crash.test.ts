/**
 * The crash property extended to nested runs: a root run that calls a plain
 * tool and then a sub-agent, whose child calls a plain and an idempotent
 * tool in one batch, is crashed at every save, model call and tool execution
 * of its fault-free run, parent's and child's alike (before and after each),
 * then driven to its end by a careful operator in fresh legs (new store
 * wrapper, models and tools, as a new process would have). Each time: the
 * root completes with its answer, every plain effect ran exactly once (an
 * interrupted one of the child is reconciled at the child through the root's
 * resume, never run again by guessing), and the child is the same run.
 * On the in-memory and the SQLite store.
 */
import { describe, expect, it } from 'vitest';
import { Agent, agentTool, childRunIdOf } from 'cairn';
import { resumeAgent, runAgent, type AgentOptions, type AgentResult, type AgentRunStore, type ResumeOptions } from 'cairn/agent';
import { createCrashPlan, createMockModel, listCrashPoints, type CrashPlan, type CrashPoint } from 'cairn/testing';
import { answered, closeAfterEach, countEffect, crashWhere, NO_ARGS, operatorAnswers, type Effects, type Request } from './crash-helpers.js';
import { STORES } from './sub-agent-helpers.js';


interface World {
  effects: Effects;
}

/** The options of one leg of the root: new models, tools and child agent, wrapped by the leg's plan. */
function legOptions(world: World, plan: CrashPlan, store: AgentRunStore): AgentOptions {
  const count = (tool: string) => countEffect(world.effects, tool);
  const childModel = createMockModel({ modelId: 'child', strict: false, responses: [(request: Request) => (answered(request, 'lookup')
    ? { text: 'The moon.' }
    : { toolCalls: [{ toolCallId: 'lookup-1', toolName: 'lookup', args: {} }, { toolCallId: 'tag-1', toolName: 'tag', args: {} }] })] });
  const child = new Agent({
    name: 'researcher', model: plan.wrapModel(childModel), maxSteps: 4,
    tools: plan.wrapTools({
      lookup: { parameters: NO_ARGS, execute: async () => { count('lookup'); return 'tides'; } },
      tag: { parameters: NO_ARGS, replay: 'idempotent', execute: async () => { count('tag'); return 'tagged'; } },
    }),
  });
  const rootModel = createMockModel({ modelId: 'root', strict: false, responses: [(request: Request) => {
    if (answered(request, 'research')) return { text: 'Because of the moon.' };
    if (answered(request, 'note')) return { toolCalls: [{ toolCallId: 'research-1', toolName: 'research', args: { input: 'Why tides?' } }] };
    return { toolCalls: [{ toolCallId: 'note-1', toolName: 'note', args: {} }] };
  }] });
  return {
    model: plan.wrapModel(rootModel),
    prompt: 'Explain tides.',
    maxSteps: 5,
    tools: {
      ...plan.wrapTools({ note: { parameters: NO_ARGS, execute: async () => { count('note'); return 'noted'; } } }),
      research: agentTool(child, { name: 'research' }),
    },
    session: { store: plan.wrapStore(store), runId: 'crash', scope: 't' },
  };
}

async function drive(store: AgentRunStore, at: CrashPoint | undefined) {
  const world: World = { effects: {} };
  const first = createCrashPlan(at ? { at } : {});
  const started = await first.race(runAgent(legOptions(world, first, store)));
  let result = started.crashed ? null : started.result;
  let extra: Partial<ResumeOptions> = {};
  let reconciledAtChild = 0;
  for (let leg = 0; leg < 8 && (result === null || result.status !== 'completed'); leg++) {
    const plan = createCrashPlan();
    if (!(await store.load('crash', { scope: 't' }))) {
      // Crashed before the first save: the run starts again.
      result = await runAgent(legOptions(world, plan, store));
      continue;
    }
    result = await resumeAgent({ ...legOptions(world, plan, store), ...extra } as ResumeOptions);
    extra = operatorAnswers(world.effects, result);
    if (result.status === 'stopped' && (result.unknownEffects ?? []).some((e) => e.runId !== undefined)) reconciledAtChild += 1;
  }
  return { world, result: result!, counts: first.counts, reconciledAtChild };
}

const closeLater = closeAfterEach();

describe.each(STORES)('a crash at every save of parent and child ($name store)', (kind) => {
  it('the root ends, each plain effect once, the same child run', async () => {
    const clean = kind.open();
    closeLater(clean.close);
    const baseline = await drive(clean.store, undefined);
    expect(baseline.result.status).toBe('completed');
    expect(baseline.world.effects).toEqual({ note: 1, lookup: 1, tag: 1 });
    const childId = childRunIdOf('crash', 1, 'research-1');
    expect((await clean.store.load(childId, { scope: 't' }))!.status).toBe('completed');
    const points = listCrashPoints(baseline.counts);
    // The root's and the child's saves, model calls and tool executions.
    expect(points.filter((p) => p.kind === 'save').length).toBeGreaterThanOrEqual(12);
    expect(points.filter((p) => p.kind === 'model').length).toBe(10);
    let atChild = 0;
    for (const at of points) {
      const opened = kind.open();
      closeLater(opened.close);
      const { world, result, reconciledAtChild } = await drive(opened.store, at);
      atChild += reconciledAtChild;
      const where = crashWhere(at);
      expect(result.status === 'failed' ? result.error : result.status, where).toBe('completed');
      expect(result.text, where).toBe('Because of the moon.');
      expect(world.effects.note, where).toBe(1);
      expect(world.effects.lookup, where).toBe(1);
      expect(world.effects.tag, where).toBeGreaterThanOrEqual(1);
      const childRecord = (await opened.store.load(childId, { scope: 't' }))!;
      expect(childRecord.status, where).toBe('completed');
      expect(childRecord.binding.parent?.runId, where).toBe('crash');
    }
    // Some crash points interrupted the child's plain tool: those were reconciled at the child.
    expect(atChild).toBeGreaterThan(0);
  }, 180_000);
});

describe.each(STORES)('a store whose Nth write fails, at every save of parent and child ($name store)', (kind) => {
  it('the root ends, each plain effect once: a child whose save failed is driven again by the next resume', async () => {
    const { createFaultyStore } = await import('cairn/testing');
    const counted = kind.open();
    closeLater(counted.close);
    const baseline = await drive(counted.store, undefined);
    const saves = baseline.counts.saves;
    expect(saves).toBeGreaterThanOrEqual(12);
    for (let at = 1; at <= saves; at++) {
      const opened = kind.open();
      closeLater(opened.close);
      const world: World = { effects: {} };
      const faulty = createFaultyStore(opened.store, { failSave: { at, mode: 'reject' } });
      let result: AgentResult<unknown> = await runAgent(legOptions(world, createCrashPlan(), faulty));
      let extra: Partial<ResumeOptions> = {};
      for (let leg = 0; leg < 6 && result.status !== 'completed'; leg++) {
        const plan = createCrashPlan();
        result = (await opened.store.load('crash', { scope: 't' }))
          ? await resumeAgent({ ...legOptions(world, plan, opened.store), ...extra } as ResumeOptions)
          : await runAgent(legOptions(world, plan, opened.store));
        extra = operatorAnswers(world.effects, result);
      }
      const where = `save ${at} rejected`;
      expect(result.status === 'failed' ? result.error : result.status, where).toBe('completed');
      expect(result.text, where).toBe('Because of the moon.');
      expect(world.effects.note, where).toBe(1);
      expect(world.effects.lookup, where).toBe(1);
    }
  }, 180_000);
});

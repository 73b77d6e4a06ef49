/**
 * Model-based tests of the memory-intent chart: @xstate/graph walks every
 * simple path of the machine (with every output its actors may answer, from
 * a run's fresh start and from a reconciliation), each path is driven through
 * the machine with actors that answer as the path says, and every transition
 * of the chart is taken by some path.
 */
import { getSimplePaths } from '@xstate/graph';
import { createActor, fromPromise, type EventObject, type SnapshotFrom } from 'xstate';
import { describe, expect, it } from 'vitest';
import { memoryIntentMachine } from '../../machines/memory-intent.js';
import type { MemoryIntentInput } from '../../machines/memory-intent-types.js';
import { allEdges, edgeOfTransition } from './mbt/edges.js';

type Snapshot = SnapshotFrom<typeof memoryIntentMachine>;
const never = () => fromPromise(() => new Promise<never>(() => undefined));
const model = memoryIntentMachine.provide({
  actors: { planExtraction: never(), savePlan: never(), applyPlan: never(), confirmPlan: never() } as never,
});

const plan = (deletes: number, writes: number) => ({
  deletes: Array.from({ length: deletes }, (_, i) => `d${i}`),
  writes: Array.from({ length: writes }, (_, i) => ({ event: 'ADD' as const, id: `w${i}`, text: `fact ${i}` })),
});
const err = { name: 'MemoryError', code: 'memory_llm_invalid', message: 'not JSON' };

/** What each invoked actor may answer where the intent stands. */
function events(s: Snapshot): EventObject[] {
  const done = (id: string, output: unknown) => ({ type: `xstate.done.actor.${id}`, output });
  const error = (id: string) => ({ type: `xstate.error.actor.${id}`, error: err });
  switch (s.value) {
    case 'pending': return [done('planExtraction', { kind: 'plan', plan: plan(0, 0) }), done('planExtraction', { kind: 'plan', plan: plan(1, 2) }), error('planExtraction')];
    case 'planned': return [done('savePlan', { kind: 'written' }), done('savePlan', { kind: 'restarted' }), error('savePlan')];
    case 'writing': return [
      done('applyPlan', { kind: 'applied', mutations: 3 }), done('applyPlan', { kind: 'stopped', mutations: 2, error: err }),
      done('applyPlan', { kind: 'stopped', mutations: 0, error: err }), done('applyPlan', { kind: 'restarted' }), error('applyPlan'),
    ];
    case 'confirming': return [done('confirmPlan', { found: 0 }), done('confirmPlan', { found: 1 }), done('confirmPlan', { found: 2 }), error('confirmPlan')];
    default: return [];
  }
}

const inputs: MemoryIntentInput[] = [
  { runId: 'r', operationId: 'op', mode: 'fresh', inputCount: 1 },
  { runId: 'r', operationId: 'op', mode: 'settle', inputCount: 1, planned: 3, deletes: 1 },
  { runId: 'r', operationId: 'op', mode: 'settle', inputCount: 1, planned: null },
];

const paths = inputs.flatMap((input) => getSimplePaths(model, {
  input,
  events,
  serializeState: (s: Snapshot) => JSON.stringify({ v: s.value, s: s.status, c: s.context }),
  stopWhen: (s: Snapshot) => s.status !== 'active',
} as never).filter((p) => (p.state as Snapshot).status === 'done').map((p) => ({ input, path: p })));

describe('memory-intent machine: every path of its graph', () => {
  const taken = new Set<string>();
  it('has paths to each final state, from both modes', () => {
    const ends = new Set(paths.map((p) => (p.path.state as Snapshot).value));
    expect([...ends].sort()).toEqual(['completed', 'failed', 'partial']);
  });

  for (const [index, { input, path }] of paths.entries()) {
    const label = path.steps.map((s) => s.event.type.replace('xstate.done.actor.', '').replace('xstate.error.actor.', '!')).join(' → ');
    it(`#${index} ${input.mode}${input.planned === null ? ' (no size saved)' : ''}: ${label || 'start'} ⇒ ${String((path.state as Snapshot).value)}`, async () => {
      // The real chart, with actors that answer as the path says, in order.
      const answers = path.steps.map((s) => s.event).filter((e) => e.type.startsWith('xstate.done') || e.type.startsWith('xstate.error'));
      const next = (id: string) => {
        const event = answers.shift() as { type: string; output?: unknown; error?: unknown } | undefined;
        if (!event || !event.type.endsWith(`.${id}`)) throw new Error(`unexpected ${id}`);
        return event.type.startsWith('xstate.error') ? Promise.reject(event.error) : Promise.resolve(event.output);
      };
      const logic = memoryIntentMachine.provide({
        actors: {
          planExtraction: fromPromise(() => next('planExtraction')), savePlan: fromPromise(() => next('savePlan')),
          applyPlan: fromPromise(() => next('applyPlan')), confirmPlan: fromPromise(() => next('confirmPlan')),
        } as never,
      });
      const actor = createActor(logic, {
        input,
        inspect: (e) => {
          if (e.type !== '@xstate.microstep') return;
          for (const t of (e as unknown as { _transitions: never[] })._transitions) taken.add(edgeOfTransition(t).key);
        },
      });
      const done = new Promise<void>((resolve) => actor.subscribe({ complete: resolve }));
      actor.start();
      await done;
      const end = actor.getSnapshot();
      expect(end.value).toBe((path.state as Snapshot).value);
      expect(end.output).toMatchObject({ operationId: 'op', status: end.value === 'completed' ? 'completed' : end.value });
      if (end.value === 'partial') expect(end.output?.error?.code).toBe('memory_extraction_partial');
      if (end.value === 'completed') expect(end.output?.error).toBeNull();
    });
  }

  it('takes every transition of the chart', () => {
    const missed = allEdges(memoryIntentMachine).map((e) => e.key).filter((k) => !taken.has(k));
    expect(missed).toEqual([]);
  });
});

/**
 * Model-based tests of the swarm chart: @xstate/graph walks its graph for
 * small DAGs (every event the host may send where the swarm stands: each
 * running task's end with every outcome, a spawn that fits and one that
 * would close a cycle, a budget refusal, verdicts for suspended tasks), and
 * every state reached keeps the scheduler's promises. Every transition of
 * the chart is taken by some path, and every snapshot restores from JSON.
 */
import { getShortestPaths } from '@xstate/graph';
import { createActor, type EventObject, type SnapshotFrom } from 'xstate';
import { describe, expect, it } from 'vitest';
import { swarmMachine, isTaskEnded } from '../../machines/swarm.js';
import type { SwarmEvent, SwarmInput, SwarmTaskOutcome } from '../../machines/swarm-types.js';
import { allEdges, edgeOfTransition } from './mbt/edges.js';

type Snapshot = SnapshotFrom<typeof swarmMachine>;
const OUTCOMES: SwarmTaskOutcome[] = ['completed', 'failed', 'stopped', 'suspended', 'budget-exhausted'];

function events(s: Snapshot): EventObject[] {
  const c = s.context;
  if (s.value === 'idle') return [{ type: 'START' }];
  const out: SwarmEvent[] = [];
  const running = c.order.filter((id) => c.tasks[id]!.status === 'running');
  const suspended = c.order.filter((id) => c.tasks[id]!.status === 'suspended');
  for (const id of running) for (const outcome of OUTCOMES) out.push({ type: 'TASK_ENDED', taskId: id, outcome });
  if (running.length > 0 && !c.tasks.x) {
    const by = running[0]!;
    const spawn = { by, key: `${by}:1:call-0`, agent: 'helper', prompt: 'x' };
    const last = c.order.find((id) => c.tasks[id]!.status === 'pending');
    out.push({ type: 'TASK_SPAWNED', taskId: 'x', dependsOn: [], before: last ? [last] : [], spawn });
    // Refused by the chart's guard: it would close a cycle.
    if (last) out.push({ type: 'TASK_SPAWNED', taskId: 'x', dependsOn: [last], before: [last], spawn });
  }
  if (running.length > 0 && !c.budgetExhausted) out.push({ type: 'BUDGET_EXHAUSTED' });
  if (suspended.length > 0) out.push({ type: 'RESUME', taskIds: [suspended[0]!] });
  return out;
}

// Two tasks (and the one a spawn adds): a chain under one slot, and two independent tasks under one and two slots.
const DAGS: SwarmInput[] = [
  { concurrency: 1, tasks: [{ id: 'a', dependsOn: [] }, { id: 'b', dependsOn: ['a'] }] },
  { concurrency: 1, tasks: [{ id: 'a', dependsOn: [] }, { id: 'c', dependsOn: [] }] },
  { concurrency: 2, tasks: [{ id: 'a', dependsOn: [] }, { id: 'c', dependsOn: [] }] },
  { concurrency: 3, tasks: [] },
];

const walks = DAGS.map((input) => ({
  input,
  paths: getShortestPaths(swarmMachine, {
    input,
    events,
    serializeState: (s: Snapshot) => JSON.stringify({ v: s.value, c: s.context }),
  } as never),
}));

/** What every state the chart can reach must hold. */
function checkInvariants(s: Snapshot, concurrency: number): void {
  const c = s.context;
  const status = (id: string) => c.tasks[id]!.status;
  const running = c.order.filter((id) => status(id) === 'running').length;
  expect(running).toBeLessThanOrEqual(concurrency);
  for (const id of c.order) {
    const deps = c.tasks[id]!.dependsOn.map(status);
    const st = status(id);
    // Nothing starts before every dependency completed.
    if (['running', 'suspended', 'completed', 'failed', 'stopped'].includes(st)) expect(deps.every((d) => d === 'completed'), `${id} ${st} ${deps}`).toBe(true);
    if (st === 'skipped') expect(deps.some((d) => isTaskEnded(d) && d !== 'completed')).toBe(true);
    // A ready task waits only for a slot.
    if (st === 'ready' && s.value !== 'scheduling') expect(running).toBe(concurrency);
    if (c.budgetExhausted) expect(['pending', 'ready']).not.toContain(st);
  }
  const ended = c.order.every((id) => isTaskEnded(status(id)));
  if (s.value === 'completed') expect(c.order.every((id) => status(id) === 'completed')).toBe(true);
  if (s.value === 'failed') expect(ended && !c.order.every((id) => status(id) === 'completed')).toBe(true);
  if (s.value === 'waiting') expect(running === 0 && c.order.some((id) => status(id) === 'suspended')).toBe(true);
  if (s.value === 'running') expect(running).toBeGreaterThan(0);
}

describe('swarm machine: its graph for small DAGs', () => {
  const taken = new Set<string>();
  const inspect = (e: { type: string }) => {
    if (e.type !== '@xstate.microstep') return;
    for (const t of (e as unknown as { _transitions: never[] })._transitions) taken.add(edgeOfTransition(t).key);
  };

  it('reaches every state, ends completed or failed, and rests waiting with only suspended tasks', () => {
    const values = new Set(walks.flatMap((w) => w.paths.map((p) => String((p.state as Snapshot).value))));
    expect([...values].sort()).toEqual(['completed', 'failed', 'idle', 'running', 'waiting']);
  });

  for (const { input, paths } of walks) {
    it(`concurrency ${input.concurrency}, ${input.tasks.length} tasks: every one of its ${paths.length} states keeps the scheduler's promises`, () => {
      for (const path of paths) {
        // The path's state, restored from its persisted snapshot through JSON: the checkpoint a host would load.
        const end = path.state as Snapshot;
        checkInvariants(end, input.concurrency);
        const persisted = JSON.parse(JSON.stringify(swarmMachine.getPersistedSnapshot(end as never)));
        const restored = createActor(swarmMachine, { snapshot: persisted } as never);
        restored.start();
        expect(restored.getSnapshot().value).toEqual(end.value);
        expect(restored.getSnapshot().context).toEqual(end.context);
        // Every event the host may send from here, on the restored chart: every edge out of every state reached.
        for (const event of events(end)) {
          const probe = createActor(swarmMachine, { snapshot: persisted, inspect } as never);
          probe.start();
          probe.send(event as SwarmEvent);
          checkInvariants(probe.getSnapshot() as Snapshot, input.concurrency);
        }
      }
    });
  }

  it('takes every transition of the chart', () => {
    const missed = allEdges(swarmMachine).map((e) => e.key).filter((k) => !taken.has(k));
    expect(missed).toEqual([]);
  });
});

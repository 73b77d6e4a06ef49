/**
 * The swarm scheduler as a chart: one DAG of agent tasks. Pure: the chart
 * decides which tasks start, which are skipped and when the DAG has ended;
 * the host (src/swarm/scheduler.ts) saves each next snapshot with its journal
 * events, and only then starts the runs the snapshot marks `running`.
 *
 *   idle → scheduling (transient: skip, ready, start up to `concurrency`)
 *        → running (tasks in flight) | waiting (only suspended tasks left)
 *        → completed (every task completed) | failed (every task ended, not all completed)
 */
import { assign, setup } from 'xstate';
import type { SwarmContext, SwarmEvent, SwarmInput, SwarmTaskState, SwarmTaskStatus } from './swarm-types.js';

/** Bumped whenever a stored swarm snapshot of an older version would not restore as it is. */
export const SWARM_MACHINE_VERSION = 1;

const ENDED: ReadonlySet<SwarmTaskStatus> = new Set(['completed', 'failed', 'stopped', 'skipped', 'budget-exhausted']);

/** The task has come to an end and will never run again. */
export const isTaskEnded = (status: SwarmTaskStatus): boolean => ENDED.has(status);

/**
 * The context after one scheduling pass: tasks whose dependency ended without
 * completing are skipped (transitively), every task not started ends
 * `budget-exhausted` once the budget is, tasks whose dependencies all
 * completed are ready, and ready tasks start, in order, while fewer than
 * `concurrency` run.
 */
export function schedule(context: SwarmContext): SwarmContext {
  const tasks: Record<string, SwarmTaskState> = {};
  for (const id of context.order) tasks[id] = { ...context.tasks[id]! };
  let changed = true;
  while (changed) {
    changed = false;
    for (const id of context.order) {
      const task = tasks[id]!;
      if (task.status !== 'pending' && task.status !== 'ready') continue;
      if (context.budgetExhausted) {
        task.status = 'budget-exhausted';
        changed = true;
        continue;
      }
      const deps = task.dependsOn.map((d) => tasks[d]!.status);
      if (deps.some((s) => isTaskEnded(s) && s !== 'completed')) {
        task.status = 'skipped';
        changed = true;
      } else if (task.status === 'pending' && deps.every((d) => d === 'completed')) {
        task.status = 'ready';
        changed = true;
      }
    }
  }
  let running = context.order.filter((id) => tasks[id]!.status === 'running').length;
  for (const id of context.order) {
    if (running >= context.concurrency) break;
    if (tasks[id]!.status === 'ready') {
      tasks[id]!.status = 'running';
      running += 1;
    }
  }
  return { ...context, tasks };
}

/** Whether adding `taskId` (after `dependsOn`, before `before`) would close a cycle or name what it cannot. */
export function spawnProblem(context: SwarmContext, taskId: string, dependsOn: readonly string[], before: readonly string[]): string | null {
  if (context.tasks[taskId]) return `a task ${taskId} exists already`;
  for (const id of [...dependsOn, ...before]) if (!context.tasks[id]) return `no task ${id} in the swarm`;
  for (const id of before) {
    const status = context.tasks[id]!.status;
    if (status !== 'pending' && status !== 'ready') return `task ${id} has started or ended (${status}); nothing can be put before it`;
  }
  // A cycle: some task in `before` is, or leads to, one the new task depends on.
  const after = new Set(dependsOn);
  const seen = new Set<string>();
  const stack = [...before];
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (after.has(id)) return `it would close a cycle through ${id}`;
    if (seen.has(id)) continue;
    seen.add(id);
    // Whoever depends on `id` comes after the new task too.
    for (const other of context.order) if (context.tasks[other]!.dependsOn.includes(id)) stack.push(other);
  }
  return null;
}

const tasksWith = (context: SwarmContext, taskId: string, status: SwarmTaskStatus) =>
  ({ ...context.tasks, [taskId]: { ...context.tasks[taskId]!, status } });

export const swarmSetup = setup({
  types: {
    context: {} as SwarmContext,
    input: {} as SwarmInput,
    events: {} as SwarmEvent,
    output: {} as { status: 'completed' | 'failed' },
  },
  guards: {
    allCompleted: ({ context }) => context.order.every((id) => context.tasks[id]!.status === 'completed'),
    allEnded: ({ context }) => context.order.every((id) => isTaskEnded(context.tasks[id]!.status)),
    anyRunning: ({ context }) => context.order.some((id) => context.tasks[id]!.status === 'running'),
    taskRunning: ({ context, event }) => event.type === 'TASK_ENDED' && context.tasks[event.taskId]?.status === 'running',
    spawnFits: ({ context, event }) => event.type === 'TASK_SPAWNED'
      && context.tasks[event.spawn.by]?.status === 'running'
      && spawnProblem(context, event.taskId, event.dependsOn, event.before) === null,
    resumesSuspended: ({ context, event }) => event.type === 'RESUME'
      && event.taskIds.some((id) => context.tasks[id]?.status === 'suspended'),
  },
  actions: {
    schedule: assign(({ context }) => schedule(context)),
    recordEnd: assign(({ context, event }) => {
      if (event.type !== 'TASK_ENDED') return {};
      const status: SwarmTaskStatus = event.outcome;
      return {
        tasks: tasksWith(context, event.taskId, status),
        ...(event.outcome === 'budget-exhausted' ? { budgetExhausted: true } : {}),
      };
    }),
    addSpawned: assign(({ context, event }) => {
      if (event.type !== 'TASK_SPAWNED') return {};
      const tasks = { ...context.tasks, [event.taskId]: { dependsOn: [...event.dependsOn], status: 'pending' as const, spawn: event.spawn } };
      for (const id of event.before) tasks[id] = { ...tasks[id]!, dependsOn: [...tasks[id]!.dependsOn, event.taskId] };
      return { tasks, order: [...context.order, event.taskId] };
    }),
    exhaustBudget: assign({ budgetExhausted: true }),
    resumeSuspended: assign(({ context, event }) => {
      if (event.type !== 'RESUME') return {};
      const tasks = { ...context.tasks };
      // Back to ready, not running: a resumed task waits for a free slot like any other.
      for (const id of event.taskIds) if (tasks[id]?.status === 'suspended') tasks[id] = { ...tasks[id]!, status: 'ready', resumed: true };
      return { tasks };
    }),
  },
});

const onTaskEvents = {
  TASK_ENDED: { guard: 'taskRunning', target: 'scheduling', actions: 'recordEnd' },
  TASK_SPAWNED: { guard: 'spawnFits', target: 'scheduling', actions: 'addSpawned' },
  BUDGET_EXHAUSTED: { target: 'scheduling', actions: 'exhaustBudget' },
  RESUME: { guard: 'resumesSuspended', target: 'scheduling', actions: 'resumeSuspended' },
} as const;

export const swarmMachine = swarmSetup.createMachine({
  id: 'swarm',
  version: String(SWARM_MACHINE_VERSION),
  context: ({ input }) => ({
    concurrency: input.concurrency,
    order: input.tasks.map((t) => t.id),
    tasks: Object.fromEntries(input.tasks.map((t) => [t.id, { dependsOn: [...t.dependsOn], status: 'pending' as const }])),
    budgetExhausted: false,
  }),
  initial: 'idle',
  states: {
    idle: {
      description: 'The DAG as defined, saved before any task starts.',
      on: { START: { target: 'scheduling' } },
    },
    scheduling: {
      description: 'Transient: skips tasks behind an unfinished dependency, readies and starts tasks up to the concurrency.',
      entry: 'schedule',
      always: [
        { guard: 'allCompleted', target: 'completed' },
        { guard: 'allEnded', target: 'failed' },
        { guard: 'anyRunning', target: 'running' },
        { target: 'waiting' },
      ],
    },
    running: {
      description: 'Task runs in flight; each end, spawn or budget refusal schedules again.',
      on: onTaskEvents,
    },
    waiting: {
      description: 'Nothing runs: the tasks left wait for approvals or client results (RESUME brings them back).',
      on: { RESUME: onTaskEvents.RESUME },
    },
    completed: { type: 'final', description: 'Every task completed.' },
    failed: { type: 'final', description: 'Every task ended and at least one did not complete.' },
  },
  output: ({ context }) => ({
    status: context.order.every((id) => context.tasks[id]!.status === 'completed') ? 'completed' as const : 'failed' as const,
  }),
});

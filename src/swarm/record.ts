/**
 * The swarm record and the journal events a step of the chart makes: both
 * derived from the chart's snapshot, so what the store holds is what the
 * chart decided.
 */
import type { SwarmContext, SwarmTaskStatus } from '../../machines/swarm-types.js';
import { SWARM_MACHINE_VERSION } from '../../machines/swarm.js';
import type { JsonValue } from '../agent/json.js';
import { taskRunId } from './dag.js';
import type { SwarmJournalEventInput, SwarmJournalEventType, SwarmRecord } from './types.js';

const END_EVENT: Partial<Record<SwarmTaskStatus, SwarmJournalEventType>> = {
  completed: 'task-completed',
  failed: 'task-failed',
  stopped: 'task-stopped',
  suspended: 'task-suspended',
  skipped: 'task-skipped',
  'budget-exhausted': 'task-budget-exhausted',
};

/**
 * The events between two contexts, in causal order: first what ended (or
 * was suspended), then what became ready, then what started or resumed,
 * each in task order.
 */
export function journalOf(swarmId: string, before: SwarmContext | null, after: SwarmContext): SwarmJournalEventInput[] {
  const ends: SwarmJournalEventInput[] = [];
  const ready: SwarmJournalEventInput[] = [];
  const started: SwarmJournalEventInput[] = [];
  for (const taskId of after.order) {
    const was = before?.tasks[taskId]?.status;
    const now = after.tasks[taskId]!.status;
    if (was === now) continue;
    if ((now === 'ready' && was !== 'suspended') || (now === 'running' && (was === undefined || was === 'pending'))) ready.push({ type: 'task-ready', taskId });
    if (now === 'running') {
      const resumed = was === 'suspended' || after.tasks[taskId]!.resumed === true;
      started.push({ type: resumed ? 'task-resumed' : 'task-started', taskId, data: { runId: taskRunId(swarmId, taskId) } });
    }
    const end = END_EVENT[now];
    if (end) ends.push({ type: end, taskId });
  }
  return [...ends, ...ready, ...started];
}

export function statusOf(value: unknown): SwarmRecord['status'] {
  return value === 'completed' || value === 'failed' || value === 'waiting' ? value : 'running';
}

export function recordOf(args: {
  swarmId: string; scope: string; revision: number; snapshot: JsonValue; context: SwarmContext; value: unknown;
  definition: string; ledger: SwarmRecord['ledger']; createdAt: number; now: number;
}): SwarmRecord {
  const tasks: SwarmRecord['tasks'] = {};
  for (const id of args.context.order) {
    const t = args.context.tasks[id]!;
    tasks[id] = { status: t.status, runId: taskRunId(args.swarmId, id), dependsOn: [...t.dependsOn], ...(t.spawn ? { spawnedBy: t.spawn.by } : {}) };
  }
  return {
    kind: 'cairn-swarm',
    version: 1,
    swarmId: args.swarmId,
    scope: args.scope,
    revision: args.revision,
    machine: { id: 'swarm', version: SWARM_MACHINE_VERSION },
    snapshot: args.snapshot,
    definition: args.definition,
    status: statusOf(args.value),
    tasks,
    ledger: args.ledger,
    createdAt: args.createdAt,
    updatedAt: args.now,
  };
}

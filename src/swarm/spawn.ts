/**
 * The checks of a spawn_task call, made by the scheduler between two saves
 * (so no other step moves the DAG meanwhile). A spawn already applied under
 * the same call identity is answered as it was; anything else that does not
 * fit is refused with SwarmError `swarm_spawn_invalid` (the call's error, for
 * the model to read), and nothing is spawned.
 */
import type { SwarmContext, SwarmEvent } from '../../machines/swarm-types.js';
import { spawnProblem } from '../../machines/swarm.js';
import type { JsonValue } from '../agent/json.js';
import { SwarmError, type SwarmProblem } from './errors.js';
import { ID } from './dag.js';
import type { NormalizedGroup } from './options.js';
import type { SpawnRequest } from './tools.js';

export type CheckedSpawn =
  | { applied: true; taskId: string }
  | { applied: false; taskId: string; event: Extract<SwarmEvent, { type: 'TASK_SPAWNED' }>; data: JsonValue };

const strings = (value: unknown): value is string[] => Array.isArray(value) && value.every((v) => typeof v === 'string');

export function checkSpawn(g: NormalizedGroup, context: SwarmContext, by: string, request: SpawnRequest, key: string): CheckedSpawn {
  const refuse = (message: string, problem: SwarmProblem): never => {
    throw new SwarmError('swarm_spawn_invalid', g.swarmId, `spawn_task: ${message}; nothing was spawned.`, { problem, taskId: by });
  };
  const taskId = request?.taskId;
  if (typeof taskId !== 'string' || !ID.test(taskId)) return refuse(`taskId must match ${ID}`, 'invalid-task');
  const existing = context.tasks[taskId];
  if (existing?.spawn?.key === key) return { applied: true, taskId };
  if (existing) return refuse(`a task ${taskId} exists already`, 'duplicate-task');
  if (typeof request.agent !== 'string' || !Object.hasOwn(g.agents, request.agent)) {
    return refuse(`agent must be one of ${Object.keys(g.agents).join(', ')}`, 'unknown-agent');
  }
  if (typeof request.prompt !== 'string' || request.prompt === '') return refuse('prompt must be a non-empty string', 'invalid-task');
  const dependsOn = request.dependsOn ?? [];
  const before = request.before ?? [];
  if (!strings(dependsOn) || !strings(before)) return refuse('dependsOn and before must be arrays of task ids', 'invalid-task');
  if (context.order.length >= g.maxTasks) return refuse(`the swarm holds maxTasks (${g.maxTasks}) tasks`, 'too-many-tasks');
  const problem = spawnProblem(context, taskId, dependsOn, before);
  if (problem) return refuse(problem, problem.includes('cycle') ? 'cycle' : problem.startsWith('no task') ? 'missing-dependency' : 'invalid-task');
  const budget = request.budget as { usd?: number; tokens?: number } | undefined;
  // The spawned task's context narrows the swarm's; a budget above the swarm's is refused here (policy_widened).
  if (budget !== undefined) g.execution.child({ name: taskId, budget });
  const spawn = { by, key, agent: request.agent, prompt: request.prompt, ...(budget !== undefined ? { budget } : {}) };
  return {
    applied: false,
    taskId,
    event: { type: 'TASK_SPAWNED', taskId, dependsOn, before, spawn },
    data: { by, agent: request.agent, dependsOn, before } as JsonValue,
  };
}

/**
 * The DAG's checks (ids, duplicates, missing dependencies, cycles), run
 * before anything is read or written, and the ids a swarm derives: each
 * task's run id, and the digest of the definition a resume must match.
 */
import { createHash } from 'node:crypto';
import { InvalidOptionsError } from '../errors/index.js';
import { SwarmError } from './errors.js';
import type { SwarmTaskSpec } from './types.js';

/** Swarm and task ids: no dot, so `<swarmId>.<taskId>` names one task's run and no other. */
export const ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The run id of a task: the same in every process and every leg. */
export const taskRunId = (swarmId: string, taskId: string): string => `${swarmId}.${taskId}`;

export function checkSwarmId(swarmId: unknown): string {
  if (typeof swarmId !== 'string' || !ID.test(swarmId)) {
    throw new InvalidOptionsError(`session.swarmId must match ${ID} (letters, digits, _ and -, at most 64), got ${JSON.stringify(swarmId)}.`);
  }
  return swarmId;
}

/** Refuses a DAG with a bad id, a duplicate, a dependency on no task, or a cycle; returns the tasks in order. */
export function checkDag(swarmId: string, tasks: unknown, agents: Record<string, unknown>, maxTasks: number): SwarmTaskSpec[] {
  const invalid = (message: string, problem: SwarmError['problem'], taskId?: string) =>
    new SwarmError('swarm_dag_invalid', swarmId, `Swarm ${swarmId}: ${message}. Nothing was run.`, { ...(problem ? { problem } : {}), ...(taskId !== undefined ? { taskId } : {}) });
  if (!Array.isArray(tasks)) throw invalid('tasks must be an array of { id, agent, input, dependsOn? }', 'invalid-task');
  if (tasks.length > maxTasks) throw invalid(`${tasks.length} tasks is more than maxTasks (${maxTasks})`, 'too-many-tasks');
  const byId = new Map<string, SwarmTaskSpec>();
  for (const task of tasks as SwarmTaskSpec[]) {
    if (!task || typeof task !== 'object') throw invalid('every task must be an object', 'invalid-task');
    if (typeof task.id !== 'string' || !ID.test(task.id)) throw invalid(`task id ${JSON.stringify(task.id)} does not match ${ID}`, 'invalid-task');
    if (byId.has(task.id)) throw invalid(`two tasks have the id ${task.id}`, 'duplicate-task', task.id);
    if (typeof task.input !== 'string' && typeof task.input !== 'function') throw invalid(`task ${task.id} needs an input (a string or a function)`, 'invalid-task', task.id);
    if (task.agent === null || (typeof task.agent !== 'object' && typeof task.agent !== 'string')) throw invalid(`task ${task.id} needs an agent`, 'invalid-task', task.id);
    if (typeof task.agent === 'string' && !Object.hasOwn(agents, task.agent)) throw invalid(`task ${task.id} names agent ${task.agent}, which agents does not hold`, 'unknown-agent', task.id);
    const deps = task.dependsOn ?? [];
    if (!Array.isArray(deps) || !deps.every((d) => typeof d === 'string')) throw invalid(`task ${task.id}: dependsOn must be an array of task ids`, 'invalid-task', task.id);
    if (new Set(deps).size !== deps.length) throw invalid(`task ${task.id} lists a dependency twice`, 'invalid-task', task.id);
    byId.set(task.id, task);
  }
  for (const task of byId.values()) {
    for (const dep of task.dependsOn ?? []) if (!byId.has(dep)) throw invalid(`task ${task.id} depends on ${dep}, which is not a task of the swarm`, 'missing-dependency', task.id);
  }
  const cycle = findCycle([...byId.values()].map((t) => ({ id: t.id, dependsOn: t.dependsOn ?? [] })));
  if (cycle) throw invalid(`its tasks depend on each other in a cycle: ${cycle.join(' -> ')}`, 'cycle', cycle[0]);
  return [...byId.values()];
}

/** A cycle of dependencies (`a -> b -> a`), or null. */
export function findCycle(tasks: ReadonlyArray<{ id: string; dependsOn: readonly string[] }>): string[] | null {
  const deps = new Map(tasks.map((t) => [t.id, t.dependsOn]));
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | null => {
    if (state.get(id) === 'done') return null;
    if (state.get(id) === 'open') return [...path.slice(path.indexOf(id)), id];
    state.set(id, 'open');
    path.push(id);
    for (const dep of deps.get(id) ?? []) {
      const found = visit(dep);
      if (found) return found;
    }
    path.pop();
    state.set(id, 'done');
    return null;
  };
  for (const t of tasks) {
    const found = visit(t.id);
    if (found) return found;
  }
  return null;
}

/** What a resume must define as the first leg did: ids, dependencies, agents' names and string inputs. */
export function definitionDigest(tasks: readonly SwarmTaskSpec[]): string {
  const shape = tasks.map((t) => ({
    id: t.id,
    dependsOn: t.dependsOn ?? [],
    agent: typeof t.agent === 'string' ? t.agent : null,
    input: typeof t.input === 'string' ? t.input : 'function',
  }));
  return createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 32);
}

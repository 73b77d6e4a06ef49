/** The typed error of swarms (docs/swarm.md, docs/errors.md). */
import { CairnError } from '../errors/index.js';

export type SwarmErrorCode = 'swarm_dag_invalid' | 'swarm_spawn_invalid' | 'swarm_not_found' | 'swarm_definition_changed';

/**
 * What is wrong, for `swarm_dag_invalid` and `swarm_spawn_invalid`: a cycle, a
 * dependency on no task, two tasks with one id, a task that is not well
 * formed, more tasks than `maxTasks`, or an agent name `agents` does not hold.
 */
export type SwarmProblem = 'cycle' | 'missing-dependency' | 'duplicate-task' | 'invalid-task' | 'too-many-tasks' | 'unknown-agent';

/**
 * A swarm refused: its DAG (`swarm_dag_invalid`, nothing run or written), a
 * spawn (`swarm_spawn_invalid`: the spawning call gets it as its error, nothing
 * spawned), a resume of no stored swarm (`swarm_not_found`), or a resume whose
 * tasks differ from the stored definition (`swarm_definition_changed`).
 */
export class SwarmError extends CairnError {
  readonly swarmId: string;
  readonly problem?: SwarmProblem;
  readonly taskId?: string;
  constructor(code: SwarmErrorCode, swarmId: string, message: string, details: { problem?: SwarmProblem; taskId?: string } = {}) {
    super(code, message, { fault: 'user' });
    this.name = 'SwarmError';
    this.swarmId = swarmId;
    if (details.problem) this.problem = details.problem;
    if (details.taskId !== undefined) this.taskId = details.taskId;
  }
}

/**
 * Types of the swarm scheduler chart (machines/swarm.ts): the DAG's tasks as
 * plain data, the events the host sends, and the machine's input.
 */

/**
 * Where one task of the DAG stands. `pending`: a dependency has not completed.
 * `ready`: every dependency completed, waiting for a free slot. `running`: its
 * agent run is under way (or to be resumed). `suspended`: its run waits for an
 * approval or a client result. The rest are ends: `completed`, `failed`,
 * `stopped` (its run stopped: an unknown effect to reconcile, a cancel, a
 * limit), `skipped` (a dependency ended without completing) and
 * `budget-exhausted` (the swarm's budget ran out; a task not started then
 * never starts).
 */
export type SwarmTaskStatus =
  | 'pending' | 'ready' | 'running' | 'suspended'
  | 'completed' | 'failed' | 'stopped' | 'skipped' | 'budget-exhausted';

/** How a task's run came to rest, as the host reports it. */
export type SwarmTaskOutcome = 'completed' | 'failed' | 'stopped' | 'suspended' | 'budget-exhausted';

/** A spawned task's definition, kept in the chart's context: no caller defines it again on resume. */
export interface SwarmSpawnRecord {
  /** The task that spawned it. */
  by: string;
  /** The spawning call's identity (run id, model step, call id): a replayed spawn finds it and is applied once. */
  key: string;
  /** The name of the agent in the swarm's `agents`. */
  agent: string;
  prompt: string;
  budget?: { usd?: number; tokens?: number };
}

export interface SwarmTaskState {
  dependsOn: string[];
  status: SwarmTaskStatus;
  /** Present on spawned tasks. */
  spawn?: SwarmSpawnRecord;
  /** It was suspended and got its answers: its next start resumes its run. */
  resumed?: boolean;
}

export interface SwarmContext {
  /** How many tasks run at once. */
  concurrency: number;
  /** Task ids in the order they were defined or spawned: ready tasks start in this order. */
  order: string[];
  tasks: Record<string, SwarmTaskState>;
  /** The shared budget refused a task: nothing that has not started will. */
  budgetExhausted: boolean;
}

export interface SwarmInput {
  concurrency: number;
  tasks: Array<{ id: string; dependsOn: string[] }>;
}

export type SwarmEvent =
  | { type: 'START' }
  | { type: 'TASK_ENDED'; taskId: string; outcome: SwarmTaskOutcome }
  | { type: 'TASK_SPAWNED'; taskId: string; dependsOn: string[]; before: string[]; spawn: SwarmSpawnRecord }
  | { type: 'BUDGET_EXHAUSTED' }
  /** Suspended tasks go on (their resumes carry the answers they wait for). */
  | { type: 'RESUME'; taskIds: string[] };

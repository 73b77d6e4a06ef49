/** The checks of runAgentGroup's options, made before anything is read or written. */
import { InvalidOptionsError } from '../errors/index.js';
import type { ApprovalResponse } from '../agent/types.js';
import { createExecutionContext, isExecutionContext, type ExecutionContext } from '../policy/index.js';
import { checkDag, checkSwarmId, definitionDigest } from './dag.js';
import { agentOptionsOf } from './task-run.js';
import type { ResumeAgentGroupOptions, SwarmAgent, SwarmStore, SwarmTaskSpec } from './types.js';

export const DEFAULT_CONCURRENCY = 4;
export const DEFAULT_MAX_TASKS = 100;

export interface NormalizedGroup {
  store: SwarmStore;
  swarmId: string;
  scope: string;
  tasks: SwarmTaskSpec[];
  definition: string;
  execution: ExecutionContext;
  /** Each defined task's child context (its policy checked against the swarm's). */
  contexts: Map<string, ExecutionContext>;
  agents: Record<string, SwarmAgent>;
  concurrency: number;
  maxTasks: number;
  blackboard: boolean;
  now: () => number;
  abortSignal?: AbortSignal;
  approvalResponses: Record<string, ApprovalResponse[]>;
}

const STORE_METHODS = ['loadSwarm', 'saveSwarm', 'readJournal', 'writeBlackboard', 'readBlackboard'] as const;

function whole(label: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw new InvalidOptionsError(`${label} must be a whole number of at least 1, got ${JSON.stringify(value)}.`);
  return value;
}

export function normalizeGroup(options: ResumeAgentGroupOptions): NormalizedGroup {
  if (!options || typeof options !== 'object') throw new InvalidOptionsError('runAgentGroup takes an options object: { session, tasks, ... }.');
  const session = options.session;
  if (!session || typeof session !== 'object') throw new InvalidOptionsError('runAgentGroup needs session { store, swarmId, scope }.');
  const store = session.store;
  if (!store || typeof store !== 'object' || !store.runs || STORE_METHODS.some((m) => typeof store[m] !== 'function')) {
    throw new InvalidOptionsError(`session.store must be a swarm store (runs, ${STORE_METHODS.join(', ')}).`);
  }
  const swarmId = checkSwarmId(session.swarmId);
  if (typeof session.scope !== 'string' || session.scope === '') throw new InvalidOptionsError('session.scope must be a non-empty string.');
  const agents = options.agents ?? {};
  if (!agents || typeof agents !== 'object' || Array.isArray(agents)) throw new InvalidOptionsError('agents must be an object of agents by name.');
  for (const name of Object.keys(agents)) if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) throw new InvalidOptionsError(`agents: the name ${JSON.stringify(name)} must match /^[A-Za-z0-9_-]{1,64}$/.`);
  const concurrency = whole('concurrency', options.concurrency, DEFAULT_CONCURRENCY);
  const maxTasks = whole('maxTasks', options.maxTasks, DEFAULT_MAX_TASKS);
  const tasks = checkDag(swarmId, options.tasks, agents, maxTasks);
  if (options.execution !== undefined && !isExecutionContext(options.execution)) throw new InvalidOptionsError('execution must be a context from createExecutionContext.');
  const clock = options.clock;
  if (clock !== undefined && typeof clock?.now !== 'function') throw new InvalidOptionsError('clock must have now().');
  const now = clock ? () => clock.now() : () => Date.now();
  const execution = options.execution ?? createExecutionContext({ name: 'swarm', clock: { now } });
  // Every task's policy and agent are checked now: a widening or a bad agent refuses the swarm before anything runs.
  const contexts = new Map<string, ExecutionContext>();
  for (const task of tasks) {
    contexts.set(task.id, execution.child({ ...(task.policy ?? {}), name: task.id }));
    agentOptionsOf(typeof task.agent === 'string' ? agents[task.agent]! : task.agent, `${swarmId}.${task.id}`, task.id);
  }
  for (const [name, agent] of Object.entries(agents)) agentOptionsOf(agent, `${swarmId}.${name}`, `(agent ${name})`);
  const approvals = options.approvalResponses ?? {};
  if (!approvals || typeof approvals !== 'object' || Array.isArray(approvals)) throw new InvalidOptionsError('approvalResponses must be an object of verdict lists by task id.');
  if (options.blackboard !== undefined && typeof options.blackboard !== 'boolean') throw new InvalidOptionsError('blackboard must be a boolean.');
  return {
    store, swarmId, scope: session.scope, tasks, definition: definitionDigest(tasks), execution, contexts, agents,
    concurrency, maxTasks, blackboard: options.blackboard ?? true, now,
    ...(options.abortSignal ? { abortSignal: options.abortSignal } : {}),
    approvalResponses: approvals,
  };
}

/**
 * cairn/swarm: a DAG of agent tasks under one shared execution context, with
 * a blackboard, spawned tasks and a journal of durable control events. See
 * docs/swarm.md.
 */
export { runAgentGroup, resumeAgentGroup } from './scheduler.js';
export { createInMemorySwarmStore } from './in-memory.js';
export { SwarmError, type SwarmErrorCode, type SwarmProblem } from './errors.js';
export { taskRunId } from './dag.js';
export { SWARM_TOOL_NAMES } from './tools.js';
export { DEFAULT_CONCURRENCY, DEFAULT_MAX_TASKS } from './options.js';
export type * from './types.js';

/**
 * One task's leg: the engine options of its run (its agent's, the swarm's
 * tools, its session in the swarm store and its child of the swarm's
 * execution context), then runAgent for a run not stored yet, resumeAgent for
 * one that is. Either way the run id is the task's: a restart finds the run.
 */
import { resumeAgent, runAgent } from '../agent/run-agent.js';
import { Agent } from '../sdk/agent.js';
import { InvalidOptionsError } from '../errors/index.js';
import type { AgentOptions, AgentResult, AgentTool, ApprovalResponse } from '../agent/types.js';
import type { ExecutionContext } from '../policy/index.js';
import { blackboardTools, spawnTool, SWARM_TOOL_NAMES, type SpawnRequest } from './tools.js';
import type { SwarmAgent, SwarmStore } from './types.js';

export interface TaskLeg {
  store: SwarmStore;
  swarmId: string;
  scope: string;
  taskId: string;
  runId: string;
  agent: SwarmAgent;
  prompt: () => Promise<string>;
  execution: ExecutionContext;
  blackboard: boolean;
  agentNames: string[];
  spawn: (request: SpawnRequest, key: string) => Promise<{ taskId: string }>;
  approvalResponses?: ApprovalResponse[];
  abortSignal?: AbortSignal;
  now: () => number;
}

/** The agent's own options, with nothing a swarm sets itself. */
export function agentOptionsOf(agent: SwarmAgent, runId: string, taskId: string): AgentOptions<unknown> {
  const base = agent instanceof Agent ? agent.engineOptions(runId, {}) as AgentOptions<unknown> : { ...(agent as AgentOptions<unknown>) };
  for (const key of ['session', 'execution'] as const) {
    if ((base as unknown as Record<string, unknown>)[key] !== undefined) {
      throw new InvalidOptionsError(`Task ${taskId}: its agent sets ${key}; the swarm gives every task its own (see docs/swarm.md).`);
    }
  }
  for (const name of SWARM_TOOL_NAMES) {
    if (base.tools && Object.hasOwn(base.tools, name)) throw new InvalidOptionsError(`Task ${taskId}: its agent has a tool named ${name}, a name the swarm's tools take.`);
  }
  return base;
}

export async function runTaskLeg(leg: TaskLeg): Promise<AgentResult<unknown>> {
  const base = agentOptionsOf(leg.agent, leg.runId, leg.taskId);
  const tools: Record<string, AgentTool> = { ...(base.tools ?? {}) };
  if (leg.blackboard) Object.assign(tools, blackboardTools(leg.store, leg.swarmId, leg.taskId, leg.runId, leg.now));
  if (leg.agentNames.length > 0) tools.spawn_task = spawnTool(leg.agentNames, leg.spawn, leg.runId);
  const session = { store: leg.store.runs, runId: leg.runId, scope: leg.scope };
  const options = {
    ...base, tools, session, execution: leg.execution,
    ...(leg.abortSignal ? { abortSignal: leg.abortSignal } : {}),
  } as AgentOptions<unknown>;
  const stored = await leg.store.runs.load(leg.runId, { scope: leg.scope });
  // The run's record may be newer than what the swarm restored its ledger from (a write of a process that died landed
  // late): its reservations go into the shared ledger first, where its resume looks for them.
  if (stored?.ledger) await leg.execution.ledger.restore(stored.ledger.entries);
  if (stored) return resumeAgent({ ...options, session, ...(leg.approvalResponses ? { approvalResponses: leg.approvalResponses } : {}) });
  return runAgent({ ...options, prompt: await leg.prompt() });
}

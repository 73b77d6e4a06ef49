/**
 * The tools a swarm offers its tasks. They are ordinary tools: each call goes
 * through the run's one tool path (policy, approval, the `executing` receipt,
 * the result receipt). Each is `replay: 'idempotent'` because its effect is
 * keyed by the call's identity (run id, model step, call id): a call cut off
 * by a crash runs again on resume and finds its write, or its spawn, already
 * there, so the effect lands once.
 */
import type { AgentTool, JsonValue, ToolExecuteContext } from '../agent/types.js';
import type { SwarmStore } from './types.js';

/** The names the swarm's tools take; an agent of the swarm cannot have a tool of its own by these names. */
export const SWARM_TOOL_NAMES = ['blackboard_read', 'blackboard_write', 'spawn_task'] as const;

/** What a spawn_task call asks for (checked by the scheduler). */
export interface SpawnRequest {
  taskId: unknown;
  agent: unknown;
  prompt: unknown;
  dependsOn?: unknown;
  before?: unknown;
  budget?: unknown;
}

export const callKey = (runId: string, ctx: ToolExecuteContext) => `${runId}:${ctx.modelStep}:${ctx.toolCallId}`;

export function blackboardTools(store: SwarmStore, swarmId: string, taskId: string, runId: string, now: () => number): Record<string, AgentTool> {
  return {
    blackboard_read: {
      description: 'Reads the swarm\'s shared blackboard: the latest value of one key, or of every key.',
      parameters: { type: 'object', properties: { key: { type: 'string', description: 'The key to read; leave out to read every key.' } }, additionalProperties: false },
      replay: 'idempotent',
      async execute(args: { key?: string }) {
        const entries = await store.readBlackboard(swarmId, args.key);
        return { entries: entries.map((e) => ({ key: e.key, value: e.value, version: e.version, writtenBy: e.taskId })) };
      },
    },
    blackboard_write: {
      description: 'Writes a value under a key of the swarm\'s shared blackboard, for the other tasks to read.',
      parameters: {
        type: 'object',
        properties: { key: { type: 'string', minLength: 1, maxLength: 200 }, value: { description: 'Any JSON value.' } },
        required: ['key', 'value'],
        additionalProperties: false,
      },
      replay: 'idempotent',
      async execute(args: { key: string; value: JsonValue }, ctx: ToolExecuteContext) {
        const { entry } = await store.writeBlackboard(swarmId, { key: args.key, value: args.value ?? null, taskId, writeId: callKey(runId, ctx), at: now() });
        return { key: entry.key, version: entry.version };
      },
    },
  };
}

export function spawnTool(agentNames: string[], spawn: (request: SpawnRequest, key: string) => Promise<{ taskId: string }>, runId: string): AgentTool {
  return {
    description: 'Adds a task to the swarm: an agent of the swarm runs it with the prompt, after the tasks in dependsOn complete '
      + '(and before the tasks in before start). It runs under the swarm\'s policy and budget.',
    parameters: {
      type: 'object',
      properties: {
        taskId: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
        agent: { type: 'string', enum: agentNames },
        prompt: { type: 'string', minLength: 1 },
        dependsOn: { type: 'array', items: { type: 'string' } },
        before: { type: 'array', items: { type: 'string' } },
        budget: { type: 'object', properties: { usd: { type: 'number', minimum: 0 }, tokens: { type: 'integer', minimum: 0 } }, additionalProperties: false },
      },
      required: ['taskId', 'agent', 'prompt'],
      additionalProperties: false,
    },
    replay: 'idempotent',
    async execute(args: SpawnRequest, ctx: ToolExecuteContext) {
      const spawned = await spawn(args, callKey(runId, ctx));
      return { taskId: spawned.taskId, status: 'spawned' };
    },
  };
}

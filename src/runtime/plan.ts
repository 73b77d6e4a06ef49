/**
 * The run's plan: which stages of the tool path (and of the run's step) have
 * work to do under the options of the leg that hosts the run. The charts read
 * it through guards and pass a stage with no work by a transition instead of
 * invoking an actor that would do nothing (see CallPlan in machines/types.ts).
 *
 * It is decided here, from the options alone, and never by the machines. A
 * run starts with the plan of its first leg; every leg that restores a run
 * puts its own plan in the stored snapshot first (the run's and each open
 * call's), since a resume may bring other tools, guardrails or a store.
 */
import type { CallPlan, RunPlan } from '../../machines/index.js';
import type { NormalizedOptions } from '../agent/options.js';
import { isStandardSchema } from '../agent/schema.js';
import type { AgentTool } from '../agent/types.js';
import { refreshInvocationInputs } from '../agent/stored-call.js';
import { subAgentOf } from '../delegation/agent-tool-marker.js';
import { isEngineProjection } from '../mcp/projection.js';
import type { PersistedRun } from './record.js';

/** Validation, a projection or onToolResult runs on this tool's results: something between its raw receipt and its answer. */
export function projectsResult(opts: NormalizedOptions<unknown>, tool: AgentTool): boolean {
  return Boolean(tool.validateResult || isStandardSchema(tool.outputSchema) || tool.toModelOutput || opts.raw.onToolResult);
}

/** The tool's projection is the engine's own, and no validation or onToolResult runs: it is applied with the raw result. */
const projectsInline = (opts: NormalizedOptions<unknown>, tool: AgentTool): boolean =>
  isEngineProjection(tool.toModelOutput) && !tool.validateResult && !isStandardSchema(tool.outputSchema) && !opts.raw.onToolResult;

export function planOf(opts: NormalizedOptions<unknown>): RunPlan {
  const durable = Boolean(opts.raw.session);
  const execution = opts.execution;
  const calls: Record<string, CallPlan> = {};
  for (const [name, tool] of Object.entries(opts.tools)) {
    calls[name] = {
      guardrails: Boolean(opts.raw.onToolCall),
      argumentsInline: !opts.raw.onToolCall && !isStandardSchema(tool.parameters),
      approval: (tool.needsApproval !== undefined && tool.needsApproval !== false) || Boolean(execution?.requiresApproval(name)),
      admission: Boolean(opts.raw.abortSignal),
      executes: typeof tool.execute === 'function',
      idempotent: tool.replay === 'idempotent',
      projects: projectsResult(opts, tool),
      // Only Cairn's own MCP projection (pure and total) runs between the raw result and the answer.
      ...(projectsInline(opts, tool) ? { projectsInline: true } : {}),
      durable,
      ...(subAgentOf(tool) ? { delegates: true } : {}),
    };
  }
  // The batch is checked only when an execution policy restricts the tools.
  return { durable, policy: Boolean(execution && execution.policy.allowedTools !== null), calls };
}

/** Puts this leg's plan into a stored run before it is restored: the run's, and each open call's (with the inputs of its invocations in flight). */
export function replan(snapshot: PersistedRun, plan: RunPlan): void {
  snapshot.context.plan = plan;
  for (const child of Object.values(snapshot.children ?? {})) {
    const call = child?.snapshot;
    if (!call?.context || typeof call.context.toolName !== 'string' || typeof call.context.toolCallId !== 'string') continue;
    call.context.plan = plan.calls[call.context.toolName] ?? null;
    refreshInvocationInputs(call as Parameters<typeof refreshInvocationInputs>[0]);
  }
}

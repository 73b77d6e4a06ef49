/**
 * The run machine's `enterHandoff` actor (machines/run-handoff.ts): the
 * target's model, instructions and tools go into the leg's options, and the
 * run gets the target's tool names and their plan. It only changes the leg's
 * options, so a restore that starts it again changes nothing more.
 * (Internal to Cairn.)
 */
import type { HandoffOutput, Json } from '../../machines/index.js';
import type { AgentRunModels } from '../agent/types.js';
import { refOf } from '../runtime/model-call.js';
import { bindMcp } from '../mcp/leg.js';
import { legActor } from '../runtime/host-state.js';
import { planOf } from '../runtime/plan.js';
import { switchTo } from './handoff.js';

export const enterHandoff = legActor<HandoffOutput, { agent: string; models: Json | null }>(async (host, { input }) => {
  switchTo(host.opts, input.agent);
  // A target with MCP servers: they warn on this leg's stream and hold sampling to its policy.
  bindMcp(host.opts, host);
  // A run that keeps a fail-over record says it calls the target's model now (the failed models stay skipped).
  const models = input.models as AgentRunModels | null;
  return {
    toolNames: Object.keys(host.opts.tools),
    plan: planOf(host.opts),
    ...(models ? { models: { ...models, selected: refOf(host.opts.model) } as unknown as Json } : {}),
  };
});

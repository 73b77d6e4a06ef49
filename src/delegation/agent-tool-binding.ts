/**
 * The binding rule for sub-agents: a resume of a run whose sub-agent call is
 * open checks the child's binding too (its agent's model, tools, output and
 * limits, as the child's record stored them) before anything runs, so a
 * changed sub-agent is refused with BindingChangedError and nothing written,
 * as a changed root is, instead of reaching the parent's model as a failed
 * call. A child that has not saved yet has nothing to check. (Internal to Cairn.)
 */
import { BindingChangedError } from '../errors/index.js';
import { bindingChanges, describeBindingChanges, normalizeOptions, type NormalizedOptions } from '../agent/options.js';
import type { AgentOptions, AgentRunEnvelope } from '../agent/types.js';
import { subAgentOf } from './agent-tool-marker.js';
import { childRunIdOf } from './agent-tool-id.js';

type StoredCall = { status?: string; value?: unknown; context?: { modelStep?: number; toolCallId?: string; toolName?: string } };

export async function checkChildBindings(stored: AgentRunEnvelope, opts: NormalizedOptions<unknown>): Promise<void> {
  const session = opts.raw.session;
  if (!session) return;
  const snapshot = stored.snapshot as { context?: { batch?: string[] }; children?: Record<string, { snapshot?: StoredCall } | undefined> };
  for (const id of snapshot.context?.batch ?? []) {
    const call = snapshot.children?.[id]?.snapshot;
    const c = call?.context;
    if (call?.status !== 'active' || !c || typeof c.toolName !== 'string' || typeof c.toolCallId !== 'string' || typeof c.modelStep !== 'number') continue;
    const def = subAgentOf(opts.tools[c.toolName]);
    if (!def) continue;
    const runId = childRunIdOf(stored.runId, c.modelStep, c.toolCallId);
    const child = await session.store.load(runId, { scope: session.scope }).catch(() => undefined);
    if (!child) continue;
    const { memory: _memory, chat: _chat, lease: _lease, ...own } = def.agent.engineOptions(runId, {}) as AgentOptions<unknown>;
    const current = normalizeOptions({ ...own, session: { store: session.store, runId, scope: session.scope } }).binding;
    const changed = bindingChanges(child.binding, current);
    if (changed.length > 0) {
      throw new BindingChangedError(changed, describeBindingChanges(child.binding, current).map((d) => `sub-agent ${def.name} (run ${runId}): ${d}`));
    }
  }
}

/**
 * The `handoffs` key of a run's binding (docs/delegation.md#handoffs): who can
 * hand the run to whom, and each target's model (with its fallbacks),
 * instructions, tool schemas and MCP catalog. A resume whose handoff graph
 * differs fails with `Native agent binding changed across resume.` and says
 * which target changed how. Pure: it fingerprints what it is given.
 * (Internal to Cairn.)
 */
import { digestOf } from '../agent/digest.js';

/** One agent of the handoff graph, as the binding sees it. */
export interface HandoffBindingAgent {
  name: string;
  /** The agents it can hand the run to, in the order given. */
  handoffs: string[];
  /** `provider:modelId` of its model; null for the run's own agent (the binding's `model` has it). */
  model: string | null;
  fallback: string | null;
  instructions: string | null;
  /** Its tools' fingerprint (the binding's `tools` fingerprint of its own options). */
  tools: string | null;
  mcp: string | null;
  description: string | null;
}

const ASPECTS = ['model', 'instructions', 'tools', 'rest'] as const;

/** The key's fingerprint and its parts (`<agent>:<aspect>`), so a change can be told apart. */
export function handoffBindingOf(agents: readonly HandoffBindingAgent[]): { digest: string; parts: Record<string, string> } {
  const sorted = [...agents].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const parts: Record<string, string> = {};
  for (const agent of sorted) {
    parts[`${agent.name}:model`] = digestOf(agent.model);
    parts[`${agent.name}:instructions`] = digestOf(agent.instructions);
    parts[`${agent.name}:tools`] = digestOf(agent.tools);
    parts[`${agent.name}:rest`] = digestOf({ handoffs: agent.handoffs, fallback: agent.fallback, mcp: agent.mcp, description: agent.description });
  }
  return { digest: digestOf(sorted), parts };
}

const WORDS: Record<(typeof ASPECTS)[number], string> = {
  model: 'its model',
  instructions: 'its instructions',
  tools: 'its tool schemas',
  rest: 'its handoffs, description, fallback models or MCP catalog',
};

/** Which agents of the handoff graph changed, for people, without values. */
export function describeHandoffChanges(before: Record<string, string> | undefined, now: Record<string, string> | undefined): string[] {
  if (!before || !now) return ['the handoffs'];
  const names = (parts: Record<string, string>) => new Set(Object.keys(parts).map((key) => key.slice(0, key.lastIndexOf(':'))));
  const a = names(before);
  const b = names(now);
  const out: string[] = [];
  for (const name of [...new Set([...a, ...b])].sort()) {
    if (!a.has(name)) out.push(`handoff agent ${name} was added`);
    else if (!b.has(name)) out.push(`handoff agent ${name} was removed`);
    else for (const aspect of ASPECTS) if (before[`${name}:${aspect}`] !== now[`${name}:${aspect}`]) out.push(`handoff agent ${name}: ${WORDS[aspect]}`);
  }
  return out.length > 0 ? out : ['the handoffs'];
}
